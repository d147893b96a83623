#include "data/word_alignment.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <stdexcept>

namespace gf::data {

std::vector<int32_t> word_of_tokens(const Tokenizer& tokenizer, std::span<const int32_t> ids) {
  std::vector<int32_t> words;
  words.reserve(ids.size());
  int32_t word = -1;
  for (int32_t id : ids) {
    if (id < kNumSpecial) {
      words.push_back(-1);
      continue;
    }
    if (word < 0 || tokenizer.token(id).starts_with(' ')) ++word;
    words.push_back(word);
  }
  return words;
}

std::vector<int32_t> most_attended_words(std::span<const float> attention,
                                         std::span<const int32_t> word_of_target,
                                         std::span<const int32_t> word_of_source) {
  const size_t rows = word_of_target.size(), columns = word_of_source.size();
  if (attention.size() != rows * columns)
    throw std::invalid_argument(fmt::format(
        "alignment score: attention has {} weights, but {} target tokens x {} source tokens "
        "need {}",
        attention.size(), rows, columns, rows * columns));
  const auto count_words = [](std::span<const int32_t> word_of) {
    int32_t last = -1;
    for (int32_t w : word_of) last = std::max(last, w);
    return last + 1;
  };
  const int32_t target_words = count_words(word_of_target);
  const int32_t source_words = count_words(word_of_source);

  // pooled[w][v]: the mass that target word w's tokens put on source word v's tokens, summed
  // over the tokens of w (dividing by their number would not change the argmax).
  std::vector<double> pooled(static_cast<size_t>(target_words) * static_cast<size_t>(source_words),
                             0.0);
  for (size_t t = 0; t < rows; ++t) {
    const int32_t w = word_of_target[t];
    if (w < 0) continue;
    for (size_t s = 0; s < columns; ++s) {
      const int32_t v = word_of_source[s];
      if (v < 0) continue;
      pooled[static_cast<size_t>(w) * static_cast<size_t>(source_words) + static_cast<size_t>(v)] +=
          attention[t * columns + s];
    }
  }
  std::vector<int32_t> best(static_cast<size_t>(target_words), -1);
  for (int32_t w = 0; w < target_words; ++w) {
    double most = 0.0;
    for (int32_t v = 0; v < source_words; ++v) {
      const double mass = pooled[static_cast<size_t>(w) * static_cast<size_t>(source_words) +
                                 static_cast<size_t>(v)];
      if (mass > most) {
        most = mass;
        best[static_cast<size_t>(w)] = v;
      }
    }
  }
  return best;
}

void add_alignment_score(std::span<const float> attention, std::span<const int32_t> word_of_target,
                         std::span<const int32_t> word_of_source,
                         std::span<const std::pair<int32_t, int32_t>> gold, AlignmentScore& score) {
  const std::vector<int32_t> best = most_attended_words(attention, word_of_target, word_of_source);
  std::set<std::pair<int32_t, int32_t>> gold_set(gold.begin(), gold.end());
  std::set<int32_t> aligned_targets;
  for (const auto& [s, t] : gold) aligned_targets.insert(t);
  for (int32_t t : aligned_targets) {
    if (t >= static_cast<int32_t>(best.size()))
      throw std::invalid_argument(fmt::format(
          "alignment score: the gold alignment names target word {}, but the target has {} words",
          t, best.size()));
    ++score.total;
    if (gold_set.count({best[static_cast<size_t>(t)], t})) ++score.correct;
  }
}

}  // namespace gf::data
