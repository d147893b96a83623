#include "data/bleu.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <stdexcept>
#include <unordered_map>
#include <utility>

#include "data/tokenizer.h"
#include "data/utf8.h"

namespace gf::data {

namespace {

constexpr int kMaxOrder = 4;     // BLEU's n-grams: 1..4
constexpr int kCharOrder = 6;    // chrF's character n-grams: 1..6
constexpr double kChrfBeta = 2;  // recall weighs beta times as much as precision

bool is_digit(char32_t c) {
  return c >= '0' && c <= '9';
}

// Whitespace as Python's str.split sees it, which is how sacreBLEU splits tokens and removes
// whitespace for chrF: Unicode's White_Space and the separators U+001C..U+001F.
bool is_split_space(char32_t c) {
  return char_class(c) == CharClass::kSpace || (c >= 0x1C && c <= 0x1F);
}

// The blocks whose characters zh sets apart, as sacreBLEU's tokenizer_zh lists them. That list
// compares each character with strings, and two of its bounds, written '\u20000' '\u2a6d6' and
// '\u2f800' '\u2fa1d' for the astral blocks CJK Extension B and the Compatibility Supplement,
// are read by Python as a 4-digit escape and one more character: U+2000 '0' to U+2A6D '6'. A
// single character c is >= "\u2000" "0" iff c > U+2000 (c == U+2000 is a prefix of it, so
// smaller), and <= "\u2a6d" "6" iff c <= U+2A6D (then c is a prefix, so smaller): the range is
// U+2001..U+2A6D (general punctuation such as '—' and '…', currency such as '€', arrows,
// mathematical operators), and likewise U+2F81..U+2FA1. Astral ideographs are not set apart.
constexpr std::array<std::pair<char32_t, char32_t>, 22> kZhRanges = {{
    {0x3400, 0x4DB5},  // CJK Unified Ideographs Extension A
    {0x4E00, 0x9FA5},  // CJK Unified Ideographs
    {0x9FA6, 0x9FBB},  // CJK Unified Ideographs, added in Unicode 4.1
    {0xF900, 0xFA2D},  // CJK Compatibility Ideographs
    {0xFA30, 0xFA6A},  // CJK Compatibility Ideographs, added in Unicode 3.2
    {0xFA70, 0xFAD9},  // CJK Compatibility Ideographs, added in Unicode 4.1
    {0x2001, 0x2A6D},  // meant: CJK Extension B, U+20000..U+2A6D6 (see above)
    {0x2F81, 0x2FA1},  // meant: CJK Compatibility Supplement, U+2F800..U+2FA1D
    {0xFF00, 0xFFEF},  // fullwidth ASCII and punctuation, halfwidth kana and Hangul
    {0x2E80, 0x2EFF},  // CJK Radicals Supplement
    {0x3000, 0x303F},  // CJK punctuation
    {0x31C0, 0x31EF},  // CJK strokes
    {0x2F00, 0x2FDF},  // Kangxi radicals
    {0x2FF0, 0x2FFF},  // ideographic description characters
    {0x3100, 0x312F},  // Bopomofo
    {0x31A0, 0x31BF},  // Bopomofo extended
    {0xFE10, 0xFE1F},  // vertical forms
    {0xFE30, 0xFE4F},  // CJK compatibility forms
    {0x2600, 0x26FF},  // miscellaneous symbols
    {0x2700, 0x27BF},  // dingbats
    {0x3200, 0x32FF},  // enclosed CJK letters and months
    {0x3300, 0x33FF},  // CJK compatibility
}};

bool set_apart_by_zh(char32_t c) {
  return std::any_of(kZhRanges.begin(), kZhRanges.end(),
                     [c](const auto& range) { return c >= range.first && c <= range.second; });
}

// The ideographs choose_bleu_tokenize counts (bleu.h).
bool is_cjk_ideograph(char32_t c) {
  return (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x4E00 && c <= 0x9FFF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x20000 && c <= 0x3FFFF);
}

// R1's marks: ASCII punctuation except ' , - . (sacreBLEU's class also holds the space, which
// changes nothing).
bool set_apart_by_r1(char32_t c) {
  return std::u32string_view(U"{|}~[\\]^_`!\"#$%&()*+:;<=>?@/").find(c) !=
         std::u32string_view::npos;
}

bool is_period_or_comma(char32_t c) {
  return c == '.' || c == ',';
}

// Every occurrence of `from` replaced by `to`, left to right, as Python's str.replace.
std::u32string replace_all(const std::u32string& text, std::u32string_view from,
                           std::u32string_view to) {
  std::u32string out;
  size_t start = 0;
  for (size_t at = text.find(from); at != std::u32string::npos; at = text.find(from, start)) {
    out.append(text, start, at - start);
    out += to;
    start = at + from.size();
  }
  out.append(text, start);
  return out;
}

// One of R2-R4: re.sub of the pattern "(first)(second)" over text. A match is two characters;
// it is replaced by "first second " or, with space_first, " first second", and the search
// goes on after it, so the second character of a match never starts another.
template <typename First, typename Second>
std::u32string substitute_pairs(const std::u32string& text, First first, Second second,
                                bool space_first) {
  std::u32string out;
  size_t i = 0;
  while (i < text.size()) {
    if (i + 1 < text.size() && first(text[i]) && second(text[i + 1])) {
      if (space_first) out += U' ';
      out += text[i];
      out += U' ';
      out += text[i + 1];
      if (!space_first) out += U' ';
      i += 2;
    } else {
      out += text[i++];
    }
  }
  return out;
}

// R1-R4 (bleu.h), then the split on whitespace.
std::vector<std::string> regexp_tokens(const std::u32string& text) {
  std::u32string spaced;
  for (const char32_t c : text) {
    if (set_apart_by_r1(c)) {
      spaced += U' ';
      spaced += c;
      spaced += U' ';
    } else {
      spaced += c;
    }
  }
  const auto not_digit = [](char32_t c) {
    return !is_digit(c);
  };
  const auto hyphen = [](char32_t c) {
    return c == '-';
  };
  spaced = substitute_pairs(spaced, not_digit, is_period_or_comma, false);  // R2
  spaced = substitute_pairs(spaced, is_period_or_comma, not_digit, true);   // R3
  spaced = substitute_pairs(spaced, is_digit, hyphen, false);               // R4

  std::vector<std::string> tokens;
  std::string token;
  for (const char32_t c : spaced) {
    if (is_split_space(c)) {
      if (!token.empty()) tokens.push_back(std::move(token));
      token.clear();
    } else {
      token += encode_utf8(c);
    }
  }
  if (!token.empty()) tokens.push_back(std::move(token));
  return tokens;
}

// 13a's first half (bleu.h): deletions, unescaping and the padding.
std::u32string prepare_13a(std::u32string text) {
  text = replace_all(text, U"<skipped>", U"");
  text = replace_all(text, U"-\n", U"");
  text = replace_all(text, U"\n", U" ");
  text = replace_all(text, U"&quot;", U"\"");
  text = replace_all(text, U"&amp;", U"&");
  text = replace_all(text, U"&lt;", U"<");
  text = replace_all(text, U"&gt;", U">");
  return U" " + text + U" ";
}

// zh's first half (bleu.h): the text stripped, each character of kZhRanges set apart.
std::u32string prepare_zh(const std::u32string& text) {
  size_t begin = 0, end = text.size();
  while (begin < end && is_split_space(text[begin])) ++begin;
  while (end > begin && is_split_space(text[end - 1])) --end;
  std::u32string out;
  for (size_t i = begin; i < end; ++i) {
    if (set_apart_by_zh(text[i])) {
      out += U' ';
      out += text[i];
      out += U' ';
    } else {
      out += text[i];
    }
  }
  return out;
}

// Token texts as small integers, so that an n-gram is a short vector of ints.
class Interner {
 public:
  explicit Interner(BleuTokenize tokenize) : tokenize_(tokenize) {}

