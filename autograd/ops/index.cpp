// Ops that pick or hide elements: embedding lookup, masked_fill, where, dropout.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <memory>
#include <vector>

#include "autograd/errors.h"
#include "autograd/graph.h"
#include "autograd/kernels/broadcast.h"
#include "autograd/kernels/parallel.h"
#include "autograd/ops.h"
#include "autograd/ops/pointwise.h"
#include "autograd/random.h"

namespace gf {

// embedding: y[..., :] = weight[ids[...], :]   weight [V, D], ids [...] -> [..., D]
//   dL/dweight[v, :] = sum of grad[p, :] over the positions p where ids[p] == v
Tensor embedding(const Tensor& weight, const IndexTensor& ids) {
  if (weight.rank() != 2)
    throw ShapeError(fmt::format("embedding: weight must be [V, D], got {}", weight.shape()));
  if (!ids.defined()) throw std::invalid_argument("embedding: the ids are undefined");
  const int64_t vocab = weight.shape()[0], d = weight.shape()[1];
  const int32_t* id = ids.data();
  for (int64_t p = 0; p < ids.numel(); ++p)
    if (id[p] < 0 || id[p] >= vocab)
      throw IndexError(fmt::format("embedding: token id {} is out of range [0, {})", id[p], vocab));
  Shape out = ids.shape();
  out.push_back(d);
  Tensor y = Tensor::empty(out);
  for (int64_t p = 0; p < ids.numel(); ++p)
    std::copy_n(weight.data() + id[p] * d, d, y.data() + p * d);
  record(y, "embedding", {weight}, [ids, shape = weight.shape(), d](const Tensor& grad_y) {
    Tensor grad_weight = Tensor::zeros(shape);
    const float* g = grad_y.data();
    float* gw = grad_weight.data();
    for (int64_t p = 0; p < ids.numel(); ++p) {  // in order: a repeated id sums the same way
      float* row = gw + ids.data()[p] * d;
      for (int64_t j = 0; j < d; ++j) row[j] += g[p * d + j];
    }
    return Grads{grad_weight};
  });
  return y;
}

// masked_fill: y = value where mask != 0, else x.   dL/dx = grad where mask == 0, else 0
Tensor masked_fill(const Tensor& x, const Tensor& mask, float value) {
  if (!(broadcast_shapes("masked_fill", x.shape(), mask.shape()) == x.shape()))
    throw ShapeError(fmt::format("masked_fill: mask of shape {} does not broadcast to {}",
                                 mask.shape(), x.shape()));
  Tensor y =
      detail::zip(x.shape(), x, mask, [value](float v, float m) { return m != 0.0f ? value : v; });
  record(y, "masked_fill", {x}, [mask](const Tensor& grad_y) {
    return Grads{detail::zip(grad_y.shape(), grad_y, mask,
                             [](float g, float m) { return m != 0.0f ? 0.0f : g; })};
  });
  return y;
}

// where: y = a where condition != 0, else b (all three broadcast together).
//   dL/da = sum_to(grad where condition, shape(a)),  dL/db = sum_to(grad elsewhere, shape(b))
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b) {
  Shape out;
  try {
    out = broadcast_shapes("where", broadcast_shapes("where", condition.shape(), a.shape()),
                           b.shape());
  } catch (const ShapeError&) {
    throw ShapeError(fmt::format("where: condition {}, a {} and b {} do not broadcast together",
                                 condition.shape(), a.shape(), b.shape()));
  }
  Tensor y = Tensor::empty(out);
  const float* pc = condition.data();
  const float* pa = a.data();
  const float* pb = b.data();
  float* py = y.data();
  const auto plan = kernels::plan_broadcast<4>(out, {out, condition.shape(), a.shape(), b.shape()});
  kernels::for_each_row(
      plan, [&](const std::array<int64_t, 4>& at, int64_t n, const std::array<int64_t, 4>& step) {
        for (int64_t i = 0; i < n; ++i)
          py[at[0] + i] =
              pc[at[1] + i * step[1]] != 0.0f ? pa[at[2] + i * step[2]] : pb[at[3] + i * step[3]];
      });
  record(y, "where", {a, b}, [condition, sa = a.shape(), sb = b.shape()](const Tensor& grad_y) {
    const Tensor chosen = detail::zip(grad_y.shape(), grad_y, condition,
                                      [](float g, float c) { return c != 0.0f ? g : 0.0f; });
    const Tensor other = detail::zip(grad_y.shape(), grad_y, condition,
                                     [](float g, float c) { return c != 0.0f ? 0.0f : g; });
    return Grads{sum_to(chosen, sa), sum_to(other, sb)};
  });
  return y;
}

// dropout: y = x * keep / (1 - p), keep ~ Bernoulli(1 - p) per element.
//   dL/dx = grad * keep / (1 - p)   (the same mask, so the mask is kept for backward)
Tensor dropout(const Tensor& x, float p, Rng& rng) {
  if (!(p >= 0.0f && p < 1.0f))
    throw std::invalid_argument(fmt::format("dropout: probability {} is outside [0, 1)", p));
  if (p == 0.0f) return x;
  const float scale = 1.0f / (1.0f - p);
  // One byte per element is all the backward needs (kept or not), a quarter of a float mask:
  // with dropout after every sub-layer, the masks are a good part of a step's memory.
  const int64_t n = x.numel();
  auto keep = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(n));
  for (uint8_t& k : *keep) k = rng.uniform() >= p ? 1 : 0;
  // y_i = x_i * (kept ? 1/(1-p) : 0), and the same factor for the gradient. The mask is drawn
  // above in one stream, in order; applying it is element by element, so threads share it.
  auto apply = [scale, n](const uint8_t* kept, const float* in, float* out) {
    kernels::parallel_for(n, 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) out[i] = in[i] * (kept[i] ? scale : 0.0f);
    });
  };
  Tensor y = Tensor::empty(x.shape());
  apply(keep->data(), x.data(), y.data());
  record(y, "dropout", {x}, [keep, apply](const Tensor& grad_y) {
    Tensor grad_x = Tensor::empty(grad_y.shape());
    apply(keep->data(), grad_y.data(), grad_x.data());
    return Grads{grad_x};
  });
  return y;
}

}  // namespace gf
