// Reductions: sum, mean and max, over everything or over one axis.
//
// Over an axis, x is viewed as [outer, n, inner] with n the reduced axis; the result is
// [outer, inner] (or [outer, 1, inner] with keepdim). Sums use kernels::sum, whose fixed
// sixteen-way split vectorises and still gives the same bits on every run.
#include "autograd/kernels/reduce.h"

#include <fmt/format.h>

#include <vector>

#include "autograd/errors.h"
#include "autograd/graph.h"
#include "autograd/ops.h"

namespace gf {

namespace {

struct AxisView {
  int64_t outer = 1, n = 1, inner = 1;
  Shape keepdim_shape;  // x's shape with the axis set to 1
  Shape result_shape;   // as requested by keepdim
};

AxisView view_axis(const char* op, const Shape& shape, int axis, bool keepdim) {
  if (shape.rank() == 0)
    throw ShapeError(fmt::format("{}: cannot reduce a scalar over an axis", op));
  const int a = normalize_axis(op, axis, shape.rank());
  AxisView v;
  for (int d = 0; d < shape.rank(); ++d) {
    if (d < a) v.outer *= shape[d];
    if (d > a) v.inner *= shape[d];
    v.keepdim_shape.push_back(d == a ? 1 : shape[d]);
    if (d != a || keepdim) v.result_shape.push_back(d == a ? 1 : shape[d]);
  }
  v.n = shape[a];
  return v;
}

}  // namespace

// sum over all elements: y = sum_i x_i.   dL/dx_i = grad (the same for every element)
Tensor sum(const Tensor& x) {
  Tensor y = Tensor::scalar(kernels::sum(x.data(), x.numel()));
  record(y, "sum", {x},
         [shape = x.shape()](const Tensor& grad_y) { return Grads{expand(grad_y, shape)}; });
  return y;
}

// mean = sum / n: a composite, so its gradient comes from sum's and mul_scalar's.
Tensor mean(const Tensor& x) {
  if (x.numel() == 0) throw ShapeError(fmt::format("mean: tensor of shape {} is empty", x.shape()));
  return sum(x) * (1.0f / static_cast<float>(x.numel()));
}

// sum over an axis: y[o, i] = sum_j x[o, j, i].   dL/dx[o, j, i] = grad[o, i] for every j
Tensor sum(const Tensor& x, int axis, bool keepdim) {
  const AxisView v = view_axis("sum", x.shape(), axis, keepdim);
  Tensor y = Tensor::zeros(v.result_shape);
  const float* px = x.data();
  float* py = y.data();
  for (int64_t o = 0; o < v.outer; ++o) {
    const float* xo = px + o * v.n * v.inner;
    float* yo = py + o * v.inner;
    if (v.inner == 1) {
      yo[0] = kernels::sum(xo, v.n);
    } else {
      for (int64_t j = 0; j < v.n; ++j)
        for (int64_t i = 0; i < v.inner; ++i) yo[i] += xo[j * v.inner + i];
    }
  }
  record(y, "sum", {x}, [shape = x.shape(), keep = v.keepdim_shape](const Tensor& grad_y) {
    return Grads{expand(reshape(grad_y, keep), shape)};
  });
  return y;
}

Tensor mean(const Tensor& x, int axis, bool keepdim) {
  if (x.rank() == 0) throw ShapeError("mean: cannot reduce a scalar over an axis");
  const int64_t n = x.shape()[normalize_axis("mean", axis, x.rank())];
  if (n == 0) throw ShapeError(fmt::format("mean: axis {} of {} is empty", axis, x.shape()));
  return sum(x, axis, keepdim) * (1.0f / static_cast<float>(n));
}

// max over an axis: y[o, i] = x[o, j*, i] with j* the first position of the maximum.
//   dL/dx[o, j, i] = grad[o, i] if j == j*, else 0
Tensor max(const Tensor& x, int axis, bool keepdim) {
  const AxisView v = view_axis("max", x.shape(), axis, keepdim);
  if (v.n == 0)
    throw ShapeError(
        fmt::format("max: cannot take the maximum over an empty axis of {}", x.shape()));
  Tensor y = Tensor::empty(v.result_shape);
  std::vector<int64_t> argmax(static_cast<size_t>(v.outer * v.inner));
  const float* px = x.data();
  float* py = y.data();
  for (int64_t o = 0; o < v.outer; ++o)
    for (int64_t i = 0; i < v.inner; ++i) {
      const float* xs = px + o * v.n * v.inner + i;
      int64_t best = 0;
      for (int64_t j = 1; j < v.n; ++j)
        if (xs[j * v.inner] > xs[best * v.inner]) best = j;
      py[o * v.inner + i] = xs[best * v.inner];
      argmax[static_cast<size_t>(o * v.inner + i)] = best;
    }
  record(y, "max", {x}, [shape = x.shape(), v, argmax = std::move(argmax)](const Tensor& grad_y) {
    Tensor grad_x = Tensor::zeros(shape);
    const float* g = grad_y.data();
    float* gx = grad_x.data();
    for (int64_t o = 0; o < v.outer; ++o)
      for (int64_t i = 0; i < v.inner; ++i) {
        const int64_t k = o * v.inner + i;
        gx[(o * v.n + argmax[static_cast<size_t>(k)]) * v.inner + i] = g[k];
      }
    return Grads{grad_x};
  });
  return y;
}

}  // namespace gf
