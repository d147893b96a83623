// Stacking pairs of different lengths into one batch: padding and the two attention masks
// of the paper (§3.2.3). A batch is what one training step of the Transformer consumes.
//
// Shape legend: B batch, S source length, T target length (decoder positions), H heads.
//
// A mask is a float tensor in which 1 means BLOCKED and 0 means visible. It is applied to the
// attention scores before the softmax, as masked_fill(scores, mask, -inf), so blocked
// positions get probability exactly 0. Both masks broadcast against scores [B, H, T, S]:
//
//   src_mask [B, 1, 1, S]   the same for every head and every query row; used by encoder
//                           self-attention (T = S) and by decoder cross-attention
//   tgt_mask [B, 1, T, T]   the same for every head; rows are queries, columns are keys
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "autograd/tensor.h"
#include "data/pair.h"
#include "data/vocab.h"

namespace gf::data {

struct Batch {
  IndexTensor src;            // [B, S]  sources, padded with pad on the right
  IndexTensor tgt_in;         // [B, T]  decoder input, tgt[:-1] padded
  IndexTensor tgt_out;        // [B, T]  prediction target, tgt[1:] padded (the loss ignores pad)
  Tensor src_mask;            // [B, 1, 1, S]  1 at padded source positions
  Tensor tgt_mask;            // [B, 1, T, T]  1 where key j > query i or key j is padding
  int64_t target_tokens = 0;  // non-pad entries of tgt_out: the tokens the loss averages over
};

// The sequences stacked into [B, L], L the longest, shorter ones padded on the right with pad
// (for a batch of sources to decode). Throws ShapeError for no sequences or an empty one, and
// std::invalid_argument when a sequence already contains pad.
IndexTensor pad_sequences(std::span<const std::vector<int32_t>> sequences, int32_t pad = kPad);

// 1 where ids[b, s] == pad, else 0. ids [B, S] -> [B, 1, 1, S], which broadcasts against
// scores [B, H, T, S] and blocks padded keys for every head and query.
// Throws ShapeError unless ids has rank 2.
Tensor padding_mask(const IndexTensor& ids, int32_t pad = kPad);

// The look-ahead mask of §3.2.3: 1 strictly above the diagonal (key j > query i), so that
// position i attends only to positions 0..i and cannot see the tokens it must predict.
// Returns [1, 1, t, t]. Throws ShapeError for t < 1.
Tensor look_ahead_mask(int64_t t);

// Pads the pairs into one batch (see Batch). With T = longest tgt - 1, tgt_in[b] is
// tgt[0 .. T-1] and tgt_out[b] is tgt[1 .. T], both padded; tgt_mask is
// look_ahead_mask(T) OR padding_mask(tgt_in). No row of a mask is fully blocked: key 0 (a
// real token) is visible to every query.
// Throws ShapeError for an empty batch, an empty source or a target of fewer than 2 tokens,
// and std::invalid_argument when a sequence already contains pad.
Batch make_batch(std::span<const Pair> pairs, int32_t pad = kPad);

// Consecutive slices of batch_size pairs, in order; the last holds the remainder and may be
// smaller. No pairs give no batches; batch_size >= pairs.size() gives one batch of all.
// The slices view `pairs`, which must outlive them. Throws std::invalid_argument for
// batch_size < 1.
std::vector<std::span<const Pair>> batches_in_order(std::span<const Pair> pairs,
                                                    int64_t batch_size);

}  // namespace gf::data
