// Corpus BLEU and chrF (data/bleu.h) on examples small enough to count by hand.
#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "data/bleu.h"
#include "data/utf8.h"

using namespace gf::data;
using Catch::Matchers::Contains;
using Strings = std::vector<std::string>;

TEST_CASE("bleu_tokenize is sacreBLEU's 13a unless told otherwise", "[data][bleu]") {
  // tests/data/test_bleu_tokenize.cpp goes through 13a's and zh's rules case by case.
  CHECK(bleu_tokenize("Hello, world! It's 3.14 and 10,000 well-known «quotes» 3-4 北京.") ==
        Strings{"Hello", ",", "world", "!", "It's", "3.14", "and", "10,000", "well-known",
                "«quotes»", "3", "-", "4", "北京", "."});
  CHECK(bleu_tokenize("北京.", BleuTokenize::kZh) == Strings{"北", "京", "."});
  CHECK(bleu_tokenize("").empty());
  REQUIRE_THROWS_AS(bleu_tokenize("a\x80"), Utf8Error);
}

TEST_CASE("BLEU: modified precision clips counts to the reference (Papineni et al. section 2.1)",
          "[data][bleu]") {
  // The paper's example, lowercased: "the" occurs 7 times in the candidate but at most twice
  // in a reference, so p_1 = 2/7, not 7/7. No bigram matches, so BLEU is 0 (no smoothing).
  const Strings hyp = {"the the the the the the the"};
  const std::vector<Strings> refs = {{"the cat is on the mat", "there is a cat on the mat"}};
  const BleuScore s = corpus_bleu(hyp, refs);
  CHECK(s.matches[0] == 2);
  CHECK(s.totals[0] == 7);
  CHECK(s.precisions[0] == Approx(100.0 * 2 / 7));
  CHECK(s.matches[1] == 0);
  CHECK(s.totals[1] == 6);
  CHECK(s.score == 0);
}

TEST_CASE("BLEU: the paper's first example, with three references", "[data][bleu]") {
  // Papineni et al. §2.1, Example 1, Candidate 1. The paper counts 17 of 18 words in some
  // reference (all but "obeys"); our tokenisation adds the final "." (in every reference),
  // so p_1 = 18/19. Case matters: "party" matches the third reference's "party".
  // Bigrams of the candidate found in some reference, by hand:
  //   It is, is a, a guide, guide to, to action, ensures that, that the, the military (ref 1)
  //   of the, the party, party . (ref 3)                          -> 11 of 18, p_2 = 11/18
  const Strings hyp = {
      "It is a guide to action which ensures that the military always obeys the commands of "
      "the party."};
  const std::vector<Strings> refs = {
      {"It is a guide to action that ensures that the military will forever heed Party "
       "commands.",
       "It is the guiding principle which guarantees the military forces always being under "
       "the command of the Party.",
       "It is the practical guide for the army always to heed the directions of the party."}};
  const BleuScore s = corpus_bleu(hyp, refs);
  CHECK(s.matches[0] == 18);
  CHECK(s.totals[0] == 19);
  CHECK(s.matches[1] == 11);
  CHECK(s.totals[1] == 18);
  CHECK(s.hypothesis_length == 19);
  // The references have 17, 19 and 17 tokens (with "."); the closest to c = 19 is the
  // second, so r = 19 and there is no brevity penalty.
  CHECK(s.reference_length == 19);
  CHECK(s.brevity_penalty == 1.0);
}

