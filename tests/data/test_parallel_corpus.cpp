#include <algorithm>
#include <catch2/catch.hpp>
#include <sstream>

#include "autograd/errors.h"
#include "data/parallel_corpus.h"

using namespace gf::data;
using Catch::Matchers::Contains;

namespace {

CharTokenizer abc_tokenizer() {
  const std::vector<std::string> characters = {"a", "b", "c"};
  return CharTokenizer(characters, /*byte_fallback=*/false);
}

}  // namespace

TEST_CASE("a sentence pair is framed by bos and eos", "[data][parallel]") {
  const CharTokenizer tokenizer = abc_tokenizer();
  const int32_t a = *tokenizer.id("a"), b = *tokenizer.id("b"), c = *tokenizer.id("c");
  const Pair pair = encode_pair(tokenizer, "ab", "cab");
  CHECK(pair.src == std::vector<int32_t>{a, b, kEos});
  CHECK(pair.tgt == std::vector<int32_t>{kBos, c, a, b, kEos});
}

TEST_CASE("a pair that cannot be encoded is named by its line", "[data][parallel]") {
  std::istringstream in("ab\tba\n\nab\tb\xFF\n");
  const SentencePairsFile file = read_sentence_pairs(in, "x.tsv", {.skip_malformed = true});
  // The reader already refuses invalid UTF-8, so it never reaches the tokenizer ...
  REQUIRE(file.pairs.size() == 1);
  CHECK_THAT(file.skipped.at(0), Contains("x.tsv:3: invalid UTF-8"));
  // ... but pairs built by hand can still hold it.
  SentencePairsFile by_hand = file;
  by_hand.pairs.push_back({"ok", "\xC3", ""});
  by_hand.lines.push_back(9);
  REQUIRE_THROWS_AS(encode_pairs(abc_tokenizer(), by_hand), gf::FormatError);
  REQUIRE_THROWS_WITH(encode_pairs(abc_tokenizer(), by_hand), Contains("x.tsv:9: invalid UTF-8"));
}

TEST_CASE("batches by length hold every pair once, within the token budget", "[data][parallel]") {
  std::vector<Pair> pairs;
  gf::Rng lengths(3);
  for (int i = 0; i < 200; ++i) {
    const auto n = static_cast<size_t>(2 + lengths.below(30));
    pairs.push_back({std::vector<int32_t>(n, 5 + i % 7), std::vector<int32_t>(n / 2 + 2, 6)});
    pairs.back().src.back() = i;  // tells the pairs apart
  }
  gf::Rng rng(1);
  const auto batches = batches_by_length(pairs, 120, rng);
  std::vector<int32_t> seen;
  for (const auto& batch : batches) {
    REQUIRE(!batch.empty());
    size_t longest = 0;
    for (const Pair& p : batch) longest = std::max({longest, p.src.size(), p.tgt.size()});
    CHECK((batch.size() == 1 || batch.size() * longest <= 120));
    for (const Pair& p : batch) seen.push_back(p.src.back());
  }
  std::sort(seen.begin(), seen.end());
  std::vector<int32_t> all(200);
  for (int32_t i = 0; i < 200; ++i) all[static_cast<size_t>(i)] = i;
  CHECK(seen == all);
  // Sorting by length makes batches nearly uniform: little padding in all.
  int64_t real = 0, padded = 0;
  for (const auto& batch : batches) {
    size_t longest = 0;
    for (const Pair& p : batch) longest = std::max(longest, p.src.size());
    for (const Pair& p : batch) real += static_cast<int64_t>(p.src.size());
    padded += static_cast<int64_t>(batch.size() * longest);
  }
  CHECK(static_cast<double>(real) / static_cast<double>(padded) > 0.9);

  gf::Rng same(1), other(2);
  CHECK(batches_by_length(pairs, 120, same) == batches);
  CHECK(batches_by_length(pairs, 120, other) != batches);
  REQUIRE_THROWS_WITH(batches_by_length(pairs, 0, rng), Contains("max_tokens is 0"));
}
