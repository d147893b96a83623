// encode and decode of the three tokenizers on arbitrary bytes. Documented outcomes:
//   encode: Utf8Error for invalid UTF-8; otherwise ids in [0, size()) that decode back to the
//           text whenever the tokenizer covers it (always, with byte fallback).
//   decode: IndexError for an id outside [0, size()); otherwise valid UTF-8, whatever the ids.
// The input is used both ways: as text, and as a list of 16-bit signed ids.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "autograd/errors.h"
#include "data/tokenizer.h"
#include "data/utf8.h"
#include "fuzz/fuzz_support.h"

namespace {

using gf::data::Tokenizer;

// Tokenizers learned once, from text with spaces, punctuation, accents, CJK and an emoji, so
// that every kind of token (word, character, merge, byte) occurs.
std::vector<std::unique_ptr<Tokenizer>> make_tokenizers() {
  const std::vector<std::string> texts = {"the cat sat on the mat.",
                                          "Grüße, Köln! Das Haus ist groß.", "低い壁、高い山。",
                                          "lower lowest newer newest 🙂 tab\there", "a\r\nb  c"};
  std::vector<std::unique_ptr<Tokenizer>> tokenizers;
  tokenizers.push_back(
      std::make_unique<gf::data::WordTokenizer>(gf::data::WordTokenizer::learn(texts)));
  tokenizers.push_back(
      std::make_unique<gf::data::CharTokenizer>(gf::data::CharTokenizer::learn(texts)));
  tokenizers.push_back(std::make_unique<gf::data::CharTokenizer>(
      gf::data::CharTokenizer::learn(texts, {.byte_fallback = false})));
  tokenizers.push_back(std::make_unique<gf::data::BpeTokenizer>(
      gf::data::BpeTokenizer::learn(texts, {.vocab_size = 400})));
  tokenizers.push_back(std::make_unique<gf::data::BpeTokenizer>(
      gf::data::BpeTokenizer::learn(texts, {.vocab_size = 150, .byte_fallback = false})));
  return tokenizers;
}

void check_encode(const Tokenizer& tokenizer, std::string_view text) {
  std::vector<int32_t> ids;
  try {
    ids = tokenizer.encode(text);
  } catch (const gf::data::Utf8Error&) {
    gf::fuzz::require(!gf::data::is_valid_utf8(text), "encode refuses only invalid UTF-8");
    return;
  }
  gf::fuzz::require(gf::data::is_valid_utf8(text), "encode accepts only valid UTF-8");
  for (const int32_t id : ids)
    gf::fuzz::require(id >= 0 && id < tokenizer.size(), "encode gives ids in [0, size())");
  if (tokenizer.byte_fallback() || tokenizer.covers(text))
    gf::fuzz::require(tokenizer.decode(ids) == text, "decode(encode(text)) == text when covered");
}

void check_decode(const Tokenizer& tokenizer, const std::vector<int32_t>& ids) {
  std::string text;
  try {
    text = tokenizer.decode(ids);
  } catch (const gf::IndexError&) {
    bool out_of_range = false;
    for (const int32_t id : ids) out_of_range |= id < 0 || id >= tokenizer.size();
    gf::fuzz::require(out_of_range, "decode refuses only ids outside [0, size())");
    return;
  }
  gf::fuzz::require(gf::data::is_valid_utf8(text), "decode gives valid UTF-8");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<std::unique_ptr<Tokenizer>> tokenizers = make_tokenizers();
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<int32_t> ids;
  for (size_t i = 0; i + 1 < size; i += 2)
    ids.push_back(static_cast<int16_t>(static_cast<uint16_t>(data[i] | (data[i + 1] << 8))));
  for (const auto& tokenizer : tokenizers) {
    check_encode(*tokenizer, text);
    check_decode(*tokenizer, ids);
  }
  return 0;
}
