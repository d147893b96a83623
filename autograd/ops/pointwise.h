// Element-wise loops shared by the ops in this folder (not part of the public API).
// map: y_i = f(x_i). zip: y = f(a, b) with broadcasting. Neither records anything: the
// op that calls them does.
#pragma once

#include <array>
#include <cmath>

#include "autograd/kernels/broadcast.h"
#include "autograd/kernels/parallel.h"
#include "autograd/ops.h"
#include "autograd/tensor.h"

namespace gf::detail {

// sigmoid(v) = 1 / (1 + exp(-v)), evaluated through exp(-|v|) so that neither branch overflows
// for large |v|. The sigmoid op and the gru op's gates both use it, so they round alike.
inline float stable_sigmoid(float v) {
  const float e = std::exp(-std::abs(v));
  return v >= 0.0f ? 1.0f / (1.0f + e) : e / (1.0f + e);
}

template <typename F>
Tensor map(const Tensor& x, F f) {
  Tensor y = Tensor::empty(x.shape());
  const float* px = x.data();
  float* py = y.data();
  kernels::parallel_for(x.numel(), 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) py[i] = f(px[i]);
  });
  return y;
}

// The caller has checked (or computed with broadcast_shapes) that a and b broadcast to out.
template <typename F>
Tensor zip(const Shape& out, const Tensor& a, const Tensor& b, F f) {
  Tensor y = Tensor::empty(out);
  const float* pa = a.data();
  const float* pb = b.data();
  float* py = y.data();
  if (a.shape() == out && b.shape() == out) {  // the common case: no broadcasting
    kernels::parallel_for(y.numel(), 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) py[i] = f(pa[i], pb[i]);
    });
    return y;
  }
  if (a.shape() == out && b.numel() == 1) {
    const float s = pb[0];
    kernels::parallel_for(y.numel(), 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) py[i] = f(pa[i], s);
    });
    return y;
  }
  const auto plan = kernels::plan_broadcast<3>(out, {out, a.shape(), b.shape()});
  kernels::for_each_row(
      plan, [&](const std::array<int64_t, 3>& at, int64_t n, const std::array<int64_t, 3>& step) {
        float* yr = py + at[0];
        const float* ar = pa + at[1];
        const float* br = pb + at[2];
        if (step[1] == 1 && step[2] == 1) {
          for (int64_t i = 0; i < n; ++i) yr[i] = f(ar[i], br[i]);
        } else if (step[1] == 1 && step[2] == 0) {
          for (int64_t i = 0; i < n; ++i) yr[i] = f(ar[i], br[0]);
        } else if (step[1] == 0 && step[2] == 1) {
          for (int64_t i = 0; i < n; ++i) yr[i] = f(ar[0], br[i]);
        } else {
          for (int64_t i = 0; i < n; ++i) yr[i] = f(ar[i * step[1]], br[i * step[2]]);
        }
      });
  return y;
}

}  // namespace gf::detail
