// Multi-head attention (Vaswani et al. 2017, §3.2.2):
//
//   MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O,
//   head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V),
//   Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V            (§3.2.1, eq. 1)
//
// The h projections of width d_k = d_model / h are computed as one d_model x d_model Linear
// each for q, k, v (with bias, as PyTorch): head i's projection is columns [iK, (i+1)K) of the
// result. o is W^O.
//
// Two ways to compute the rest. The readable one splits the heads with a reshape and a
// transpose (split_heads), runs scaled_dot_product_attention on [B, H, T, K] tensors, and
// merges the heads back the same way (forward_reference; lesson 04 builds it step by step).
// MultiHeadAttention::forward runs the fused op multi_head_attention (autograd/ops.h), which
// reads each head in place and copies nothing; a test checks that the two agree.
//
// Shape legend: B batch, T query length, S key length, D d_model, H heads, K = D / H.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "autograd/random.h"
#include "autograd/tensor.h"
#include "nn/layers.h"
#include "nn/module.h"

namespace gf::nn {

// softmax(q k^T / sqrt(K) masked) v for q [B, H, T, K], k and v [B, H, S, K]. mask broadcasts
// to [B, H, T, S]; where it is non-zero the score becomes -inf (§3.2.3), so that position gets
// probability 0. Returns [B, H, T, K]; stores a copy of the probabilities [B, H, T, S] in
// *probs if given.
// Composed from matmul, transpose, masked_fill and softmax, to be read: MultiHeadAttention runs
// the fused multi_head_attention instead, and a test checks the two against each other.
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const Tensor& mask = {}, Tensor* probs = nullptr);

// Masks, as float tensors where 1 means "may not attend" (§3.2.3). They broadcast against
// the scores [B, H, T, S].
// Padding: [B, 1, 1, S], 1 at the key positions where ids [B, S] hold the pad id.
Tensor padding_mask(const IndexTensor& ids, int32_t pad);
// Look-ahead: [1, 1, T, T], 1 above the diagonal, so that position i sees only j <= i.
Tensor look_ahead_mask(int64_t length);
// The decoder's self-attention mask: look-ahead or padding, [B, 1, T, T] for ids [B, T].
Tensor target_mask(const IndexTensor& ids, int32_t pad);

struct AttentionConfig {
  int64_t d_model = 512;
  int64_t heads = 8;
};

// Keys and values of earlier positions, kept between decoding steps: the projections k(x) and
// v(x), [B, S, D] each, heads side by side as multi_head_attention reads them.
struct KVCache {
  Tensor k, v;
};

class MultiHeadAttention : public Module {
 public:
  MultiHeadAttention(const AttentionConfig& config, Rng& rng);  // heads must divide d_model

  // query [B, T, D] attends over memory [B, S, D] (memory = query for self-attention).
  // One fused multi_head_attention between the projections.
  Tensor forward(const Tensor& query, const Tensor& memory, const Tensor& mask = {});

  // The same function composed from readable ops:
  //   o(merge(scaled_dot_product_attention(split_heads(q(query)), split_heads(k(memory)),
  //                                        split_heads(v(memory)), mask)))
  // Slower (about a dozen tape nodes, and copies of q, k, v and the heads); kept as the
  // reference that forward is tested against. Fills last_attention like forward.
  Tensor forward_reference(const Tensor& query, const Tensor& memory, const Tensor& mask = {});
  // [B, T, D] -> [B, T, H, K] (a reshape: free) -> [B, H, T, K] (a transpose: one copy).
  Tensor split_heads(const Tensor& x) const;

  // One decoding step with cached keys and values. Self-attention appends the new positions'
  // keys and values (projected from query) to the cache and attends over all of them.
  Tensor self_attend_cached(const Tensor& query, const Tensor& mask, KVCache& cache);
  // Cross-attention projects memory into the cache on the first step and reuses it after.
  Tensor cross_attend_cached(const Tensor& query, const Tensor& memory, const Tensor& mask,
                             KVCache& cache);

  // When set, forward keeps a copy of the last attention probabilities [B, H, T, S] in
  // last_attention, for heatmaps. A copy, not the op's own: backward reads those, so drawing
  // on (or normalising) a heatmap between forward and backward would change the gradients.
  bool record_attention = false;
  Tensor last_attention;

  AttentionConfig config;
  Linear q, k, v, o;

 private:
  void check_shapes(const Tensor& query, const Tensor& memory) const;
  // Attention of query [B, T, D] over projected keys and values [B, S, D], then W^O.
  Tensor attend(const Tensor& query, const Tensor& keys, const Tensor& values, const Tensor& mask);
};

// Sets record_attention on some attention modules for a scope, and gives each its own setting
// back at the end of it: RecordingAttention recording(model.attention_modules());
class RecordingAttention {
 public:
  explicit RecordingAttention(std::vector<MultiHeadAttention*> modules);
  ~RecordingAttention();
  RecordingAttention(const RecordingAttention&) = delete;
  RecordingAttention& operator=(const RecordingAttention&) = delete;

 private:
  std::vector<std::pair<MultiHeadAttention*, bool>> was_recording_;
};

}  // namespace gf::nn
