#include "viz/atomic_file.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <system_error>

namespace gf::viz {

void write_file_atomically(std::string_view bytes, const std::string& path, std::string_view what) {
  namespace fs = std::filesystem;
  auto fail = [&](const std::string& reason) {
    return std::runtime_error(fmt::format("{}: cannot write {}: {}", what, path, reason));
  };
  if (path.empty()) throw fail("the path is empty");

  std::error_code ec;
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty()) {
    fs::create_directories(parent, ec);
    if (ec) throw fail(ec.message());
  }
  const std::string temporary = path + ".tmp";
  std::FILE* file = std::fopen(temporary.c_str(), "wb");
  if (file == nullptr) throw fail(std::generic_category().message(errno));
  const bool written = std::fwrite(bytes.data(), 1, bytes.size(), file) == bytes.size();
  int error = written ? 0 : (errno != 0 ? errno : EIO);
  if (std::fclose(file) != 0 && error == 0) error = errno;  // a full disk may show up only here
  if (error != 0) {
    fs::remove(temporary, ec);
    throw fail(std::generic_category().message(error));
  }
  fs::rename(temporary, path, ec);
  if (ec) {
    const std::string reason = ec.message();
    fs::remove(temporary, ec);
    throw fail(reason);
  }
}

}  // namespace gf::viz
