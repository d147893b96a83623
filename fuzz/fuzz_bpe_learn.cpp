// Learning the three tokenizers from arbitrary valid UTF-8 text, one training text per line,
// with a small vocabulary, then encoding what was learned from. Documented outcomes: learning
// succeeds, or BpeTokenizer::learn throws std::invalid_argument when vocab_size cannot hold
// the specials, bytes and characters; then every training text round-trips.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "data/tokenizer.h"
#include "data/utf8.h"
#include "data/vocab.h"
#include "fuzz/fuzz_support.h"

namespace {

// Learning costs about (merges x text length) and libFuzzer may grow inputs past its default
// 4 KiB cap when told -max_len; this bound keeps one run well under a second under the
// sanitizers whatever the flags, so that -timeout finds real hangs rather than big inputs.
constexpr size_t kMaxInputBytes = 4096;

void check_round_trip(const gf::data::Tokenizer& tokenizer, const std::vector<std::string>& texts,
                      const char* property) {
  for (const std::string& text : texts)
    gf::fuzz::require(tokenizer.decode(tokenizer.encode(text)) == text, property);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 || size > kMaxInputBytes) return 0;
  // The first byte sets how many merges BPE may add beyond the specials and the bytes.
  const int32_t extra = data[0] % 64;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (!gf::data::is_valid_utf8(text)) return 0;
  std::vector<std::string> texts;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t newline = std::min(text.find('\n', start), text.size());
    texts.emplace_back(text.substr(start, newline - start));
    start = newline + 1;
  }

  const int32_t vocab_size = gf::data::kNumSpecial + 256 + extra;
  try {
    const auto bpe = gf::data::BpeTokenizer::learn(texts, {.vocab_size = vocab_size});
    gf::fuzz::require(bpe.size() <= vocab_size, "BPE stays within vocab_size");
    check_round_trip(bpe, texts, "BPE round-trips its training text");
  } catch (const std::invalid_argument&) {
    // Allowed only when the characters alone overflow the vocabulary.
    gf::fuzz::require(gf::data::CharTokenizer::learn(texts).size() > vocab_size,
                      "BPE learning refuses only a vocab_size too small for the characters");
  }
  const auto characters = gf::data::CharTokenizer::learn(texts, {.byte_fallback = false});
  check_round_trip(characters, texts, "characters round-trip");
  const auto bpe_plain = gf::data::BpeTokenizer::learn(
      texts, {.vocab_size = characters.size() + extra, .byte_fallback = false});
  gf::fuzz::require(bpe_plain.size() <= characters.size() + extra, "BPE stays within vocab_size");
  check_round_trip(bpe_plain, texts, "BPE without byte fallback round-trips its training text");
  check_round_trip(gf::data::WordTokenizer::learn(texts), texts, "words round-trip");
  return 0;
}
