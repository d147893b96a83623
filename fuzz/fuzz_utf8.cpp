// The UTF-8 functions, split_words and the toy language's parse_alignment on arbitrary bytes.
// Documented outcomes: check_utf8 throws Utf8Error exactly when is_valid_utf8 is false, at an
// offset inside the text; valid text round-trips through decode_utf8/encode_utf8, split_utf8
// and split_words; repair_utf8 always gives valid UTF-8 and leaves valid text alone;
// parse_alignment throws std::invalid_argument or gives pairs that alignment_text writes back.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "data/tokenizer.h"
#include "data/toy_language.h"
#include "data/utf8.h"
#include "fuzz/fuzz_support.h"

namespace {

using gf::fuzz::require;

template <typename Pieces>
std::string joined(const Pieces& pieces) {
  std::string text;
  for (const auto& piece : pieces) text += piece;
  return text;
}

void check_utf8_functions(std::string_view text) {
  const bool valid = gf::data::is_valid_utf8(text);
  try {
    gf::data::check_utf8(text);
    require(valid, "check_utf8 accepts only what is_valid_utf8 accepts");
  } catch (const gf::data::Utf8Error& e) {
    require(!valid, "check_utf8 refuses only what is_valid_utf8 refuses");
    require(e.offset() < text.size(), "the error offset lies inside the text");
  }
  const std::string repaired = gf::data::repair_utf8(text);
  require(gf::data::is_valid_utf8(repaired), "repair_utf8 gives valid UTF-8");
  if (!valid) return;
  require(repaired == text, "repair_utf8 leaves valid text alone");
  const std::u32string code_points = gf::data::decode_utf8(text);
  require(gf::data::encode_utf8(code_points) == text, "decode_utf8/encode_utf8 round-trip");
  const auto characters = gf::data::split_utf8(text);
  require(characters.size() == code_points.size(), "split_utf8 gives one piece per code point");
  require(joined(characters) == text, "split_utf8 pieces join to the text");
  require(joined(gf::data::split_words(text)) == text, "split_words pieces join to the text");
}

void check_alignment(std::string_view text) {
  std::vector<std::pair<int32_t, int32_t>> alignment;
  try {
    alignment = gf::data::parse_alignment(text);
  } catch (const std::invalid_argument&) {
    return;
  }
  require(gf::data::parse_alignment(gf::data::alignment_text(alignment)) == alignment,
          "alignment_text/parse_alignment round-trip");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  check_utf8_functions(text);
  check_alignment(text);
  return 0;
}
