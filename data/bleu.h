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
// an empty hypothesis.
//
// How this relates to sacreBLEU 2.x (Post 2018, "A Call for Clarity in Reporting BLEU Scores"):
// corpus_bleu with tokenizer T computes what sacreBLEU's corpus BLEU with `--tokenize T
// --smooth-method none` computes: the same tokens, counts and formula (scripts/score.py
// recomputes it independently, and a test compares the two). sacreBLEU's default,
// `--smooth-method exp`, gives the same number too unless some order n has no match anywhere
// in the corpus: sacreBLEU then counts that order's precision as 1 / (2^k * its n-gram total),
// k counting such orders from 1, where this BLEU is 0. sacreBLEU's sentence_bleu also smooths
// and uses only the orders the sentence has, so our sentence_bleu matches it only when all four
// orders match.
//
// Tokenisation (bleu_tokenize), sacreBLEU's two tokenizers exactly:
//   13a (mteval-v13a.pl, WMT's): "<skipped>" and "-\n" are deleted, "\n" becomes a space,
//       &quot; &amp; &lt; &gt; are unescaped (in that order), the text is padded with a space
//       on each side, then the rules R1-R4 below;
//   zh: leading and trailing whitespace is removed, every character in kZhRanges (data/bleu.cpp:
//       CJK ideographs, CJK and fullwidth punctuation, and a few symbol blocks) is set apart
//       with a space on each side, then R1-R4 (no unescaping, no padding).
//   R1  every ASCII punctuation mark except ' , - . is set apart: { | } ~ [ \ ] ^ _ ` ! " # $ %
//       & ( ) * + : ; < = > ? @ /
//   R2  a '.' or ',' after a character that is not an ASCII digit is set apart
//   R3  a '.' or ',' before a character that is not an ASCII digit is set apart
//   R4  a '-' after an ASCII digit is set apart
// each rule applied to the whole text in turn as Python's re.sub does it: left to right, a
// character consumed by one match never starting or ending another ("x..y" gives "x . .y"
// after R2, "3-4-5" gives "3 - 4 - 5"). Last, the text is split on whitespace (Python's
// str.split: Unicode's White_Space and U+001C..U+001F). So "3.14", "10,000", "don't" and
// "well-known" stay whole, "3-4" is three tokens, and non-ASCII punctuation stays attached
// under 13a ("«quotes»" and "5€" are one token each). Case is kept: "The" and "the" differ.
// sacreBLEU strips trailing whitespace before tokenizing, and so does bleu_tokenize.
// choose_bleu_tokenize picks zh for Chinese references (the rule is below), as sacreBLEU does
// for a Chinese target language.
//
// chrF (beta = 2, character n-grams n = 1..6, whitespace removed, as sacrebleu's default):
//   chrP = mean over n of (matching n-grams / hypothesis n-grams)
//   chrR = mean over n of (matching n-grams / reference n-grams)
//   chrF = 100 * (1 + beta^2) chrP chrR / (beta^2 chrP + chrR)
// with the counts summed over the corpus first, as for BLEU. An order n for which the
// hypotheses or the references have no n-gram at all (text shorter than n characters) is left
// out of both means. Characters are Unicode code points (a Chinese character is one), and the
// whitespace removed is what Python's str.split removes: this is sacreBLEU 2.x's default chrF
// (char order 6, word order 0, beta 2), with no tokenizer involved.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gf::data {

// sacreBLEU's tokenizers for BLEU, by their names there.
enum class BleuTokenize {
  k13a,  // "13a": words and ASCII punctuation, for languages written with spaces
  kZh,   // "zh": every Chinese character a token of its own
};
// "13a" or "zh".
std::string_view bleu_tokenize_name(BleuTokenize tokenize);

// The tokens BLEU counts n-grams of. Throws Utf8Error for invalid UTF-8.
std::vector<std::string> bleu_tokenize(std::string_view text,
                                       BleuTokenize tokenize = BleuTokenize::k13a);

// The tokenizer for references in this language: zh when at least a tenth of their
// non-whitespace characters, counted over all of them, are CJK ideographs (U+3400..U+4DBF,
// U+4E00..U+9FFF, U+F900..U+FAFF, U+20000..U+3FFFF), else 13a. Chinese text is mostly
// ideographs even with Latin names, numbers and code mixed in; text in a language written
// with spaces has next to none. Japanese, with its kanji, usually gets zh too, which splits it
// into characters (sacreBLEU's own choice for it, MeCab words, is not available here). Throws
// Utf8Error for invalid UTF-8.
BleuTokenize choose_bleu_tokenize(std::span<const std::string> references);

struct BleuScore {
  double score = 0;                            // 0..100
  std::array<double, 4> precisions = {};       // p_1 .. p_4 in percent, 0..100
  std::array<int64_t, 4> matches = {};         // clipped n-gram matches, n = 1..4
  std::array<int64_t, 4> totals = {};          // hypothesis n-grams, n = 1..4
  double brevity_penalty = 0;                  // BP, 0..1
  int64_t hypothesis_length = 0;               // c, in tokens
  int64_t reference_length = 0;                // r, in tokens
  BleuTokenize tokenize = BleuTokenize::k13a;  // what the tokens are

  // "BLEU = 53.73 83.3/60.0/50.0/33.3 (BP = 1.000 ratio = 1.000 hyp_len = 6 ref_len = 6)
  // tok:13a": the layout sacreBLEU prints, then the tokenizer as its signature names it.
  std::string to_string() const;
};

// Corpus BLEU of hypotheses[i] against references[i]. Hypotheses first, as in sacrebleu;
// swapping the two changes the score. Throws std::invalid_argument when the counts differ.
BleuScore corpus_bleu(std::span<const std::string> hypotheses,
                      std::span<const std::string> references,
                      BleuTokenize tokenize = BleuTokenize::k13a);
// The same with several references per sentence: references[i] holds those of hypotheses[i]
// (at least one each).
BleuScore corpus_bleu(std::span<const std::string> hypotheses,
                      std::span<const std::vector<std::string>> references,
                      BleuTokenize tokenize = BleuTokenize::k13a);

// BLEU of one sentence: corpus_bleu of a corpus of one. The mean of these over a test set is
// not corpus BLEU (and is 0 for every sentence shorter than 4 tokens); report corpus_bleu.
BleuScore sentence_bleu(const std::string& hypothesis, const std::string& reference,
                        BleuTokenize tokenize = BleuTokenize::k13a);

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
