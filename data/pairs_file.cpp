#include "data/pairs_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <istream>
#include <limits>
#include <stdexcept>
#include <string_view>
#include <system_error>

#include "autograd/errors.h"
#include "data/vocab.h"

namespace gf::data {

namespace {

// Where a line came from, for the "file:line: problem" prefix of every message.
struct LineRef {
  const std::string& source;
  int64_t line;

  [[noreturn]] void fail(const std::string& problem) const {
    throw FormatError(fmt::format("{}:{}: {}", source, line, problem));
  }
};

bool is_blank(std::string_view line) {
  return line.find_first_not_of(" \t\r") == std::string_view::npos;
}

// Which token of a line: "target, token 2", or "token 2" on a bare id line (field empty).
std::string token_name(const std::string& field, size_t k) {
  return field.empty() ? fmt::format("token {}", k) : fmt::format("{}, token {}", field, k);
}

// Token k (1-based) of `field`: one decimal id in [0, 2^31 - 1].
int32_t parse_id(std::string_view token, const LineRef& at, const std::string& field, size_t k) {
  int64_t value = 0;
  const char* end = token.data() + token.size();
  const auto [ptr, ec] = std::from_chars(token.data(), end, value);
  if (ptr != end || ec == std::errc::invalid_argument)
    at.fail(fmt::format("\"{}\" is not an integer id ({})", token, token_name(field, k)));
  const bool overflow = ec == std::errc::result_out_of_range;
  if (value < 0 || (overflow && token.front() == '-'))
    at.fail(fmt::format("id {} is negative ({})", token, token_name(field, k)));
  if (overflow || value > std::numeric_limits<int32_t>::max())
    at.fail(fmt::format("id {} is too large; ids are int32, at most {} ({})", token,
                        std::numeric_limits<int32_t>::max(), token_name(field, k)));
  return static_cast<int32_t>(value);
}

// Space-separated ids; runs of spaces and spaces at either end are fine. `field` names the
// sequence in messages ("source", "target"), or is empty for a bare id line.
std::vector<int32_t> parse_ids(std::string_view text, const LineRef& at, const std::string& field) {
  std::vector<int32_t> ids;
  size_t pos = 0;
  while ((pos = text.find_first_not_of(' ', pos)) != std::string_view::npos) {
    const size_t stop = std::min(text.find(' ', pos), text.size());
    ids.push_back(parse_id(text.substr(pos, stop - pos), at, field, ids.size() + 1));
    pos = stop;
  }
  // A pad inside a sequence would be masked and ignored by the loss, silently, as padding.
  const auto it = std::find(ids.begin(), ids.end(), kPad);
  if (it != ids.end())
    at.fail(fmt::format("{} contains the pad id {} at token {} (padding is added when batching)",
                        field.empty() ? "the sequence" : field, kPad, it - ids.begin() + 1));
  return ids;
}

// getline keeps the \r of a \r\n line ending; drop it.
void strip_cr(std::string& line) {
  if (!line.empty() && line.back() == '\r') line.pop_back();
}

// Throws for the first id of ids outside [0, vocab_size).
void check_range(std::span<const int32_t> ids, int32_t vocab_size, const std::string& source,
                 int64_t line, const std::string& field) {
  const auto it = std::find_if(ids.begin(), ids.end(),
                               [vocab_size](int32_t id) { return id < 0 || id >= vocab_size; });
  if (it != ids.end())
    throw FormatError(fmt::format("{}: id {} on line {} is out of range [0, {}) ({})", source, *it,
                                  line, vocab_size,
                                  token_name(field, static_cast<size_t>(it - ids.begin()) + 1)));
}

void check_vocab_size(int32_t vocab_size) {
  if (vocab_size < 1)
    throw std::invalid_argument(
        fmt::format("check_ids: vocab_size is {} but must be at least 1", vocab_size));
}

}  // namespace

PairsFile read_pairs(std::istream& in, const std::string& source) {
  PairsFile file{.source = source, .pairs = {}, .lines = {}};
  std::string line;
  int64_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    strip_cr(line);
    if (is_blank(line)) continue;
    const LineRef at{source, number};
    const auto tabs = std::count(line.begin(), line.end(), '\t');
    if (tabs == 0) at.fail("expected SRC<TAB>TGT, found no tab");
    if (tabs > 1) at.fail(fmt::format("expected SRC<TAB>TGT, found {} tabs", tabs));

    const size_t tab = line.find('\t');
    Pair pair{.src = parse_ids(std::string_view(line).substr(0, tab), at, "source"),
              .tgt = parse_ids(std::string_view(line).substr(tab + 1), at, "target")};
    if (pair.src.empty()) at.fail("source is empty");
    if (pair.tgt.empty() || pair.tgt.front() != kBos)
      at.fail(pair.tgt.empty() ? fmt::format("target is empty; it must start with bos ({})", kBos)
                               : fmt::format("target must start with bos ({}), found {}", kBos,
                                             pair.tgt.front()));
    // The model is scored on tgt[1:] given tgt[:-1], so there must be a token after bos.
    if (pair.tgt.size() < 2)
      at.fail("target has 1 token but needs at least 2 (bos and one token to predict)");
    file.pairs.push_back(std::move(pair));
    file.lines.push_back(number);
  }
  if (in.bad()) throw FormatError(fmt::format("{}: read error after line {}", source, number));
  if (file.pairs.empty())
    throw FormatError(fmt::format("{}: no pairs found ({})", source,
                                  number == 0 ? "the file is empty" : "every line is blank"));
  return file;
}

