#include <catch2/catch.hpp>

#include "data/tokenizer.h"
#include "data/word_alignment.h"

using namespace gf::data;
using Catch::Matchers::Contains;

TEST_CASE("tokens are grouped into the words they spell", "[data][alignment]") {
  // A word vocabulary holds each word with its leading space, as split_words cuts it.
  const std::vector<std::string> words = {"the", " cat", " sees", " .", " mir", "u"};
  const WordTokenizer tokenizer(words);
  const int32_t the = *tokenizer.id("the"), cat = *tokenizer.id(" cat"),
                sees = *tokenizer.id(" sees"), stop = *tokenizer.id(" ."),
                mir = *tokenizer.id(" mir"), u = *tokenizer.id("u");
  CHECK(word_of_tokens(tokenizer, std::vector<int32_t>{the, cat, sees, stop, kEos}) ==
        std::vector<int32_t>{0, 1, 2, 3, -1});
  // " mir" + "u" is one word in two pieces, as BPE cuts words.
  CHECK(word_of_tokens(tokenizer, std::vector<int32_t>{kBos, mir, u, cat, u}) ==
        std::vector<int32_t>{-1, 0, 0, 1, 1});
}

TEST_CASE("attention is pooled into words before taking the most attended", "[data][alignment]") {
  // Three target tokens (words 0, 0, 1) over four source tokens (words 0, 1, 1, <eos>).
  // Word 0's rows put 0.3 + 0.1 = 0.4 on source word 0 and 0.3 + 0.5 + 0.4 + 0.2 = 1.4 on
  // source word 1: source word 1 wins although no single token of it beats 0.3 in row 0.
  // Word 1's row puts 0.1 on word 0, 0.2 on word 1 and 0.7 on <eos>, which is not a word.
  const std::vector<float> attention = {0.3f, 0.3f, 0.2f, 0.2f,   // target word 0, token 1
                                        0.1f, 0.5f, 0.4f, 0.0f,   // target word 0, token 2
                                        0.1f, 0.1f, 0.1f, 0.7f};  // target word 1
  const std::vector<int32_t> target_words = {0, 0, 1}, source_words = {0, 1, 1, -1};
  CHECK(most_attended_words(attention, target_words, source_words) == std::vector<int32_t>{1, 1});

  AlignmentScore score;
  // Gold: target 0 <- source 1 (hit), target 1 <- source 0 (miss).
  const std::vector<std::pair<int32_t, int32_t>> gold = {{1, 0}, {0, 1}};
  add_alignment_score(attention, target_words, source_words, gold, score);
  CHECK(score.correct == 1);
  CHECK(score.total == 2);
  CHECK(score.accuracy() == 0.5);

  // Target words without a gold alignment (the particle "ka") are not counted.
  AlignmentScore partial;
  add_alignment_score(attention, target_words, source_words,
                      std::vector<std::pair<int32_t, int32_t>>{{1, 0}}, partial);
  CHECK(partial.correct == 1);
  CHECK(partial.total == 1);
}

TEST_CASE("alignment scoring refuses sizes that disagree", "[data][alignment]") {
  AlignmentScore score;
  const std::vector<float> attention(6, 0.5f);
  REQUIRE_THROWS_WITH(add_alignment_score(attention, std::vector<int32_t>{0, 1},
                                          std::vector<int32_t>{0, 1, 2, 3}, {}, score),
                      Contains("attention has 6 weights, but 2 target tokens x 4 source tokens"));
  REQUIRE_THROWS_WITH(
      add_alignment_score(attention, std::vector<int32_t>{0, 1}, std::vector<int32_t>{0, 1, 2},
                          std::vector<std::pair<int32_t, int32_t>>{{0, 5}}, score),
      Contains("names target word 5, but the target has 2 words"));
}
