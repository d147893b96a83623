// Scores for translations against references: corpus BLEU (Papineni et al. 2002, "BLEU: a
// Method for Automatic Evaluation of Machine Translation") and chrF (Popović 2015, "chrF:
// character n-gram F-score for automatic MT evaluation"). The paper reports BLEU
// (Vaswani et al. 2017, §6.1, Table 2).
//
// Both take detokenised text, the strings a decoder's output decodes to (Tokenizer::decode),
// never token ids, so that the score does not depend on the tokenizer, and never a model's
// teacher-forced predictions: at training time each position sees the true previous tokens,
// which a translation at test time does not have, so a score on them flatters the model.
// Decode (greedy or beam search), turn the ids into text, then score.
//
// BLEU, as the standard definition computes it:
//   p_n  = (sum over sentences of clipped n-gram matches) / (sum of hypothesis n-grams),
//          n = 1..4, where an n-gram's matches are clipped to its count in the reference
//          (with several references, to its largest count in any one of them)
//   BP   = 1 if c > r, else exp(1 - r / c); c = hypothesis tokens, r = reference tokens
//          (with several references, each sentence takes the one closest in length to the
//          hypothesis, the shorter on a tie), both summed over the corpus
//   BLEU = 100 * BP * exp(sum_n log(p_n) / 4)
// Counts are summed over the whole corpus before dividing, so corpus BLEU is not the mean of
// sentence BLEUs. There is no smoothing: an order with no match at all gives BLEU 0, as does
// an empty hypothesis. (sacrebleu smooths such an order by default, so the two differ only
// when some order has no match at all.)
//
// Tokenisation (bleu_tokenize), close to sacrebleu's default "13a" but not identical:
//   - whitespace separates tokens;
//   - a punctuation mark, a symbol or a CJK ideograph (CharClass::kAlone) is a token of its own,
//     except '.' and ',' with a digit on each side ("3.14", "10,000") and '\'' and '-' with a
//     letter or digit on each side ("don't", "well-known"), which stay inside the word;
//   - case is kept: "The" and "the" differ.
// 13a also splits ASCII punctuation off words, but leaves non-ASCII punctuation and CJK
// attached ("«quotes»" stays one token), never splits '\'' ("'quoted'" stays one token) and
// splits '-' only after a digit; text with such marks can score a little differently.
//
// chrF (beta = 2, character n-grams n = 1..6, whitespace removed, as sacrebleu's default):
//   chrP = mean over n of (matching n-grams / hypothesis n-grams)
//   chrR = mean over n of (matching n-grams / reference n-grams)
//   chrF = 100 * (1 + beta^2) chrP chrR / (beta^2 chrP + chrR)
// with the counts summed over the corpus first, as for BLEU. An order n for which the
// hypotheses or the references have no n-gram at all (text shorter than n characters) is left
// out of both means. Characters are Unicode code points.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gf::data {

// The tokens BLEU counts n-grams of. Throws Utf8Error for invalid UTF-8.
std::vector<std::string> bleu_tokenize(std::string_view text);

struct BleuScore {
  double score = 0;                       // 0..100
  std::array<double, 4> precisions = {};  // p_1 .. p_4 in percent, 0..100
  std::array<int64_t, 4> matches = {};    // clipped n-gram matches, n = 1..4
  std::array<int64_t, 4> totals = {};     // hypothesis n-grams, n = 1..4
  double brevity_penalty = 0;             // BP, 0..1
  int64_t hypothesis_length = 0;          // c, in tokens
  int64_t reference_length = 0;           // r, in tokens

  // "BLEU = 53.73 83.3/60.0/50.0/33.3 (BP = 1.000 ratio = 1.000 hyp_len = 6 ref_len = 6)",
  // the layout sacrebleu prints.
  std::string to_string() const;
};

// Corpus BLEU of hypotheses[i] against references[i]. Hypotheses first, as in sacrebleu;
// swapping the two changes the score. Throws std::invalid_argument when the counts differ.
BleuScore corpus_bleu(std::span<const std::string> hypotheses,
                      std::span<const std::string> references);
// The same with several references per sentence: references[i] holds those of hypotheses[i]
// (at least one each).
BleuScore corpus_bleu(std::span<const std::string> hypotheses,
                      std::span<const std::vector<std::string>> references);

// BLEU of one sentence: corpus_bleu of a corpus of one. The mean of these over a test set is
// not corpus BLEU (and is 0 for every sentence shorter than 4 tokens); report corpus_bleu.
BleuScore sentence_bleu(const std::string& hypothesis, const std::string& reference);

struct ChrfScore {
  double score = 0;         // chrF, 0..100
  double precision = 0;     // chrP in percent
  double recall = 0;        // chrR in percent
  int effective_order = 0;  // the orders n that entered the means, at most 6
};

// Corpus chrF of hypotheses[i] against references[i]. Throws std::invalid_argument when the
// counts differ, Utf8Error for invalid UTF-8.
ChrfScore corpus_chrf(std::span<const std::string> hypotheses,
                      std::span<const std::string> references);

}  // namespace gf::data
