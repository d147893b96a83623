#include "nn/attention.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <stdexcept>

#include "autograd/errors.h"
#include "autograd/graph.h"
#include "autograd/ops.h"

namespace gf::nn {

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const Tensor& mask, Tensor* probs) {
  if (q.rank() < 2 || k.rank() != q.rank() || v.rank() != q.rank() ||
      q.shape().back() != k.shape().back() || k.dim(-2) != v.dim(-2))
    throw ShapeError(
        fmt::format("attention: q {}, k {}, v {} must be [..., T, K], [..., S, K], [..., S, K']",
                    q.shape(), k.shape(), v.shape()));
  // 1/sqrt(d_k): q.k sums d_k products of roughly unit-variance terms, so its variance is d_k;
  // unscaled, softmax saturates as d_k grows and its gradient vanishes (§3.2.1, footnote 4).
  const float scale = 1.0f / std::sqrt(static_cast<float>(q.shape().back()));
  Tensor scores = matmul(q, transpose(k, -1, -2)) * scale;  // [B, H, T, S]
  if (mask.defined()) scores = masked_fill(scores, mask, -std::numeric_limits<float>::infinity());
  Tensor weights = softmax(scores);
  if (probs) *probs = weights.clone();  // a copy: softmax's backward reads weights
  return matmul(weights, v);
}

static void require_ids_matrix(const char* what, const IndexTensor& ids) {
  if (ids.shape().rank() != 2)
    throw ShapeError(fmt::format("{}: ids must be [B, L], got {}", what, ids.shape()));
}

Tensor padding_mask(const IndexTensor& ids, int32_t pad) {
  require_ids_matrix("padding_mask", ids);
  const int64_t b = ids.shape()[0], s = ids.shape()[1];
  Tensor mask = Tensor::empty({b, 1, 1, s});
  for (int64_t i = 0; i < b * s; ++i) mask.data()[i] = ids.data()[i] == pad ? 1.0f : 0.0f;
  return mask;
}

Tensor look_ahead_mask(int64_t length) {
  if (length < 1)
    throw ShapeError(fmt::format("look_ahead_mask: length is {} but must be at least 1", length));
  Tensor mask = Tensor::empty({1, 1, length, length});
  for (int64_t i = 0; i < length; ++i)
    for (int64_t j = 0; j < length; ++j) mask.data()[i * length + j] = j > i ? 1.0f : 0.0f;
  return mask;
}

Tensor target_mask(const IndexTensor& ids, int32_t pad) {
  require_ids_matrix("target_mask", ids);
  const int64_t b = ids.shape()[0], t = ids.shape()[1];
  Tensor mask = Tensor::empty({b, 1, t, t});
  float* m = mask.data();
  for (int64_t n = 0; n < b; ++n)
    for (int64_t i = 0; i < t; ++i)
      for (int64_t j = 0; j < t; ++j)
        m[(n * t + i) * t + j] = j > i || ids.data()[n * t + j] == pad ? 1.0f : 0.0f;
  return mask;
}

MultiHeadAttention::MultiHeadAttention(const AttentionConfig& c, Rng& rng)
    : config(c),
      q(c.d_model, c.d_model, rng),
      k(c.d_model, c.d_model, rng),
      v(c.d_model, c.d_model, rng),
      o(c.d_model, c.d_model, rng) {
  if (c.heads <= 0 || c.d_model % c.heads != 0)
    throw std::invalid_argument(
        fmt::format("MultiHeadAttention: heads ({}) must be positive and divide d_model ({})",
                    c.heads, c.d_model));
  register_module("q", q);
  register_module("k", k);
  register_module("v", v);
  register_module("o", o);
}

// [B, T, D] -> [B, T, H, K] (a reshape: free) -> [B, H, T, K] (a transpose: one copy), so that
// each head is a contiguous [T, K] matrix for the batched matmul.
Tensor MultiHeadAttention::split_heads(const Tensor& x) const {
  const int64_t b = x.dim(0), t = x.dim(1), h = config.heads;
  return transpose(reshape(x, {b, t, h, config.d_model / h}), 1, 2);
}

void MultiHeadAttention::check_shapes(const Tensor& query, const Tensor& memory) const {
  if (query.rank() != 3 || memory.rank() != 3 || query.dim(2) != config.d_model ||
      memory.dim(2) != config.d_model || query.dim(0) != memory.dim(0))
    throw ShapeError(
        fmt::format("attention: query {} and memory {} must be [B, T, {}] and [B, S, {}]",
                    query.shape(), memory.shape(), config.d_model, config.d_model));
}

Tensor MultiHeadAttention::forward_reference(const Tensor& query, const Tensor& memory,
                                             const Tensor& mask) {
  check_shapes(query, memory);
  Tensor probs;
  const Tensor heads = scaled_dot_product_attention(
      split_heads(q.forward(query)), split_heads(k.forward(memory)), split_heads(v.forward(memory)),
      mask, record_attention ? &probs : nullptr);
  if (record_attention) last_attention = probs;
  // Concat(head_1, ..., head_h): [B, H, T, K] -> [B, T, H, K] -> [B, T, D], then W^O.
  const int64_t b = query.dim(0), t = query.dim(1);
  return o.forward(reshape(transpose(heads, 1, 2), {b, t, config.d_model}));
}

// keys and values [B, S, D] are the projections k(memory) and v(memory), heads side by side.
Tensor MultiHeadAttention::attend(const Tensor& query, const Tensor& keys, const Tensor& values,
                                  const Tensor& mask) {
  // 1/sqrt(d_k), as in scaled_dot_product_attention (§3.2.1, footnote 4).
  const float scale = 1.0f / std::sqrt(static_cast<float>(config.d_model / config.heads));
  Tensor probs;
  const Tensor heads = multi_head_attention(q.forward(query), keys, values, mask, config.heads,
                                            scale, record_attention ? &probs : nullptr);
  if (record_attention) last_attention = probs;
  return o.forward(heads);  // heads is already Concat(head_1, ..., head_h), [B, T, D]
}

Tensor MultiHeadAttention::forward(const Tensor& query, const Tensor& memory, const Tensor& mask) {
  check_shapes(query, memory);
  return attend(query, k.forward(memory), v.forward(memory), mask);
}

Tensor MultiHeadAttention::self_attend_cached(const Tensor& query, const Tensor& mask,
                                              KVCache& cache) {
  const Tensor new_k = k.forward(query), new_v = v.forward(query);  // [B, T, D]
  cache.k = cache.k.defined() ? concat({cache.k, new_k}, 1) : new_k;
  cache.v = cache.v.defined() ? concat({cache.v, new_v}, 1) : new_v;
  return attend(query, cache.k, cache.v, mask);
}

Tensor MultiHeadAttention::cross_attend_cached(const Tensor& query, const Tensor& memory,
                                               const Tensor& mask, KVCache& cache) {
  if (!cache.k.defined()) {  // the encoder output does not change between steps
    cache.k = k.forward(memory);
    cache.v = v.forward(memory);
  }
  return attend(query, cache.k, cache.v, mask);
}

RecordingAttention::RecordingAttention(std::vector<MultiHeadAttention*> modules) {
  for (MultiHeadAttention* attention : modules) {
    was_recording_.emplace_back(attention, attention->record_attention);
    attention->record_attention = true;
  }
}

RecordingAttention::~RecordingAttention() {
  for (auto& [attention, was_recording] : was_recording_)
    attention->record_attention = was_recording;
}

}  // namespace gf::nn
