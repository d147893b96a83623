// A fresh directory under the system's temporary directory for one test, removed with
// everything in it when the object goes. The process id and a counter keep apart the test
// processes that ctest runs in parallel and the directories of one process.
#pragma once

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

namespace gf::testing {

class TempDir {
 public:
  explicit TempDir(const std::string& tag = "test") {
    static std::atomic<int> counter{0};
    for (int attempt = 0; attempt < 1000; ++attempt) {
      path_ = std::filesystem::temp_directory_path() /
              ("gradformer_" + tag + "_" + std::to_string(::getpid()) + "_" +
               std::to_string(counter++));
      if (std::filesystem::create_directories(path_)) return;  // false: it existed already
    }
    throw std::runtime_error("TempDir: cannot create a fresh directory near " + path_.string());
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::vector<std::string> listing() const {  // the names of the entries, in directory order
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(path_))
      names.push_back(entry.path().filename().string());
    return names;
  }

 private:
  std::filesystem::path path_;
};

}  // namespace gf::testing