  std::vector<int32_t> ids(const std::string& text) {
    std::vector<int32_t> out;
    for (std::string& token : bleu_tokenize(text, tokenize_)) {
      const auto [it, added] = ids_.emplace(std::move(token), static_cast<int32_t>(ids_.size()));
      out.push_back(it->second);
    }
    return out;
  }

 private:
  BleuTokenize tokenize_;
  std::unordered_map<std::string, int32_t> ids_;
};

// How often each n-gram (n = 1..max_order) of a sequence occurs.
template <typename Sequence>
std::map<Sequence, int64_t> count_ngrams(const Sequence& s, int max_order) {
  std::map<Sequence, int64_t> counts;
  for (size_t n = 1; n <= static_cast<size_t>(max_order); ++n)
    for (size_t i = 0; i + n <= s.size(); ++i)
      ++counts[Sequence(s.begin() + static_cast<std::ptrdiff_t>(i),
                        s.begin() + static_cast<std::ptrdiff_t>(i + n))];
  return counts;
}

void check_counts(const char* who, size_t hypotheses, size_t references) {
  if (hypotheses != references)
    throw std::invalid_argument(
        fmt::format("{}: {} hypotheses but {} references (one entry per sentence each)", who,
                    hypotheses, references));
}

}  // namespace

std::string_view bleu_tokenize_name(BleuTokenize tokenize) {
  return tokenize == BleuTokenize::kZh ? "zh" : "13a";
}

std::vector<std::string> bleu_tokenize(std::string_view text, BleuTokenize tokenize) {
  std::u32string code_points = decode_utf8(text);
  // sacreBLEU strips the end of each line before its tokenizer sees it (a trailing "-\n" then
  // keeps its '-').
  while (!code_points.empty() && is_split_space(code_points.back())) code_points.pop_back();
  return regexp_tokens(tokenize == BleuTokenize::kZh ? prepare_zh(code_points)
                                                     : prepare_13a(std::move(code_points)));
}

BleuTokenize choose_bleu_tokenize(std::span<const std::string> references) {
  int64_t ideographs = 0, characters = 0;
  for (const std::string& reference : references)
    for (const char32_t c : decode_utf8(reference)) {
      if (is_split_space(c)) continue;
      ++characters;
      ideographs += is_cjk_ideograph(c);
    }
  return characters > 0 && 10 * ideographs >= characters ? BleuTokenize::kZh : BleuTokenize::k13a;
}

std::string BleuScore::to_string() const {
  const double ratio = reference_length > 0 ? static_cast<double>(hypothesis_length) /
                                                  static_cast<double>(reference_length)
                                            : 0.0;
  return fmt::format(
      "BLEU = {:.2f} {:.1f}/{:.1f}/{:.1f}/{:.1f} (BP = {:.3f} ratio = {:.3f} "
      "hyp_len = {} ref_len = {}) tok:{}",
      score, precisions[0], precisions[1], precisions[2], precisions[3], brevity_penalty, ratio,
      hypothesis_length, reference_length, bleu_tokenize_name(tokenize));
}

BleuScore corpus_bleu(std::span<const std::string> hypotheses,
                      std::span<const std::vector<std::string>> references, BleuTokenize tokenize) {
  check_counts("corpus_bleu", hypotheses.size(), references.size());
  using Ngram = std::vector<int32_t>;
  BleuScore s;
  s.tokenize = tokenize;
  Interner interner(tokenize);
  for (size_t i = 0; i < hypotheses.size(); ++i) {
    if (references[i].empty())
      throw std::invalid_argument(fmt::format("corpus_bleu: sentence {} has no reference", i));
    const Ngram hyp = interner.ids(hypotheses[i]);
    const auto c = static_cast<int64_t>(hyp.size());

    // The clip for each n-gram: its largest count in any one reference (Papineni §2.1).
    std::map<Ngram, int64_t> clip;
    int64_t closest_length = -1;
    for (const std::string& reference : references[i]) {
      const Ngram ref = interner.ids(reference);
      for (const auto& [ngram, count] : count_ngrams(ref, kMaxOrder))
        clip[ngram] = std::max(clip[ngram], count);
      const auto r = static_cast<int64_t>(ref.size());
      const int64_t distance = std::abs(r - c), best = std::abs(closest_length - c);
      if (closest_length < 0 || distance < best || (distance == best && r < closest_length))
        closest_length = r;
    }

    for (const auto& [ngram, count] : count_ngrams(hyp, kMaxOrder)) {
      const size_t n = ngram.size() - 1;
      s.totals[n] += count;
      const auto it = clip.find(ngram);
      if (it != clip.end()) s.matches[n] += std::min(count, it->second);
    }
    s.hypothesis_length += c;
    s.reference_length += closest_length;
  }

  double log_sum = 0;
  bool any_zero = false;
  for (size_t n = 0; n < kMaxOrder; ++n) {
    if (s.matches[n] == 0) {
      any_zero = true;  // no smoothing: log 0 makes the geometric mean 0
      continue;
    }
    const double p = static_cast<double>(s.matches[n]) / static_cast<double>(s.totals[n]);
    s.precisions[n] = 100 * p;
    log_sum += std::log(p) / kMaxOrder;
  }
  const auto c = static_cast<double>(s.hypothesis_length);
  const auto r = static_cast<double>(s.reference_length);
  // Precision alone rewards saying little; the penalty makes up for the recall BLEU cannot
  // measure per sentence, over the whole corpus at once (Papineni §2.2.2).
  s.brevity_penalty = c == 0 ? 0.0 : c > r ? 1.0 : std::exp(1 - r / c);
  s.score = any_zero ? 0.0 : 100 * s.brevity_penalty * std::exp(log_sum);
  return s;
}

BleuScore corpus_bleu(std::span<const std::string> hypotheses,
                      std::span<const std::string> references, BleuTokenize tokenize) {
  check_counts("corpus_bleu", hypotheses.size(), references.size());
  std::vector<std::vector<std::string>> one_each;
  one_each.reserve(references.size());
  for (const std::string& reference : references) one_each.push_back({reference});
  return corpus_bleu(hypotheses, std::span<const std::vector<std::string>>(one_each), tokenize);
}

BleuScore sentence_bleu(const std::string& hypothesis, const std::string& reference,
                        BleuTokenize tokenize) {
  return corpus_bleu(std::span<const std::string>(&hypothesis, 1),
                     std::span<const std::string>(&reference, 1), tokenize);
}

ChrfScore corpus_chrf(std::span<const std::string> hypotheses,
                      std::span<const std::string> references) {
  check_counts("corpus_chrf", hypotheses.size(), references.size());
  // Per order n: hypothesis n-grams, reference n-grams, matches; summed over the corpus.
  std::array<int64_t, kCharOrder> hyp_total = {}, ref_total = {}, matched = {};
  const auto without_spaces = [](const std::string& text) {
    std::u32string kept;
    for (const char32_t c : decode_utf8(text))
      if (!is_split_space(c)) kept.push_back(c);
    return kept;
  };
  for (size_t i = 0; i < hypotheses.size(); ++i) {
    const auto hyp = count_ngrams(without_spaces(hypotheses[i]), kCharOrder);
    const auto ref = count_ngrams(without_spaces(references[i]), kCharOrder);
    for (const auto& [ngram, count] : hyp) {
      hyp_total[ngram.size() - 1] += count;
      const auto it = ref.find(ngram);
      if (it != ref.end()) matched[ngram.size() - 1] += std::min(count, it->second);
    }
    for (const auto& [ngram, count] : ref) ref_total[ngram.size() - 1] += count;
  }

  ChrfScore s;
  double precision = 0, recall = 0;
  for (size_t n = 0; n < kCharOrder; ++n) {
    if (hyp_total[n] == 0 || ref_total[n] == 0) continue;
    precision += static_cast<double>(matched[n]) / static_cast<double>(hyp_total[n]);
    recall += static_cast<double>(matched[n]) / static_cast<double>(ref_total[n]);
    ++s.effective_order;
  }
  if (s.effective_order == 0) return s;
  precision /= s.effective_order;
  recall /= s.effective_order;
  s.precision = 100 * precision;
  s.recall = 100 * recall;
  const double beta2 = kChrfBeta * kChrfBeta;
  if (precision + recall > 0)
    s.score = 100 * (1 + beta2) * precision * recall / (beta2 * precision + recall);
  return s;
}

}  // namespace gf::data
