// Layer normalisation (Ba et al. 2016, arXiv:1607.06450) over the last axis, fused. The
// Transformer wraps every sub-layer in it: LayerNorm(x + Sublayer(x)) (Vaswani et al. §3.1).
//
// Per row of D numbers:   mu = mean(x),  var = mean((x - mu)^2)   (biased, as PyTorch)
//                         r = 1 / sqrt(var + eps),  xhat = (x - mu) r,  y = xhat * w + b
//
// Backward, with gx = dL/dxhat = g * w (g = dL/dy):
//   dL/dw = sum over rows of g * xhat,    dL/db = sum over rows of g
//   dL/dx = r * (gx - mean(gx) - xhat * mean(gx * xhat))
// The last line is the chain rule through mu and var, which both depend on every x_i of
// the row; it needs only xhat and r, so forward keeps mu and r per row (2 floats a row).
#include <algorithm>
#include <cmath>
#include <vector>

#include "autograd/errors.h"
#include "autograd/graph.h"
#include "autograd/kernels/parallel.h"
#include "autograd/kernels/reduce.h"
#include "autograd/ops.h"

namespace gf {

namespace {

// Backward, with the formulas above, from the mu and r per row that forward kept in stats.
Grads layer_norm_backward(const Tensor& grad_y, const Tensor& x, const Tensor& weight,
                          const std::vector<float>& stats, int64_t rows, int64_t d) {
  Tensor grad_x = Tensor::empty(x.shape());
  Tensor grad_w = Tensor::zeros(weight.shape());
  Tensor grad_b = Tensor::zeros(weight.shape());
  const float* g = grad_y.data();
  const float* x_data = x.data();
  const float* w_data = weight.data();
  const float* mu_r = stats.data();
  float* gx = grad_x.data();
  float* gw = grad_w.data();
  float* gb = grad_b.data();
  const float mean_scale = 1.0f / static_cast<float>(d);
  // dL/dx, row by row: each row needs only its own numbers, so the threads split the rows.
  kernels::parallel_for(rows, 12 * d, [&](int64_t begin, int64_t end) {
    std::vector<float> xhat(static_cast<size_t>(d)), gxhat(static_cast<size_t>(d));
    for (int64_t row = begin; row < end; ++row) {
      const float* xr = x_data + row * d;
      const float* gr = g + row * d;
      const float mu = mu_r[2 * row], r = mu_r[2 * row + 1];
      for (int64_t i = 0; i < d; ++i) {
        const auto k = static_cast<size_t>(i);
        xhat[k] = (xr[i] - mu) * r;
        gxhat[k] = gr[i] * w_data[i];
      }
      const float mean_g = kernels::sum(gxhat.data(), d) * mean_scale;
      const float mean_gx = kernels::dot(gxhat.data(), xhat.data(), d) * mean_scale;
      float* gxr = gx + row * d;
      for (int64_t i = 0; i < d; ++i) {
        const auto k = static_cast<size_t>(i);
        gxr[i] = r * (gxhat[k] - mean_g - xhat[k] * mean_gx);
      }
    }
  });
  // dL/dw and dL/db sum over all rows. Every column is summed in row order, by one thread:
  // the threads split the columns (a cache line of them at a time), not the rows, so the bits
  // do not depend on the thread count. (When all of backward ran on one thread, it took most
  // of a small model's layer_norm time: lesson 11, part 4.)
  constexpr int64_t kColumns = 16;
  const int64_t groups = (d + kColumns - 1) / kColumns;
  kernels::parallel_for(groups, rows * kColumns * 4, [&](int64_t begin, int64_t end) {
    const int64_t c0 = begin * kColumns, c1 = std::min(d, end * kColumns);
    for (int64_t row = 0; row < rows; ++row) {
      const float* xr = x_data + row * d;
      const float* gr = g + row * d;
      const float mu = mu_r[2 * row], r = mu_r[2 * row + 1];
      for (int64_t i = c0; i < c1; ++i) {
        const float xhat = (xr[i] - mu) * r;
        gw[i] += gr[i] * xhat;
        gb[i] += gr[i];
      }
    }
  });
  return Grads{grad_x, grad_w, grad_b};
}

}  // namespace

Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps) {
  if (x.rank() == 0) throw ShapeError("layer_norm: expects at least one dimension, got []");
  const int64_t d = x.shape().back();
  if (!(weight.shape() == Shape{d}) || !(bias.shape() == Shape{d}))
    throw ShapeError(fmt::format("layer_norm: weight {} and bias {} must both be [{}] for input {}",
                                 weight.shape(), bias.shape(), d, x.shape()));
  if (d == 0)
    throw ShapeError(
        fmt::format("layer_norm: cannot normalise over an empty last axis ({})", x.shape()));
  const int64_t rows = x.numel() / d;
  Tensor y = Tensor::empty(x.shape());
  auto stats = std::make_shared<std::vector<float>>(static_cast<size_t>(2 * rows));  // mu, r
  const float* px = x.data();
  const float* w = weight.data();
  const float* b = bias.data();
  float* py = y.data();
  float* st = stats->data();
  const float inv_d = 1.0f / static_cast<float>(d);
  kernels::parallel_for(rows, 8 * d, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const float* xr = px + row * d;
      float* yr = py + row * d;
      const float mu = kernels::sum(xr, d) * inv_d;
      // Two passes (mean, then squared deviations) rather than E[x^2] - E[x]^2, which loses
      // every digit when the mean is large against the spread.
      for (int64_t i = 0; i < d; ++i) yr[i] = (xr[i] - mu) * (xr[i] - mu);
      const float r = 1.0f / std::sqrt(kernels::sum(yr, d) * inv_d + eps);
      for (int64_t i = 0; i < d; ++i) yr[i] = (xr[i] - mu) * r * w[i] + b[i];
      st[2 * row] = mu;
      st[2 * row + 1] = r;
    }
  });
  record(y, "layer_norm", {x, weight, bias}, [x, weight, stats, rows, d](const Tensor& grad_y) {
    return layer_norm_backward(grad_y, x, weight, *stats, rows, d);
  });
  return y;
}

}  // namespace gf
