// Matrix product with broadcast batch dimensions. The arithmetic is in kernels/gemm.*; this
// file maps tensors onto it.
//
//   C = A B                       A [..., M, K], B [..., K, N], C [..., M, N]
//   dL/dA = dL/dC B^T             [M, N] x [N, K] -> [M, K]
//   dL/dB = A^T dL/dC             [K, M] x [M, N] -> [K, N]
//
// summed over the batch entries where A or B was broadcast. The transposes are not formed:
// the GEMM reads B (or A) transposed in place.
#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "autograd/errors.h"
#include "autograd/graph.h"
#include "autograd/kernels/broadcast.h"
#include "autograd/kernels/gemm.h"
#include "autograd/kernels/parallel.h"
#include "autograd/ops.h"

namespace gf {

namespace {

Shape batch_of(const Shape& s) {
  return Shape(std::span<const int64_t>(s.begin(), s.end() - 2));
}

// For each batch entry of the broadcast batch shape, the offset (in matrices) of the operand
// matrix it reads: operands that lack a batch dimension, or have it as 1, repeat.
struct BatchPlan {
  Shape batch;                            // broadcast batch shape
  std::vector<int64_t> a_index, b_index;  // matrix index into A and B per batch entry
};

BatchPlan plan_batches(const Shape& batch_a, const Shape& batch_b, const Shape& batch) {
  BatchPlan p{batch, {}, {}};
  const int64_t count = batch.numel();
  p.a_index.reserve(static_cast<size_t>(count));
  p.b_index.reserve(static_cast<size_t>(count));
  const auto plan = kernels::plan_broadcast<2>(batch, {batch_a, batch_b});
  kernels::for_each_row(
      plan, [&](const std::array<int64_t, 2>& at, int64_t n, const std::array<int64_t, 2>& step) {
        for (int64_t i = 0; i < n; ++i) {
          p.a_index.push_back(at[0] + i * step[0]);
          p.b_index.push_back(at[1] + i * step[1]);
        }
      });
  return p;
}

// C[c_index[e]] (+)= op(A[a_index[e]]) op(B[b_index[e]]) for every batch entry e. When no two
// entries write the same C matrix, the entries run in parallel (one whole GEMM per thread, so
// the bits do not depend on the split); otherwise in order, accumulating.
void batched_gemm(kernels::GemmArgs args, int64_t count, const std::vector<int64_t>& a_index,
                  const std::vector<int64_t>& b_index, const std::vector<int64_t>& c_index,
                  bool c_unique) {
  const int64_t a_size = args.m * args.k, b_size = args.k * args.n, c_size = args.m * args.n;
  const float* a = args.a;
  const float* b = args.b;
  float* c = args.c;
  auto one = [&](int64_t e, kernels::GemmArgs g) {
    const auto i = static_cast<size_t>(e);
    g.a = a + a_index[i] * a_size;
    g.b = b + b_index[i] * b_size;
    g.c = c + c_index[i] * c_size;
    kernels::gemm(g);
  };
  if (c_unique && count > 1) {
    kernels::parallel_for(count, a_size + b_size + c_size, [&](int64_t begin, int64_t end) {
      for (int64_t e = begin; e < end; ++e) one(e, args);
    });
  } else {
    for (int64_t e = 0; e < count; ++e) {
      kernels::GemmArgs g = args;
      g.accumulate = args.accumulate || !c_unique;  // C starts at zero when shared
      one(e, g);
    }
  }
}

std::vector<int64_t> iota(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = i;
  return v;
}

bool is_identity(const std::vector<int64_t>& index, int64_t count) {
  if (static_cast<int64_t>(index.size()) != count) return false;
  for (int64_t i = 0; i < count; ++i)
    if (index[static_cast<size_t>(i)] != i) return false;
  return true;
}

// A [..., M, K] times B [..., K, N]: the matrix sizes, each operand's batch dimensions and the
// batch shape they broadcast to, which with [M, N] appended is C's shape.
struct Product {
  int64_t m, k, n;
  Shape batch_a, batch_b, batch;
  Shape out;
};

Product check_shapes(const Shape& sa, const Shape& sb) {
  if (sa.rank() < 2 || sb.rank() < 2)
    throw ShapeError(
        fmt::format("matmul: expects tensors of rank 2 or more, got {} and {}", sa, sb));
  const int64_t m = sa[sa.rank() - 2], k = sa.back(), n = sb.back();
  if (sb[sb.rank() - 2] != k)
    throw ShapeError(
        fmt::format("matmul: cannot multiply {} by {} (inner dimensions {} and {} differ)", sa, sb,
                    k, sb[sb.rank() - 2]));
  Shape batch_a = batch_of(sa), batch_b = batch_of(sb);
  Shape batch;
  try {
    batch = broadcast_shapes("matmul", batch_a, batch_b);
  } catch (const ShapeError&) {
    throw ShapeError(
        fmt::format("matmul: batch dimensions of {} and {} cannot broadcast ({} vs {})", sa, sb,
                    batch_a, batch_b));
  }
  Shape out = batch;
  out.push_back(m);
  out.push_back(n);
  return {
      .m = m, .k = k, .n = n, .batch_a = batch_a, .batch_b = batch_b, .batch = batch, .out = out};
}

// [..., M, K] @ [K, N]: every batch row shares B, so fold the batch into M (one big GEMM).
Tensor matmul_folded(const Tensor& a, const Tensor& b, const Product& p) {
  const int64_t rows = p.batch.numel() * p.m, n = p.n, k = p.k;
  Tensor y = Tensor::empty(p.out);
  kernels::gemm({.m = rows, .n = n, .k = k, .a = a.data(), .b = b.data(), .c = y.data()});
  record(y, "matmul", {a, b}, [a, b, rows, n, k](const Tensor& grad_y) {
    Tensor grad_a, grad_b;  // left undefined for an input that needs no gradient
    if (a.requires_grad()) {
      // dA [rows, K] = dC [rows, N] B^T
      grad_a = Tensor::empty(a.shape());
      kernels::gemm({.trans_b = true,
                     .m = rows,
                     .n = k,
                     .k = n,
                     .a = grad_y.data(),
                     .b = b.data(),
                     .c = grad_a.data()});
    }
    if (b.requires_grad()) {
      // dB [K, N] = A^T [K, rows] dC [rows, N]: the sum over all batch rows
      grad_b = Tensor::empty(b.shape());
      kernels::gemm({.trans_a = true,
                     .m = k,
                     .n = n,
                     .k = rows,
                     .a = a.data(),
                     .b = grad_y.data(),
                     .c = grad_b.data()});
    }
    return Grads{grad_a, grad_b};
  });
  return y;
}

// Any other batch shapes: one GEMM per entry of the broadcast batch, each reading the matrices
// of A and B that the entry broadcasts from.
Tensor matmul_batched(const Tensor& a, const Tensor& b, const Product& p) {
  const int64_t m = p.m, n = p.n, k = p.k;
  Tensor y = Tensor::empty(p.out);
  const BatchPlan plan = plan_batches(p.batch_a, p.batch_b, p.batch);
  const int64_t count = p.batch.numel();
  const std::vector<int64_t> c_index = iota(count);
  batched_gemm({.m = m, .n = n, .k = k, .a = a.data(), .b = b.data(), .c = y.data()}, count,
               plan.a_index, plan.b_index, c_index, /*c_unique=*/true);
  record(y, "matmul", {a, b}, [a, b, plan, m, n, k](const Tensor& grad_y) {
    const int64_t entries = plan.batch.numel();
    const std::vector<int64_t> g_index = iota(entries);
    const bool a_unique = is_identity(plan.a_index, batch_of(a.shape()).numel());
    const bool b_unique = is_identity(plan.b_index, batch_of(b.shape()).numel());
    Tensor grad_a, grad_b;  // left undefined for an input that needs no gradient
    if (a.requires_grad()) {
      // dA[e] = dC[e] B[e]^T, written to A's matrix of entry e (summed where A was repeated)
      grad_a = a_unique ? Tensor::empty(a.shape()) : Tensor::zeros(a.shape());
      batched_gemm({.trans_b = true,
                    .m = m,
                    .n = k,
                    .k = n,
                    .a = grad_y.data(),
                    .b = b.data(),
                    .c = grad_a.data()},
                   entries, g_index, plan.b_index, plan.a_index, a_unique);
    }
    if (b.requires_grad()) {
      // dB[e] = A[e]^T dC[e]
      grad_b = b_unique ? Tensor::empty(b.shape()) : Tensor::zeros(b.shape());
      batched_gemm({.trans_a = true,
                    .m = k,
                    .n = n,
                    .k = m,
                    .a = a.data(),
                    .b = grad_y.data(),
                    .c = grad_b.data()},
                   entries, plan.a_index, g_index, plan.b_index, b_unique);
    }
    return Grads{grad_a, grad_b};
  });
  return y;
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  const Product p = check_shapes(a.shape(), b.shape());
  if (p.batch_b.numel() == 1 && p.batch == p.batch_a) return matmul_folded(a, b, p);
  return matmul_batched(a, b, p);
}

// linear: y = x W^T + b, with x viewed as [R, I] (R = all leading dimensions together).
//   dL/dx [R, I] = dL/dy [R, O] W [O, I]
//   dL/dW [O, I] = dL/dy^T [O, R] x [R, I]     (summed over all R rows)
//   dL/db [O]    = sum over rows of dL/dy
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  if (weight.rank() != 2)
    throw ShapeError(fmt::format("linear: weight must be [out, in], got {}", weight.shape()));
  const int64_t out = weight.shape()[0], in = weight.shape()[1];
  if (x.rank() < 1 || x.shape().back() != in)
    throw ShapeError(fmt::format("linear: input {} does not end in the weight's {} inputs ({})",
                                 x.shape(), in, weight.shape()));
  if (bias.defined() && !(bias.shape() == Shape{out}))
    throw ShapeError(
        fmt::format("linear: bias {} does not match the weight's {} outputs", bias.shape(), out));
  const int64_t rows = x.numel() / std::max<int64_t>(in, 1);
  Shape y_shape = x.shape();
  y_shape[y_shape.rank() - 1] = out;
  Tensor y = Tensor::empty(y_shape);
  float* py = y.data();
  if (bias.defined()) {  // start C from the bias in every row, then accumulate x W^T onto it
    for (int64_t r = 0; r < rows; ++r) std::copy_n(bias.data(), out, py + r * out);
  }
  kernels::gemm({.trans_b = true,
                 .m = rows,
                 .n = out,
                 .k = in,
                 .a = x.data(),
                 .b = weight.data(),
                 .c = py,
                 .accumulate = bias.defined()});
  record(y, "linear", {x, weight, bias}, [x, weight, bias, rows, in, out](const Tensor& grad_y) {
    Tensor grad_x, grad_w, grad_b;
    if (x.requires_grad()) {
      grad_x = Tensor::empty(x.shape());
      kernels::gemm({.m = rows,
                     .n = in,
                     .k = out,
                     .a = grad_y.data(),
                     .b = weight.data(),
                     .c = grad_x.data()});
    }
    if (weight.requires_grad()) {
      grad_w = Tensor::empty(weight.shape());
      kernels::gemm({.trans_a = true,
                     .m = out,
                     .n = in,
                     .k = rows,
                     .a = grad_y.data(),
                     .b = x.data(),
                     .c = grad_w.data()});
    }
    if (bias.defined() && bias.requires_grad()) grad_b = sum_to(grad_y, bias.shape());
    return Grads{grad_x, grad_w, grad_b};
  });
  return y;
}

}  // namespace gf
