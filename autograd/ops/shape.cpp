// Ops that move numbers without changing them: reshape, permute, transpose, slice, concat.
// Their backward moves the gradient back the same way: the inverse reshape, the inverse
// permutation, a zero tensor with the slice filled in, one slice per concatenated input.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "autograd/errors.h"
#include "autograd/graph.h"
#include "autograd/ops.h"

namespace gf {

// reshape: the same numbers under a new shape, sharing storage.   dL/dx = reshape(grad, shape(x))
Tensor reshape(const Tensor& x, const Shape& shape) {
  Shape target = shape;
  int inferred = -1;
  int64_t known = 1;
  for (int d = 0; d < target.rank(); ++d) {
    if (target[d] == -1 && inferred < 0) {
      inferred = d;
    } else if (target[d] < 0) {
      throw ShapeError(
          fmt::format("reshape: invalid target shape {} (at most one -1, no other "
                      "negative dimension)",
                      shape));
    } else {
      known *= target[d];
    }
  }
  if (inferred >= 0) {
    if (known == 0 || x.numel() % known != 0)
      throw ShapeError(fmt::format("reshape: cannot reshape {} ({} elements) into {}", x.shape(),
                                   x.numel(), shape));
    target[inferred] = x.numel() / known;
  }
  if (target.numel() != x.numel())
    throw ShapeError(fmt::format("reshape: cannot reshape {} ({} elements) into {} ({} elements)",
                                 x.shape(), x.numel(), target, target.numel()));
  if (target == x.shape()) return x;
  Tensor y = x.view(target);
  record(y, "reshape", {x},
         [from = x.shape()](const Tensor& grad_y) { return Grads{reshape(grad_y, from)}; });
  return y;
}

// permute: y[i_0, ..., i_r] = x[the same indices, put back in x's order].
//   dL/dx = permute(grad, inverse of dims)
Tensor permute(const Tensor& x, const std::vector<int>& dims) {
  const int rank = x.rank();
  if (static_cast<int>(dims.size()) != rank)
    throw ShapeError(fmt::format("permute: {} dimensions given for a tensor of shape {}",
                                 dims.size(), x.shape()));
  std::vector<int> order(dims.size());
  std::vector<bool> seen(dims.size(), false);
  for (int d = 0; d < rank; ++d) {
    const int axis = normalize_axis("permute", dims[static_cast<size_t>(d)], rank);
    if (seen[static_cast<size_t>(axis)])
      throw ShapeError(fmt::format("permute: dimension {} is listed twice in [{}]", axis,
                                   fmt::join(dims, ", ")));
    seen[static_cast<size_t>(axis)] = true;
    order[static_cast<size_t>(d)] = axis;
  }
  Shape out;
  for (int axis : order) out.push_back(x.shape()[axis]);
  Tensor y = Tensor::empty(out);
  // Walk y in order, reading x through strides rearranged into y's dimension order.
  std::array<int64_t, Shape::kMaxRank> x_stride{}, read_stride{};
  int64_t s = 1;
  for (int d = rank - 1; d >= 0; --d) {
    x_stride[static_cast<size_t>(d)] = s;
    s *= x.shape()[d];
  }
  for (int d = 0; d < rank; ++d)
    read_stride[static_cast<size_t>(d)] =
        x_stride[static_cast<size_t>(order[static_cast<size_t>(d)])];
  const float* px = x.data();
  float* py = y.data();
  if (rank > 0 && y.numel() > 0) {
    const int last = rank - 1;
    const int64_t n = out[last], step = read_stride[static_cast<size_t>(last)];
    std::array<int64_t, Shape::kMaxRank> index{};
    int64_t offset = 0;
    for (int64_t row = 0, rows = y.numel() / n; row < rows; ++row, py += n) {
      for (int64_t i = 0; i < n; ++i) py[i] = px[offset + i * step];
      for (int d = last - 1; d >= 0; --d) {  // odometer over the outer dimensions
        const auto k = static_cast<size_t>(d);
        offset += read_stride[k];
        if (++index[k] < out[d]) break;
        offset -= read_stride[k] * out[d];
        index[k] = 0;
      }
    }
  } else if (rank == 0) {
    py[0] = px[0];
  }
  record(y, "permute", {x}, [order](const Tensor& grad_y) {
    std::vector<int> inverse(order.size());
    for (size_t d = 0; d < order.size(); ++d)
      inverse[static_cast<size_t>(order[d])] = static_cast<int>(d);
    return Grads{permute(grad_y, inverse)};
  });
  return y;
}

// transpose: a permute that swaps two dimensions (its gradient is permute's).
Tensor transpose(const Tensor& x, int dim0, int dim1) {
  const int a = normalize_axis("transpose", dim0, x.rank());
  const int b = normalize_axis("transpose", dim1, x.rank());
  std::vector<int> dims(static_cast<size_t>(x.rank()));
  for (int d = 0; d < x.rank(); ++d) dims[static_cast<size_t>(d)] = d;
  std::swap(dims[static_cast<size_t>(a)], dims[static_cast<size_t>(b)]);
  return permute(x, dims);
}

namespace {
// x viewed as [outer, n, inner] around axis.
struct Around {
  int64_t outer = 1, n = 1, inner = 1;
};
Around around(const Shape& shape, int axis) {
  Around v;
  for (int d = 0; d < shape.rank(); ++d) {
    if (d < axis) v.outer *= shape[d];
    if (d > axis) v.inner *= shape[d];
  }
  v.n = shape[axis];
  return v;
}
}  // namespace

// slice: y = x[..., start:end, ...] along axis.
//   dL/dx = zeros(shape(x)) with grad written into [start, end)
Tensor slice(const Tensor& x, int axis, int64_t start, int64_t end) {
  if (x.rank() == 0) throw ShapeError("slice: cannot slice a scalar");
  const int a = normalize_axis("slice", axis, x.rank());
  const int64_t n = x.shape()[a];
  if (start < 0 || end > n || start > end)
    throw IndexError(
        fmt::format("slice: range [{}, {}) is out of bounds for dimension {} of {} "
                    "(size {})",
                    start, end, a, x.shape(), n));
  Shape out = x.shape();
  out[a] = end - start;
  Tensor y = Tensor::empty(out);
  const Around v = around(x.shape(), a);
  const int64_t chunk = (end - start) * v.inner;
  for (int64_t o = 0; o < v.outer; ++o)
    std::copy_n(x.data() + (o * v.n + start) * v.inner, chunk, y.data() + o * chunk);
  record(y, "slice", {x}, [shape = x.shape(), v, start, chunk](const Tensor& grad_y) {
    Tensor grad_x = Tensor::zeros(shape);
    for (int64_t o = 0; o < v.outer; ++o)
      std::copy_n(grad_y.data() + o * chunk, chunk, grad_x.data() + (o * v.n + start) * v.inner);
    return Grads{grad_x};
  });
  return y;
}

// concat: y = [x_0 | x_1 | ...] along axis.   dL/dx_k = the slice of grad where x_k sits
Tensor concat(const std::vector<Tensor>& xs, int axis) {
  if (xs.empty()) throw ShapeError("concat: no tensors given");
  const Shape& first = xs[0].shape();
  if (first.rank() == 0) throw ShapeError("concat: cannot concatenate scalars");
  const int a = normalize_axis("concat", axis, first.rank());
  Shape out = first;
  out[a] = 0;
  for (size_t k = 0; k < xs.size(); ++k) {
    const Shape& s = xs[k].shape();
    bool fits = s.rank() == first.rank();
    for (int d = 0; fits && d < s.rank(); ++d) fits = d == a || s[d] == first[d];
    if (!fits)
      throw ShapeError(
          fmt::format("concat: tensor {} has shape {}, which does not match {} outside "
                      "dimension {}",
                      k, s, first, a));
    out[a] += s[a];
  }
  Tensor y = Tensor::empty(out);
  const Around v = around(out, a);
  std::vector<int64_t> starts, sizes;  // where each input begins along the axis, and its size
  int64_t start = 0;
  for (const Tensor& x : xs) {
    starts.push_back(start);
    sizes.push_back(x.shape()[a]);
    const int64_t chunk = x.shape()[a] * v.inner;
    for (int64_t o = 0; o < v.outer; ++o)
      std::copy_n(x.data() + o * chunk, chunk, y.data() + (o * v.n + start) * v.inner);
    start += x.shape()[a];
  }
  record(y, "concat", xs, [a, starts, sizes](const Tensor& grad_y) {
    Grads grads;
    for (size_t k = 0; k < starts.size(); ++k)
      grads.push_back(slice(grad_y, a, starts[k], starts[k] + sizes[k]));
    return grads;
  });
  return y;
}

}  // namespace gf
