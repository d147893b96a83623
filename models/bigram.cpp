#include "models/bigram.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <stdexcept>

namespace gf {

BigramModel::BigramModel(std::span<const int32_t> stream, int64_t vocab_size, int32_t bos)
    : vocab_size_(vocab_size),
      bos_(bos),
      unigram_(static_cast<size_t>(vocab_size), 0),
      row_totals_(static_cast<size_t>(vocab_size), 0) {
  if (stream.size() < 2)
    throw std::invalid_argument(
        fmt::format("bigram: a stream of {} tokens has no pairs to count", stream.size()));
  for (size_t i = 0; i < stream.size(); ++i) {
    const int32_t id = stream[i];
    if (id < 0 || id >= vocab_size)
      throw std::invalid_argument(
          fmt::format("bigram: token id {} is outside the vocabulary [0, {})", id, vocab_size));
    ++unigram_[static_cast<size_t>(id)];
    if (i == 0) continue;
    ++pairs_[stream[i - 1] * vocab_size + id];
    ++row_totals_[static_cast<size_t>(stream[i - 1])];
  }
  // bos's row is the unigram (see the header).
  row_totals_[static_cast<size_t>(bos)] = static_cast<int64_t>(stream.size());
}

int64_t BigramModel::count(int32_t previous, int32_t next) const {
  if (previous == bos_) return unigram_[static_cast<size_t>(next)];
  const auto it = pairs_.find(previous * vocab_size_ + next);
  return it == pairs_.end() ? 0 : it->second;
}

double BigramModel::log_prob(int32_t previous, int32_t next, double k) const {
  const auto numerator = static_cast<double>(count(previous, next)) + k;
  const auto denominator = static_cast<double>(row_totals_[static_cast<size_t>(previous)]) +
                           k * static_cast<double>(vocab_size_);
  return std::log(numerator / denominator);
}

double BigramModel::perplexity(std::span<const data::Pair> windows, double k) const {
  if (!(k > 0.0)) throw std::invalid_argument(fmt::format("bigram: k must be positive, got {}", k));
  double nats = 0.0;
  int64_t tokens = 0;
  for (const data::Pair& window : windows)
    for (size_t i = 1; i < window.tgt.size(); ++i) {
      for (const int32_t id : {window.tgt[i - 1], window.tgt[i]})
        if (id < 0 || id >= vocab_size_)
          throw std::invalid_argument(fmt::format(
              "bigram: token id {} is outside the vocabulary [0, {})", id, vocab_size_));
      nats -= log_prob(window.tgt[i - 1], window.tgt[i], k);
      ++tokens;
    }
  if (tokens == 0) throw std::invalid_argument("bigram: no tokens to score");
  return std::exp(nats / static_cast<double>(tokens));
}

BigramModel::Best BigramModel::best_perplexity(std::span<const data::Pair> windows,
                                               std::span<const double> candidates) const {
  Best best{.k = 0.0, .perplexity = std::numeric_limits<double>::infinity()};
  for (const double k : candidates)
    if (const double p = perplexity(windows, k); p < best.perplexity) best = {k, p};
  return best;
}

}  // namespace gf
