// read_sentence_pairs on arbitrary bytes, strict and with skip_malformed (the first byte
// chooses). The documented outcome is a FormatError or pairs whose sentences are non-empty,
// valid UTF-8 without tabs or newlines and trimmed of spaces, each with its line number.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "autograd/errors.h"
#include "data/sentence_pairs.h"
#include "data/utf8.h"
#include "fuzz/fuzz_support.h"

namespace {

bool clean_sentence(const std::string& s) {
  return !s.empty() && gf::data::is_valid_utf8(s) && s.find_first_of("\t\n") == std::string::npos &&
         s.front() != ' ' && s.back() != ' ';
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  gf::data::SentencePairsOptions options;
  options.skip_malformed = (data[0] & 1) != 0;
  std::istringstream in(std::string(reinterpret_cast<const char*>(data) + 1, size - 1));
  gf::data::SentencePairsFile file;
  try {
    file = gf::data::read_sentence_pairs(in, "fuzz.tsv", options);
  } catch (const gf::FormatError&) {
    return 0;
  }
  gf::fuzz::require(!file.pairs.empty(), "an accepted file has a pair");
  gf::fuzz::require(file.lines.size() == file.pairs.size(), "one line number per pair");
  gf::fuzz::require(options.skip_malformed || file.skipped.empty(), "strict reading skips nothing");
  int64_t previous_line = 0;
  for (size_t i = 0; i < file.pairs.size(); ++i) {
    gf::fuzz::require(file.lines[i] > previous_line, "line numbers increase");
    previous_line = file.lines[i];
    gf::fuzz::require(clean_sentence(file.pairs[i].source), "the source is a clean sentence");
    gf::fuzz::require(clean_sentence(file.pairs[i].target), "the target is a clean sentence");
  }
  return 0;
}
