// softmax and log_softmax over the last axis, each one fused kernel.
//
// Composed from exp, sum and div, softmax would overflow for logits near 90 (exp(89) is
// already ~4e38, the float maximum) and would keep three temporaries per call. Subtracting
// the row maximum first changes nothing mathematically (the factor exp(-m) cancels) and keeps
// every exponent <= 0.
#include <cmath>
#include <limits>

#include "autograd/errors.h"
#include "autograd/graph.h"
#include "autograd/kernels/parallel.h"
#include "autograd/kernels/reduce.h"
#include "autograd/ops.h"

namespace gf {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

struct Rows {
  int64_t count, n;  // x viewed as [count, n]
};

Rows rows_of(const char* op, const Tensor& x) {
  if (x.rank() == 0)
    throw ShapeError(fmt::format("{}: expects at least one dimension, got []", op));
  return {x.numel() / std::max<int64_t>(x.shape().back(), 1), x.shape().back()};
}

}  // namespace

// softmax: y_i = exp(x_i - m) / sum_j exp(x_j - m),  m = max_j x_j.
//   dL/dx_i = y_i (g_i - sum_j g_j y_j)       (it needs only y)
// A row that is entirely -inf (every key masked) gives zeros rather than 0/0 = NaN.
Tensor softmax(const Tensor& x) {
  const Rows r = rows_of("softmax", x);
  Tensor y = Tensor::empty(x.shape());
  const float* px = x.data();
  float* py = y.data();
  kernels::parallel_for(r.count, 8 * r.n, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row)
      kernels::softmax_row(px + row * r.n, py + row * r.n, r.n);
  });
  record(y, "softmax", {x}, [y = y.detach(), r](const Tensor& grad_y) {
    Tensor grad_x = Tensor::empty(y.shape());
    const float* g = grad_y.data();
    const float* y_data = y.data();
    float* gx = grad_x.data();
    kernels::parallel_for(r.count, 4 * r.n, [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        const int64_t o = row * r.n;
        const float gy = kernels::dot(g + o, y_data + o, r.n);
        for (int64_t i = 0; i < r.n; ++i) gx[o + i] = y_data[o + i] * (g[o + i] - gy);
      }
    });
    return Grads{grad_x};
  });
  return y;
}

// log_softmax: y_i = x_i - m - log sum_j exp(x_j - m).
//   dL/dx_i = g_i - softmax_i * sum_j g_j = g_i - exp(y_i) sum_j g_j
Tensor log_softmax(const Tensor& x) {
  const Rows r = rows_of("log_softmax", x);
  Tensor y = Tensor::empty(x.shape());
  const float* px = x.data();
  float* py = y.data();
  kernels::parallel_for(r.count, 8 * r.n, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const float* xr = px + row * r.n;
      float* yr = py + row * r.n;
      const float m = r.n > 0 ? kernels::max(xr, r.n) : 0.0f;
      if (m == kNegInf) {  // every entry masked: log 0 everywhere
        std::fill_n(yr, r.n, kNegInf);
        continue;
      }
      for (int64_t i = 0; i < r.n; ++i) yr[i] = std::exp(xr[i] - m);
      const float log_sum = std::log(kernels::sum(yr, r.n));
      for (int64_t i = 0; i < r.n; ++i) yr[i] = xr[i] - m - log_sum;
    }
  });
  record(y, "log_softmax", {x}, [y = y.detach(), r](const Tensor& grad_y) {
    Tensor grad_x = Tensor::empty(y.shape());
    const float* g = grad_y.data();
    const float* y_data = y.data();
    float* gx = grad_x.data();
    kernels::parallel_for(r.count, 4 * r.n, [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        const int64_t o = row * r.n;
        const float total = kernels::sum(g + o, r.n);
        for (int64_t i = 0; i < r.n; ++i) gx[o + i] = g[o + i] - std::exp(y_data[o + i]) * total;
      }
    });
    return Grads{grad_x};
  });
  return y;
}

}  // namespace gf