TEST_CASE("BLEU: hand-computed scores, and swapping hypothesis and reference matters",
          "[data][bleu]") {
  const std::string six = "the cat sat on the mat";  // 6 tokens
  SECTION("perfect match is 100") {
    const BleuScore s = sentence_bleu(six, six);
    CHECK(s.score == Approx(100.0));
    CHECK(s.brevity_penalty == 1.0);
  }
  SECTION("same length, one word different") {
    // hyp "the cat sat on the mat", ref "the cat sat on a mat":
    //   p_1 = 5/6 (the x2 clipped to 1), p_2 = 3/5, p_3 = 2/4, p_4 = 1/3, BP = 1 (c = r = 6)
    //   BLEU = 100 * (5/6 * 3/5 * 2/4 * 1/3)^(1/4) = 100 * (1/12)^(1/4) = 53.7285
    const BleuScore s = sentence_bleu(six, "the cat sat on a mat");
    CHECK(s.matches == std::array<int64_t, 4>{5, 3, 2, 1});
    CHECK(s.totals == std::array<int64_t, 4>{6, 5, 4, 3});
    CHECK(s.score == Approx(53.7285).epsilon(1e-5));
    CHECK(s.to_string() ==
          "BLEU = 53.73 83.3/60.0/50.0/33.3 (BP = 1.000 ratio = 1.000 hyp_len = 6 ref_len = 6) "
          "tok:13a");
  }
  SECTION("a short hypothesis pays the brevity penalty; swapped, it does not") {
    const std::string seven = "the cat sat on the red mat";  // 7 tokens
    // hyp six, ref seven: p = 6/6, 4/5, 3/4, 2/3, product 2/5; c = 6 < r = 7:
    //   BP = exp(1 - 7/6) = 0.846482, BLEU = 100 * 0.846482 * (2/5)^(1/4) = 67.3182
    const BleuScore short_hyp = sentence_bleu(six, seven);
    CHECK(short_hyp.brevity_penalty == Approx(0.846482).epsilon(1e-6));
    CHECK(short_hyp.score == Approx(67.3182).epsilon(1e-5));
    // Swapped, hyp seven, ref six: p = 6/7, 4/6, 3/5, 2/4, product 6/35; c = 7 > r = 6, BP = 1:
    //   BLEU = 100 * (6/35)^(1/4) = 64.3459
    const BleuScore swapped = sentence_bleu(seven, six);
    CHECK(swapped.brevity_penalty == 1.0);
    CHECK(swapped.score == Approx(64.3459).epsilon(1e-5));
  }
  SECTION("an empty hypothesis scores 0, not NaN") {
    const BleuScore s = sentence_bleu("", six);
    CHECK(s.score == 0);
    CHECK(s.brevity_penalty == 0);
    CHECK(s.hypothesis_length == 0);
    CHECK(corpus_bleu(Strings{}, Strings{}).score == 0);
  }
}

TEST_CASE("BLEU is computed over the corpus, not averaged over sentences", "[data][bleu]") {
  // Sentence 1: a perfect 6-token match, sentence BLEU 100.
  // Sentence 2: "a dog" for "a dog barked": no 3-gram at all, so sentence BLEU 0.
  // Mean of the sentence scores: 50.
  // Corpus: matches/totals 8/8, 6/6, 4/4, 3/3, all precisions 1; c = 8, r = 9:
  //   BLEU = 100 * exp(1 - 9/8) = 88.2497
  const Strings hyps = {"the cat sat on the mat", "a dog"};
  const Strings refs = {"the cat sat on the mat", "a dog barked"};
  const double mean =
      (sentence_bleu(hyps[0], refs[0]).score + sentence_bleu(hyps[1], refs[1]).score) / 2;
  CHECK(mean == Approx(50.0));
  const BleuScore corpus = corpus_bleu(hyps, refs);
  CHECK(corpus.matches == std::array<int64_t, 4>{8, 6, 4, 3});
  CHECK(corpus.totals == std::array<int64_t, 4>{8, 6, 4, 3});
  CHECK(corpus.hypothesis_length == 8);
  CHECK(corpus.reference_length == 9);
  CHECK(corpus.score == Approx(88.2497).epsilon(1e-5));
}

TEST_CASE("BLEU with several references takes the closest length, the shorter on a tie",
          "[data][bleu]") {
  // c = 4; references of 3 and 5 tokens are both 1 away: r = 3, c > r, BP = 1.
  const BleuScore tie =
      corpus_bleu(Strings{"a b c d"}, std::vector<Strings>{{"a b c", "a b c d e"}});
  CHECK(tie.reference_length == 3);
  CHECK(tie.brevity_penalty == 1.0);
  // References of 2 and 6 tokens: 6 is 2 away, 2 is 2 away too: r = 2.
  CHECK(corpus_bleu(Strings{"a b c d"}, std::vector<Strings>{{"a b e f g h", "a b"}})
            .reference_length == 2);
  // References of 5 and 8 tokens: 5 is closer; c = 4 < r = 5, BP = exp(1 - 5/4).
  const BleuScore shorter =
      corpus_bleu(Strings{"a b c d"}, std::vector<Strings>{{"a b c d e f g h", "a b c d e"}});
  CHECK(shorter.reference_length == 5);
  CHECK(shorter.brevity_penalty == Approx(std::exp(1 - 5.0 / 4)));
}

TEST_CASE("BLEU refuses mismatched corpora", "[data][bleu]") {
  REQUIRE_THROWS_WITH(corpus_bleu(Strings{"a", "b"}, Strings{"a"}),
                      "corpus_bleu: 2 hypotheses but 1 references (one entry per sentence each)");
  REQUIRE_THROWS_WITH(corpus_bleu(Strings{"a"}, std::vector<Strings>{{}}),
                      Contains("sentence 0 has no reference"));
}

