#include "data/bleu.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <stdexcept>
#include <unordered_map>

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

// Token texts as small integers, so that an n-gram is a short vector of ints.
class Interner {
 public:
  std::vector<int32_t> ids(const std::string& text) {
    std::vector<int32_t> out;
    for (std::string& token : bleu_tokenize(text)) {
      const auto [it, added] = ids_.emplace(std::move(token), static_cast<int32_t>(ids_.size()));
      out.push_back(it->second);
    }
    return out;
  }

 private:
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

std::vector<std::string> bleu_tokenize(std::string_view text) {
  const std::vector<std::string_view> chars = split_utf8(text);
  std::u32string code_points;
  std::vector<CharClass> classes;
  for (const std::string_view c : chars) {
    code_points.push_back(decode_utf8(c)[0]);
    classes.push_back(char_class(code_points.back()));
  }
  const auto letter_at = [&](size_t i) {
    return i < chars.size() && classes[i] == CharClass::kLetter;
  };

  std::vector<std::string> tokens;
  std::string word;
  const auto end_word = [&] {
    if (!word.empty()) tokens.push_back(std::move(word));
    word.clear();
  };
  for (size_t i = 0; i < chars.size(); ++i) {
    const char32_t c = code_points[i];
    if (classes[i] == CharClass::kSpace) {
      end_word();
    } else if (classes[i] == CharClass::kLetter) {
      word += chars[i];
    } else {
      const bool inside_number = (c == '.' || c == ',') && i > 0 && i + 1 < chars.size() &&
                                 is_digit(code_points[i - 1]) && is_digit(code_points[i + 1]);
      const bool inside_word =
          (c == '\'' || c == '-') && i > 0 && letter_at(i - 1) && letter_at(i + 1);
      if (inside_number || inside_word) {
        word += chars[i];
      } else {
        end_word();
        tokens.emplace_back(chars[i]);
      }
    }
  }
  end_word();
  return tokens;
}

std::string BleuScore::to_string() const {
  const double ratio = reference_length > 0 ? static_cast<double>(hypothesis_length) /
                                                  static_cast<double>(reference_length)
                                            : 0.0;
  return fmt::format(
      "BLEU = {:.2f} {:.1f}/{:.1f}/{:.1f}/{:.1f} (BP = {:.3f} ratio = {:.3f} "
      "hyp_len = {} ref_len = {})",
      score, precisions[0], precisions[1], precisions[2], precisions[3], brevity_penalty, ratio,
      hypothesis_length, reference_length);
}

BleuScore corpus_bleu(std::span<const std::string> hypotheses,
                      std::span<const std::vector<std::string>> references) {
  check_counts("corpus_bleu", hypotheses.size(), references.size());
  using Ngram = std::vector<int32_t>;
  BleuScore s;
  Interner interner;
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
                      std::span<const std::string> references) {
  check_counts("corpus_bleu", hypotheses.size(), references.size());
  std::vector<std::vector<std::string>> one_each;
  one_each.reserve(references.size());
  for (const std::string& reference : references) one_each.push_back({reference});
  return corpus_bleu(hypotheses, std::span<const std::vector<std::string>>(one_each));
}

BleuScore sentence_bleu(const std::string& hypothesis, const std::string& reference) {
  return corpus_bleu(std::span<const std::string>(&hypothesis, 1),
                     std::span<const std::string>(&reference, 1));
}

ChrfScore corpus_chrf(std::span<const std::string> hypotheses,
                      std::span<const std::string> references) {
  check_counts("corpus_chrf", hypotheses.size(), references.size());
  // Per order n: hypothesis n-grams, reference n-grams, matches; summed over the corpus.
  std::array<int64_t, kCharOrder> hyp_total = {}, ref_total = {}, matched = {};
  const auto without_spaces = [](const std::string& text) {
    std::u32string kept;
    for (const char32_t c : decode_utf8(text))
      if (char_class(c) != CharClass::kSpace) kept.push_back(c);
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
