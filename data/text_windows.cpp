#include "data/text_windows.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "autograd/errors.h"
#include "data/utf8.h"

namespace gf::data {

TextFile read_text_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw FormatError(fmt::format("cannot open {}: {}", path.string(), std::strerror(errno)));
  TextFile file{.name = path.string(), .text = std::string(std::istreambuf_iterator<char>(in), {})};
  if (file.text.empty()) throw FormatError(fmt::format("{}: the file is empty", file.name));
  try {
    check_utf8(file.text);
  } catch (const Utf8Error& e) {
    // Name the line, as an editor shows it, and the byte within it.
    const auto at = file.text.begin() + static_cast<std::ptrdiff_t>(e.offset());
    const auto line = std::count(file.text.begin(), at, '\n') + 1;
    const size_t line_start = file.text.rfind('\n', e.offset());
    const size_t column =
        line_start == std::string::npos ? e.offset() : e.offset() - line_start - 1;
    throw FormatError(fmt::format("{}:{}: invalid UTF-8 at byte {} of the line: {}", file.name,
                                  line, column + 1, e.problem()));
  }
  return file;
}

Pair window_at(std::span<const int32_t> stream, int64_t start, int64_t context, int32_t bos) {
  const auto size = static_cast<int64_t>(stream.size());
  if (context < 1) throw std::invalid_argument(fmt::format("window_at: context {} < 1", context));
  if (start < 0 || start >= size)
    throw std::invalid_argument(
        fmt::format("window_at: start {} is outside the stream of {} tokens", start, size));
  const int64_t end = std::min(size, start + context);
  Pair pair;
  pair.tgt.reserve(static_cast<size_t>(end - start + 1));
  pair.tgt.push_back(bos);
  pair.tgt.insert(pair.tgt.end(), stream.begin() + static_cast<std::ptrdiff_t>(start),
                  stream.begin() + static_cast<std::ptrdiff_t>(end));
  return pair;
}

std::vector<Pair> consecutive_windows(std::span<const int32_t> stream, int64_t context,
                                      int32_t bos) {
  std::vector<Pair> windows;
  for (int64_t start = 0; start < static_cast<int64_t>(stream.size()); start += context)
    windows.push_back(window_at(stream, start, context, bos));
  return windows;
}

std::vector<Pair> spread_windows(std::span<const int32_t> stream, int64_t context, int64_t count,
                                 int32_t bos) {
  std::vector<Pair> all = consecutive_windows(stream, context, bos);
  const auto total = static_cast<int64_t>(all.size());
  if (count >= total) return all;
  std::vector<Pair> spread;
  for (int64_t i = 0; i < count; ++i)
    spread.push_back(std::move(all[static_cast<size_t>(i * total / count)]));
  return spread;
}

}  // namespace gf::data
