// Decoding: turning a trained model and a source sentence into a target sentence, one token
// at a time, each step feeding the tokens so far back into the decoder (§3: "the model is
// auto-regressive, consuming the previously generated symbols as additional input").
//
// Both searches run the decoder incrementally: each attention layer keeps the keys and values
// of the positions it has already seen (a KVCache), so a step computes only the new position
// instead of the whole prefix. The look-ahead mask used in training makes the two agree: the
// output at position i never depended on positions after i.
#pragma once

#include <cstdint>
#include <vector>

#include "autograd/tensor.h"
#include "models/transformer.h"

namespace gf {

using TokenIds = std::vector<int32_t>;

struct GreedyOptions {
  int64_t max_len = 0;      // most tokens to generate; 0: source length + 50, within max_len
  bool use_cache = true;    // false recomputes the whole prefix each step (for comparison)
  bool stop_at_eos = true;  // false: eos is a token like any other (a task without an end)
};

// src [B, S] (padded with the model's pad id) -> per row, the generated ids without bos and
// eos: at each step the most probable next token. Runs in eval mode without a tape.
std::vector<TokenIds> greedy_decode(Transformer& model, const IndexTensor& src,
                                    const GreedyOptions& options = {});

struct BeamOptions {
  int64_t beam = 4;             // hypotheses kept per step (§6.1: 4)
  float length_penalty = 0.6f;  // alpha (§6.1: 0.6); 0 ranks by raw log-probability
  int64_t max_len = 0;          // as in GreedyOptions
  // Stop as soon as `beam` hypotheses have finished, the quick rule. It misses better
  // translations that finish later (lesson 09 measures it); by default the search goes on
  // while a hypothesis still alive scores better than the finished ones (see decode.cpp).
  bool early_stop = false;
};

// Beam search (§6.1): keeps the `beam` most probable prefixes; a hypothesis that emits eos is
// finished and scored log P(y | x) / lp(y) with lp(y) = ((5 + |y|) / 6)^alpha (Wu et al. 2016),
// so that longer outputs are not penalised merely for having more factors below 1. Stops
// when no hypothesis still alive scores better than the `beam` best finished ones (or, with
// early_stop, as soon as `beam` have finished), or at max_len; returns the best per row.
std::vector<TokenIds> beam_search(Transformer& model, const IndexTensor& src,
                                  const BeamOptions& options = {});

// The winning hypothesis with its score, for tests and lessons that want to see inside.
struct BeamResult {
  TokenIds tokens;        // without bos and eos
  double log_prob = 0.0;  // log P(tokens, then eos if finished | source)
  double score = 0.0;     // log_prob / lp(length), length counting eos if finished
  bool finished = false;  // emitted eos (false only when max_len cut every hypothesis)
};
std::vector<BeamResult> beam_search_scored(Transformer& model, const IndexTensor& src,
                                           const BeamOptions& options = {});

}  // namespace gf
