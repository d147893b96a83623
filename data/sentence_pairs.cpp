#include "data/sentence_pairs.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <istream>
#include <string_view>

#include "autograd/errors.h"
#include "data/utf8.h"

namespace gf::data {

namespace {

std::string_view trim(std::string_view s) {
  const size_t first = s.find_first_not_of(' ');
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(' ') - first + 1);
}

// The pair on one line, or the problem that makes it not a pair (returned, not thrown, so that
// skip_malformed can collect it). An empty problem means the pair is good.
std::string parse_line(std::string_view line, SentencePair& pair) {
  try {
    check_utf8(line);
  } catch (const Utf8Error& e) {
    return fmt::format("invalid UTF-8 at byte {} of the line: {}", e.offset() + 1, e.problem());
  }
  const size_t tab = line.find('\t');
  if (tab == std::string_view::npos) return "expected SOURCE<TAB>TARGET, found no tab";
  const size_t second_tab = line.find('\t', tab + 1);
  const size_t target_end = second_tab == std::string_view::npos ? line.size() : second_tab;
  pair.source = trim(line.substr(0, tab));
  pair.target = trim(line.substr(tab + 1, target_end - tab - 1));
  pair.extra.clear();
  if (second_tab != std::string_view::npos) {
    const std::string_view rest = line.substr(second_tab + 1);
    pair.extra = trim(rest.substr(0, std::min(rest.find('\t'), rest.size())));
  }
  if (pair.source.empty() && pair.target.empty()) return "both the source and the target are empty";
  if (pair.source.empty()) return "the source is empty";
  if (pair.target.empty()) return "the target is empty";
  return {};
}

}  // namespace

SentencePairsFile read_sentence_pairs(std::istream& in, const std::string& name,
                                      const SentencePairsOptions& options) {
  SentencePairsFile file{.name = name, .pairs = {}, .lines = {}, .skipped = {}};
  std::string line;
  SentencePair pair;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (number == 1 && line.starts_with("\xEF\xBB\xBF")) line.erase(0, 3);  // byte-order mark
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    const std::string problem = parse_line(line, pair);
    if (problem.empty()) {
      file.pairs.push_back(std::move(pair));
      file.lines.push_back(number);
      continue;
    }
    std::string message = fmt::format("{}:{}: {}", name, number, problem);
    if (!options.skip_malformed) throw FormatError(message);
    file.skipped.push_back(std::move(message));
  }
  if (in.bad()) throw FormatError(fmt::format("{}: read error", name));
  if (file.pairs.empty())
    throw FormatError(
        file.skipped.empty()
            ? fmt::format("{}: no sentence pairs (expected lines of SOURCE<TAB>TARGET)", name)
            : fmt::format(
                  "{}: no sentence pairs; all {} non-blank lines are malformed, the first: {}",
                  name, file.skipped.size(), file.skipped.front()));
  return file;
}

SentencePairsFile read_sentence_pairs(const std::filesystem::path& path,
                                      const SentencePairsOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw FormatError(fmt::format("cannot open {}: {}", path.string(), std::strerror(errno)));
  return read_sentence_pairs(in, path.string(), options);
}

}  // namespace gf::data