TEST_CASE("chrF: hand-computed scores (Popovic 2015, beta = 2, n = 1..6)", "[data][chrf]") {
  const auto chrf = [](const std::string& hyp, const std::string& ref) {
    return corpus_chrf(Strings{hyp}, Strings{ref});
  };
  CHECK(chrf("the cat", "the cat").score == Approx(100.0));
  CHECK(chrf("a b", "ab").score == Approx(100.0));  // whitespace is removed first
  // ... whitespace as Python's str.split sees it, U+001C too (as sacreBLEU removes it)
  CHECK(chrf("a\x1C"
             "b\u00A0c",
             "abc")
            .score == Approx(100.0));
  CHECK(chrf("", "ab").score == 0);
  // "ab" vs "ac": n = 1: 1 of 2 match (P = R = 1/2); n = 2: "ab" vs "ac" (P = R = 0);
  // n >= 3: no n-grams, left out. chrP = chrR = 1/4, F = 5 * (1/16) / (5/4) = 1/4.
  const ChrfScore ab_ac = chrf("ab", "ac");
  CHECK(ab_ac.effective_order == 2);
  CHECK(ab_ac.score == Approx(25.0));
  // "abc" vs "ab": n = 1: P = 2/3, R = 2/2; n = 2: {ab, bc} vs {ab}: P = 1/2, R = 1/1;
  // n = 3: the reference has none, left out. chrP = 7/12, chrR = 1,
  //   F = 5 * 7/12 / (4 * 7/12 + 1) = 35/40 = 87.5
  const ChrfScore longer = chrf("abc", "ab");
  CHECK(longer.precision == Approx(100.0 * 7 / 12));
  CHECK(longer.recall == Approx(100.0));
  CHECK(longer.score == Approx(87.5));
  // Swapped: P = 1 and 1, R = 2/3 and 1/2: chrP = 1, chrR = 7/12,
  //   F = 5 * 7/12 / (4 + 7/12) = 35/55 = 63.6364 (recall weighs more: beta = 2)
  CHECK(chrf("ab", "abc").score == Approx(100.0 * 35 / 55));
  // Characters are code points, not bytes: "Grüße" (5) vs "Grüsse" (6).
  //   n=1: 4 match (G r ü e): P 4/5, R 4/6    n=2: Gr rü: P 2/4, R 2/5
  //   n=3: Grü: P 1/3, R 1/4                    n=4, 5: no match: 0, 0     n=6: left out
  //   chrP = (4/5 + 1/2 + 1/3) / 5 = 0.326667, chrR = (2/3 + 2/5 + 1/4) / 5 = 0.263333
  //   F = 5 P R / (4 P + R) = 27.3956
  const ChrfScore umlaut = chrf("Grüße", "Grüsse");
  CHECK(umlaut.effective_order == 5);
  CHECK(umlaut.precision == Approx(32.6667).epsilon(1e-5));
  CHECK(umlaut.recall == Approx(26.3333).epsilon(1e-5));
  CHECK(umlaut.score == Approx(27.3956).epsilon(1e-5));
  // Chinese, one code point per character: "我爱你" vs "我爱他": n=1: 2 of 3; n=2: 1 of 2 (我爱);
  // n=3: 0 of 1. chrP = chrR = (2/3 + 1/2 + 0) / 3 = 7/18, so F = 7/18 = 38.8889.
  CHECK(chrf("我爱你", "我爱他").score == Approx(100.0 * 7 / 18));
}

TEST_CASE("chrF sums n-gram counts over the corpus before dividing", "[data][chrf]") {
  // Sentence scores: "ab"/"ab" 100 and "abc"/"ab" 87.5 (above), mean 93.75.
  // Corpus: n=1: hyp 2+3 = 5, ref 2+2 = 4, match 4: P 4/5, R 1
  //         n=2: hyp 1+2 = 3, ref 1+1 = 2, match 2: P 2/3, R 1
  //         n=3: the references have no 3-gram: left out
  //   chrP = (4/5 + 2/3) / 2 = 11/15, chrR = 1, F = 5 * 11/15 / (44/15 + 1) = 55/59 = 93.2203
  const ChrfScore s = corpus_chrf(Strings{"ab", "abc"}, Strings{"ab", "ab"});
  CHECK(s.score == Approx(100.0 * 55 / 59));
  CHECK(s.score != Approx(93.75));
  REQUIRE_THROWS_WITH(corpus_chrf(Strings{"a"}, Strings{}),
                      Contains("corpus_chrf: 1 hypotheses but 0 references"));
}
