// The baseline a language model must beat: a bigram model, which predicts each token from the
// one before it alone, by counting. P(b | a) = (count(a b) + k) / (count(a) + k V), add-k
// smoothing (Jurafsky and Martin, "Speech and Language Processing", §3.5), so that a pair never
// seen keeps some probability. A Transformer reads the whole window before a token; the gap
// between the two perplexities is what that context is worth.
//
// Windows (data/text_windows.h) start with bos, so the first token of a window is predicted
// from bos. Before bos the text has no token at all, so that row holds every token's count
// (the unigram): a window may start anywhere.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "data/pair.h"

namespace gf {

class BigramModel {
 public:
  // Counts the adjacent pairs of stream (token ids in [0, vocab_size)). Throws
  // std::invalid_argument for an id outside the vocabulary or a stream of fewer than 2 tokens.
  BigramModel(std::span<const int32_t> stream, int64_t vocab_size, int32_t bos);

  // log P(next | previous) in nats, add-k smoothed (k > 0).
  double log_prob(int32_t previous, int32_t next, double k) const;

  // exp of the mean of -log P over every token of the windows, each given the token before it
  // (its window's bos for the first): the same tokens a model's perplexity counts
  // (training/evaluate.h).
  double perplexity(std::span<const data::Pair> windows, double k) const;

  // The k of candidates that gives the lowest perplexity on windows, and that perplexity: the
  // baseline at its best on the text it is compared on.
  struct Best {
    double k = 0.0, perplexity = 0.0;
  };
  Best best_perplexity(std::span<const data::Pair> windows,
                       std::span<const double> candidates = kCandidates) const;
  static constexpr double kCandidates[] = {1.0, 0.3, 0.1, 0.03, 0.01, 0.003, 0.001};

 private:
  int64_t count(int32_t previous, int32_t next) const;

  int64_t vocab_size_;
  int32_t bos_;
  std::unordered_map<int64_t, int64_t> pairs_;  // previous * vocab_size + next -> count
  std::vector<int64_t> unigram_;                // every token's count (bos's row)
  std::vector<int64_t> row_totals_;             // count(previous) as a pair's first token
};

}  // namespace gf
