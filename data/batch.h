// Stacking pairs of different lengths into one batch: padding on the right, and the
// decoder's input and target shifted by one token (teacher forcing). A batch is what one
// training step of the Transformer consumes. The attention masks follow from the ids and the
// pad id; the model builds them itself (nn/attention.h: padding_mask, target_mask).
//
// Shape legend: B batch, S source length, T target length (decoder positions).
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
  int64_t target_tokens = 0;  // non-pad entries of tgt_out: the tokens the loss averages over
};

// The sequences stacked into [B, L], L the longest, shorter ones padded on the right with pad
// (for a batch of sources to decode). Throws ShapeError for no sequences or an empty one, and
// std::invalid_argument when a sequence already contains pad.
IndexTensor pad_sequences(std::span<const std::vector<int32_t>> sequences, int32_t pad = kPad);

// Pads the pairs into one batch (see Batch). With T = longest tgt - 1, tgt_in[b] is
// tgt[0 .. T-1] and tgt_out[b] is tgt[1 .. T], both padded. Pairs without a source (a
// decoder-only model's, pair.h) give src [B, 0].
// Throws ShapeError for an empty batch, a batch of pairs with and without a source, or a
// target of fewer than 2 tokens, and std::invalid_argument when a sequence already contains
// pad.
Batch make_batch(std::span<const Pair> pairs, int32_t pad = kPad);

// Consecutive slices of batch_size pairs, in order; the last holds the remainder and may be
// smaller. No pairs give no batches; batch_size >= pairs.size() gives one batch of all.
// The slices view `pairs`, which must outlive them. Throws std::invalid_argument for
// batch_size < 1.
std::vector<std::span<const Pair>> batches_in_order(std::span<const Pair> pairs,
                                                    int64_t batch_size);

}  // namespace gf::data
