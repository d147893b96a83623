// read_pairs and read_id_lines on arbitrary bytes. The documented outcome is a FormatError or
// sequences of ids free of pad, with every target starting with bos and at least 2 long, and
// every source non-empty; check_ids then either accepts or throws FormatError.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "autograd/errors.h"
#include "data/pairs_file.h"
#include "data/vocab.h"
#include "fuzz/fuzz_support.h"

namespace {

void check_pairs(const std::string& text) {
  std::istringstream in(text);
  gf::data::PairsFile file;
  try {
    file = gf::data::read_pairs(in, "fuzz.tsv");
  } catch (const gf::FormatError&) {
    return;
  }
  gf::fuzz::require(!file.pairs.empty(), "an accepted pairs file has a pair");
  gf::fuzz::require(file.lines.size() == file.pairs.size(), "one line number per pair");
  for (const gf::data::Pair& pair : file.pairs) {
    gf::fuzz::require(!pair.src.empty(), "the source is not empty");
    gf::fuzz::require(pair.tgt.size() >= 2 && pair.tgt.front() == gf::data::kBos,
                      "the target is bos and at least one more id");
    for (const auto* side : {&pair.src, &pair.tgt})
      for (const int32_t id : *side) gf::fuzz::require(id > gf::data::kPad, "ids are above pad");
  }
  try {
    gf::data::check_ids(file, 16);
  } catch (const gf::FormatError&) {
  }
}

void check_id_lines(const std::string& text) {
  std::istringstream in(text);
  gf::data::IdLines lines;
  try {
    lines = gf::data::read_id_lines(in, "fuzz");
  } catch (const gf::FormatError&) {
    return;
  }
  gf::fuzz::require(lines.lines.size() == lines.sequences.size(), "one line number per sequence");
  for (const auto& sequence : lines.sequences) {
    gf::fuzz::require(!sequence.empty(), "blank lines are skipped");
    for (const int32_t id : sequence) gf::fuzz::require(id > gf::data::kPad, "ids are above pad");
  }
  try {
    gf::data::check_ids(lines, 16);
  } catch (const gf::FormatError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  check_pairs(text);
  check_id_lines(text);
  return 0;
}