PairsFile read_pairs(const std::filesystem::path& path) {
  const std::string name = path.string();
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw FormatError(fmt::format("cannot open {}: {}", name, std::strerror(EISDIR)));
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw FormatError(fmt::format("cannot open {}: {}", name,
                                  errno != 0 ? std::strerror(errno) : "unknown error"));
  return read_pairs(in, name);
}

void write_pairs(const std::filesystem::path& path, std::span<const Pair> pairs) {
  const std::string name = path.string();
  errno = 0;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    throw std::runtime_error(fmt::format("cannot write {}: {}", name,
                                         errno != 0 ? std::strerror(errno) : "unknown error"));
  for (const Pair& p : pairs)
    out << fmt::format("{}\t{}\n", fmt::join(p.src, " "), fmt::join(p.tgt, " "));
  out.flush();
  if (!out) throw std::runtime_error(fmt::format("cannot write {}: the write failed", name));
}

IdLines read_id_lines(std::istream& in, const std::string& source) {
  IdLines file{.source = source, .sequences = {}, .lines = {}};
  std::string line;
  int64_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    strip_cr(line);
    if (is_blank(line)) continue;
    const LineRef at{source, number};
    if (line.find('\t') != std::string::npos) at.fail("expected space-separated ids, found a tab");
    file.sequences.push_back(parse_ids(line, at, ""));
    file.lines.push_back(number);
  }
  if (in.bad()) throw FormatError(fmt::format("{}: read error after line {}", source, number));
  return file;
}

void check_ids(const PairsFile& file, int32_t vocab_size) {
  check_vocab_size(vocab_size);
  assert(file.lines.size() == file.pairs.size());
  for (size_t i = 0; i < file.pairs.size(); ++i) {
    check_range(file.pairs[i].src, vocab_size, file.source, file.lines[i], "source");
    check_range(file.pairs[i].tgt, vocab_size, file.source, file.lines[i], "target");
  }
}

void check_ids(const IdLines& file, int32_t vocab_size) {
  check_vocab_size(vocab_size);
  assert(file.lines.size() == file.sequences.size());
  for (size_t i = 0; i < file.sequences.size(); ++i)
    check_range(file.sequences[i], vocab_size, file.source, file.lines[i], "");
}

}  // namespace gf::data
