// Element-wise ops with NumPy broadcasting, and sum_to / expand, which undo and redo it.
//
// Every binary op's backward has the same shape: compute the gradient as if no input had
// been broadcast, then sum_to each input's shape. An input that was repeated along an axis
// was used once per copy, so its gradient is the sum over the copies.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "autograd/errors.h"
#include "autograd/graph.h"
#include "autograd/kernels/reduce.h"
#include "autograd/ops.h"
#include "autograd/ops/pointwise.h"

namespace gf {

using detail::map;
using detail::zip;

Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b) {
  const int rank = std::max(a.rank(), b.rank());
  Shape out;
  for (int d = 0; d < rank; ++d) {
    const int da = d - (rank - a.rank()), db = d - (rank - b.rank());
    const int64_t x = da >= 0 ? a[da] : 1, y = db >= 0 ? b[db] : 1;
    if (x != y && x != 1 && y != 1)
      throw ShapeError(fmt::format("{}: cannot broadcast {} with {} (dimension {}: {} vs {})", op,
                                   a, b, d, x, y));
    out.push_back(x == 1 ? y : x);
  }
  return out;
}

// True when `from` broadcasts to exactly `to`.
static bool broadcasts_to(const Shape& from, const Shape& to) {
  if (from.rank() > to.rank()) return false;
  for (int d = 0; d < from.rank(); ++d) {
    const int64_t f = from[d], t = to[d + to.rank() - from.rank()];
    if (f != t && f != 1) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------------------
// sum_to: g [S] -> [shape], summing over the dimensions where shape was broadcast.
//   backward: each summed element received the same gradient, dL/dg = expand(grad, S)
Tensor sum_to(const Tensor& g, const Shape& shape) {
  if (g.shape() == shape) return g;
  if (!broadcasts_to(shape, g.shape()))
    throw ShapeError(fmt::format("sum_to: cannot reduce {} to {} (it does not broadcast to it)",
                                 g.shape(), shape));
  Tensor y = Tensor::zeros(shape);
  const float* pg = g.data();
  float* py = y.data();
  const auto plan = kernels::plan_broadcast<2>(g.shape(), {g.shape(), shape});
  kernels::for_each_row(
      plan, [&](const std::array<int64_t, 2>& at, int64_t n, const std::array<int64_t, 2>& step) {
        const float* gr = pg + at[0];
        float* yr = py + at[1];
        if (step[1] == 0) {
          yr[0] += kernels::sum(gr, n);
        } else {
          for (int64_t i = 0; i < n; ++i) yr[i] += gr[i];
        }
      });
  record(y, "sum_to", {g},
         [g_shape = g.shape()](const Tensor& grad_y) { return Grads{expand(grad_y, g_shape)}; });
  return y;
}

// ---------------------------------------------------------------------------------------
// expand: x [s] -> [shape], repeating x along the dimensions where it broadcasts.
//   dL/dx = sum_to(grad, s)
Tensor expand(const Tensor& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  if (!broadcasts_to(x.shape(), shape))
    throw ShapeError(fmt::format("expand: cannot expand {} to {}", x.shape(), shape));
  Tensor y = zip(shape, x, Tensor::scalar(0.0f), [](float a, float) { return a; });
  record(y, "expand", {x},
         [x_shape = x.shape()](const Tensor& grad_y) { return Grads{sum_to(grad_y, x_shape)}; });
  return y;
}

// ---------------------------------------------------------------------------------------
// add: y = a + b.   dL/da = sum_to(grad, shape(a)),  dL/db = sum_to(grad, shape(b))
Tensor add(const Tensor& a, const Tensor& b) {
  const Shape shape = broadcast_shapes("add", a.shape(), b.shape());
  Tensor y = zip(shape, a, b, [](float u, float v) { return u + v; });
  record(y, "add", {a, b}, [sa = a.shape(), sb = b.shape()](const Tensor& grad_y) {
    return Grads{sum_to(grad_y, sa), sum_to(grad_y, sb)};
  });
  return y;
}

// sub: y = a - b.   dL/da = sum_to(grad, shape(a)),  dL/db = -sum_to(grad, shape(b))
Tensor sub(const Tensor& a, const Tensor& b) {
  const Shape shape = broadcast_shapes("sub", a.shape(), b.shape());
  Tensor y = zip(shape, a, b, [](float u, float v) { return u - v; });
  record(y, "sub", {a, b}, [sa = a.shape(), sb = b.shape()](const Tensor& grad_y) {
    return Grads{sum_to(grad_y, sa), neg(sum_to(grad_y, sb))};
  });
  return y;
}

// mul: y = a * b.   dL/da = sum_to(grad * b, shape(a)),  dL/db = sum_to(grad * a, shape(b))
Tensor mul(const Tensor& a, const Tensor& b) {
  const Shape shape = broadcast_shapes("mul", a.shape(), b.shape());
  Tensor y = zip(shape, a, b, [](float u, float v) { return u * v; });
  record(y, "mul", {a, b}, [a, b](const Tensor& grad_y) {
    return Grads{sum_to(grad_y * b, a.shape()), sum_to(grad_y * a, b.shape())};
  });
  return y;
}

// div: y = a / b.   dL/da = sum_to(grad / b, shape(a))
//                   dL/db = sum_to(-grad * a / b^2, shape(b)) = sum_to(-grad * y / b, shape(b))
Tensor div(const Tensor& a, const Tensor& b) {
  const Shape shape = broadcast_shapes("div", a.shape(), b.shape());
  Tensor y = zip(shape, a, b, [](float u, float v) { return u / v; });
  record(y, "div", {a, b}, [a, b, y = y.detach()](const Tensor& grad_y) {
    return Grads{sum_to(grad_y / b, a.shape()), sum_to(-(grad_y * y) / b, b.shape())};
  });
  return y;
}

// neg: y = -x.   dL/dx = -grad
Tensor neg(const Tensor& x) {
  Tensor y = map(x, [](float v) { return -v; });
  record(y, "neg", {x}, [](const Tensor& grad_y) { return Grads{neg(grad_y)}; });
  return y;
}

// add_scalar: y = x + s.   dL/dx = grad
Tensor add_scalar(const Tensor& x, float s) {
  Tensor y = map(x, [s](float v) { return v + s; });
  record(y, "add_scalar", {x}, [](const Tensor& grad_y) { return Grads{grad_y}; });
  return y;
}

// mul_scalar: y = x * s.   dL/dx = grad * s
Tensor mul_scalar(const Tensor& x, float s) {
  Tensor y = map(x, [s](float v) { return v * s; });
  record(y, "mul_scalar", {x}, [s](const Tensor& grad_y) { return Grads{mul_scalar(grad_y, s)}; });
  return y;
}

// ---- Unary functions: y = f(x), dL/dx = grad * f'(x), f' written with y where it is cheaper.

// exp: (e^x)' = e^x = y
Tensor exp(const Tensor& x) {
  Tensor y = map(x, [](float v) { return std::exp(v); });
  record(y, "exp", {x}, [y = y.detach()](const Tensor& grad_y) { return Grads{grad_y * y}; });
  return y;
}

// log: (ln x)' = 1 / x
Tensor log(const Tensor& x) {
  Tensor y = map(x, [](float v) { return std::log(v); });
  record(y, "log", {x}, [x](const Tensor& grad_y) { return Grads{grad_y / x}; });
  return y;
}

// sqrt: (x^(1/2))' = 1 / (2 sqrt(x)) = 1 / (2 y)
Tensor sqrt(const Tensor& x) {
  Tensor y = map(x, [](float v) { return std::sqrt(v); });
  record(y, "sqrt", {x}, [y = y.detach()](const Tensor& grad_y) {
    return Grads{zip(y.shape(), grad_y, y, [](float g, float r) { return g / (2.0f * r); })};
  });
  return y;
}

// pow: (x^p)' = p x^(p-1)
Tensor pow(const Tensor& x, float p) {
  Tensor y = map(x, [p](float v) { return std::pow(v, p); });
  record(y, "pow", {x}, [x, p](const Tensor& grad_y) {
    return Grads{
        zip(x.shape(), grad_y, x, [p](float g, float v) { return g * p * std::pow(v, p - 1.0f); })};
  });
  return y;
}

// relu: max(x, 0)' = 1 where x > 0, else 0 (0 at the kink, as PyTorch chooses)
Tensor relu(const Tensor& x) {
  Tensor y = map(x, [](float v) { return v > 0.0f ? v : 0.0f; });
  record(y, "relu", {x}, [y = y.detach()](const Tensor& grad_y) {
    return Grads{zip(y.shape(), grad_y, y, [](float g, float r) { return r > 0.0f ? g : 0.0f; })};
  });
  return y;
}

// tanh: tanh'(x) = 1 - tanh(x)^2 = 1 - y^2
Tensor tanh(const Tensor& x) {
  Tensor y = map(x, [](float v) { return std::tanh(v); });
  record(y, "tanh", {x}, [y = y.detach()](const Tensor& grad_y) {
    return Grads{zip(y.shape(), grad_y, y, [](float g, float t) { return g * (1.0f - t * t); })};
  });
  return y;
}

// sigmoid: s'(x) = s(x) (1 - s(x)) = y (1 - y)
Tensor sigmoid(const Tensor& x) {
  Tensor y = map(x, detail::stable_sigmoid);
  record(y, "sigmoid", {x}, [y = y.detach()](const Tensor& grad_y) {
    return Grads{zip(y.shape(), grad_y, y, [](float g, float s) { return g * s * (1.0f - s); })};
  });
  return y;
}

// ---- Operators ------------------------------------------------------------------------

Tensor operator+(const Tensor& a, const Tensor& b) {
  return add(a, b);
}
Tensor operator-(const Tensor& a, const Tensor& b) {
  return sub(a, b);
}
Tensor operator*(const Tensor& a, const Tensor& b) {
  return mul(a, b);
}
Tensor operator/(const Tensor& a, const Tensor& b) {
  return div(a, b);
}
Tensor operator-(const Tensor& x) {
  return neg(x);
}
Tensor operator+(const Tensor& x, float s) {
  return add_scalar(x, s);
}
Tensor operator+(float s, const Tensor& x) {
  return add_scalar(x, s);
}
Tensor operator-(const Tensor& x, float s) {
  return add_scalar(x, -s);
}
Tensor operator-(float s, const Tensor& x) {
  return add_scalar(neg(x), s);
}
Tensor operator*(const Tensor& x, float s) {
  return mul_scalar(x, s);
}
Tensor operator*(float s, const Tensor& x) {
  return mul_scalar(x, s);
}
Tensor operator/(const Tensor& x, float s) {
  return mul_scalar(x, 1.0f / s);
}
Tensor operator/(float s, const Tensor& x) {
  return mul_scalar(pow(x, -1.0f), s);
}

}  // namespace gf
