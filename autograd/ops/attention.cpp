// Multi-head scaled dot-product attention as one op (Vaswani et al. 2017, §3.2.1-3.2.2):
//
//   head_h = softmax(Q_h K_h^T * scale + mask) V_h,   Q_h = columns [hK, (h+1)K) of q
//
// Composed from the ops in ops.h this takes about a dozen tape nodes and copies q, k and v
// (split the heads, transpose k) and the result (merge the heads back);
// nn::scaled_dot_product_attention is that readable version, and a test checks this op
// against it. Here nothing is copied: head h
// of q [B, T, D] is already a [T, K] matrix whose rows lie D floats apart, and the GEMM reads
// it in place through its leading dimension (lda = D). The output is written the same way,
// head h into its K columns, so it comes out already concatenated, ready for W^O.
//
// Shape legend: B batch, H heads, T query length, S key length, K = D / H per head for q and
// k, Kv = Dv / H per head for v and the output.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "autograd/errors.h"
#include "autograd/graph.h"
#include "autograd/kernels/gemm.h"
#include "autograd/kernels/parallel.h"
#include "autograd/kernels/reduce.h"
#include "autograd/ops.h"

namespace gf {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Where the operands of one (batch row, head) pair start, and how far apart their rows lie.
struct Layout {
  int64_t batch, heads, t, s;  // B, H, T, S
  int64_t d, dv;               // row lengths of q and k (D), of v and the output (Dv)
  int64_t k, kv;               // K = D / H, Kv = Dv / H
  int64_t k_batch, v_batch;    // B, or 1 when k (v) is shared by every batch row

  int64_t q_at(int64_t b, int64_t h) const { return b * t * d + h * k; }
  int64_t k_at(int64_t b, int64_t h) const { return (k_batch == 1 ? 0 : b) * s * d + h * k; }
  int64_t v_at(int64_t b, int64_t h) const { return (v_batch == 1 ? 0 : b) * s * dv + h * kv; }
  int64_t out_at(int64_t b, int64_t h) const { return b * t * dv + h * kv; }
  int64_t probs_at(int64_t b, int64_t h) const { return (b * heads + h) * t * s; }

  // The same with k and v unshared (batch B): where their gradients go before they are summed.
  Layout unshared() const {
    Layout full = *this;
    full.k_batch = full.v_batch = batch;
    return full;
  }
};

// The mask seen as [B, H, T, S]: element (b, h, i, j) is data[b sb + h sh + i st + j ss],
// with stride 0 along every dimension where the mask has size 1 (or lacks the dimension).
struct MaskView {
  const float* data = nullptr;
  int64_t sb = 0, sh = 0, st = 0, ss = 0;
};

Layout check_inputs(const Tensor& q, const Tensor& k, const Tensor& v, int64_t heads) {
  if (q.rank() != 3 || k.rank() != 3 || v.rank() != 3)
    throw ShapeError(fmt::format(
        "multi_head_attention: q {}, k {}, v {} must be [B, T, D], [B, S, D], [B, S, Dv]",
        q.shape(), k.shape(), v.shape()));
  const int64_t batch = q.dim(0), d = q.dim(2), dv = v.dim(2);
  if (k.dim(2) != d || k.dim(1) != v.dim(1))
    throw ShapeError(fmt::format(
        "multi_head_attention: q {}, k {}, v {} must be [B, T, D], [B, S, D], [B, S, Dv] "
        "(q and k share D, k and v share S)",
        q.shape(), k.shape(), v.shape()));
  // k and v may have batch 1 and serve every query row (beam search decodes many hypotheses
  // of one source sentence against one memory).
  const auto batch_fits = [batch](int64_t b) {
    return b == batch || b == 1;
  };
  if (!batch_fits(k.dim(0)) || !batch_fits(v.dim(0)))
    throw ShapeError(fmt::format(
        "multi_head_attention: the batch sizes of q {}, k {}, v {} differ (k and v may have "
        "batch 1, shared by every row of q)",
        q.shape(), k.shape(), v.shape()));
  if (heads <= 0 || d % heads != 0 || dv % heads != 0)
    throw ShapeError(fmt::format(
        "multi_head_attention: {} heads must be positive and divide the widths of q {} and v {}",
        heads, q.shape(), v.shape()));
  return {.batch = batch,
          .heads = heads,
          .t = q.dim(1),
          .s = k.dim(1),
          .d = d,
          .dv = dv,
          .k = d / heads,
          .kv = dv / heads,
          .k_batch = k.dim(0),
          .v_batch = v.dim(0)};
}

MaskView check_mask(const Tensor& mask, const Layout& l) {
  MaskView view;
  if (!mask.defined()) return view;
  const Shape scores{l.batch, l.heads, l.t, l.s};
  const Shape& m = mask.shape();
  bool fits = m.rank() <= 4;
  // Strides of the mask's own dimensions, aligned on the right with the scores' (NumPy rules).
  int64_t strides[4] = {0, 0, 0, 0}, stride = 1;
  for (int i = m.rank() - 1, axis = 3; fits && i >= 0; --i, --axis) {
    if (m[i] != scores[axis] && m[i] != 1) fits = false;
    strides[axis] = m[i] == 1 ? 0 : stride;
    stride *= m[i];
  }
  if (!fits)
    throw ShapeError(fmt::format(
        "multi_head_attention: mask {} does not broadcast to the scores {} ([B, H, T, S])", m,
        scores));
  view = {mask.data(), strides[0], strides[1], strides[2], strides[3]};
  return view;
}

// The operands as the GEMM reads them: q [B, T, D], k [B or 1, S, D], v [B or 1, S, Dv].
struct Operands {
  const float* q;
  const float* k;
  const float* v;
};

// Forward of one (batch row b, head h) pair, with Q_h [T, K], K_h [S, K], V_h [S, Kv] read in
// place from the operands:
//   P_h = softmax(mask(Q_h K_h^T * scale))     [T, S]  into probs at l.probs_at(b, h), kept
//                                                      for backward (heatmaps get a copy)
//   O_h = P_h V_h                              [T, Kv] into columns [h Kv, (h+1) Kv) of out
void attend(const Layout& l, const MaskView& m, float scale, int64_t b, int64_t h,
            const Operands& in, float* probs, float* out) {
  float* scores = probs + l.probs_at(b, h);
  // S_h = Q_h K_h^T: K_h is stored [S, K] with rows D apart, so it is read transposed.
  kernels::gemm({.trans_b = true,
                 .m = l.t,
                 .n = l.s,
                 .k = l.k,
                 .a = in.q + l.q_at(b, h),
                 .b = in.k + l.k_at(b, h),
                 .c = scores,
                 .lda = l.d,
                 .ldb = l.d});
  for (int64_t i = 0; i < l.t; ++i) {
    float* row = scores + i * l.s;
    // 1/sqrt(d_k) (passed in as scale) keeps the scores' variance near 1 (§3.2.1).
    for (int64_t j = 0; j < l.s; ++j) row[j] *= scale;
    if (m.data) {  // masked keys get -inf, so probability 0 (§3.2.3)
      const float* mask_row = m.data + b * m.sb + h * m.sh + i * m.st;
      for (int64_t j = 0; j < l.s; ++j)
        if (mask_row[j * m.ss] != 0.0f) row[j] = kNegInf;
    }
    // The softmax of ops/softmax.cpp, in place: a row with every key masked gives zeros.
    kernels::softmax_row(row, row, l.s);
  }
  // O_h = P_h V_h, written into head h's columns of out [B, T, Dv].
  kernels::gemm({.m = l.t,
                 .n = l.kv,
                 .k = l.s,
                 .a = scores,
                 .b = in.v + l.v_at(b, h),
                 .c = out + l.out_at(b, h),
                 .ldb = l.dv,
                 .ldc = l.dv});
}

// Where backward writes the gradients of q, k and v; null for an input that needs none.
// grad.k and grad.v are [B, S, ...] even when k or v is shared (batch 1).
struct InputGrads {
  float* q;
  float* k;
  float* v;
};

// Backward of one (b, h) pair. With dO_h the incoming gradient of O_h (in grad_y [B, T, Dv]),
// P_h the probabilities forward kept, and S_h = Q_h K_h^T * scale the scores:
//   dV_h = P_h^T dO_h                          [S, T] x [T, Kv]  (O = P V, as in matmul)
//   dP_h = dO_h V_h^T                          [T, Kv] x [Kv, S]
//   dS_h = P_h o (dP_h - rowsum(dP_h o P_h))   softmax's backward, row by row (ops/softmax.cpp)
//          * scale                             (and 0 where masked: P is 0 there)
//   dQ_h = dS_h K_h                            [T, S] x [S, K]
//   dK_h = dS_h^T Q_h                          [S, T] x [T, K]
// (o is the element-wise product.) Every transpose is the GEMM's trans flag, every head a
// leading dimension: the gradients are written straight into [B, T, D]-shaped tensors.
// ds is room for one [T, S] matrix: dP_h, then dS_h in its place.
void attend_backward(const Layout& l, float scale, int64_t b, int64_t h, const Operands& in,
                     const float* probs, const float* grad_y, const InputGrads& grad, float* ds) {
  const Layout full = l.unshared();  // where grad.k and grad.v lie
  const float* probs_h = probs + l.probs_at(b, h);
  const float* grad_out = grad_y + l.out_at(b, h);
  if (grad.v) {
    // dV_h [S, Kv] = P_h^T [S, T] dO_h [T, Kv]
    kernels::gemm({.trans_a = true,
                   .m = l.s,
                   .n = l.kv,
                   .k = l.t,
                   .a = probs_h,
                   .b = grad_out,
                   .c = grad.v + full.v_at(b, h),
                   .ldb = l.dv,
                   .ldc = l.dv});
  }
  if (!grad.q && !grad.k) return;
  // dP_h [T, S] = dO_h [T, Kv] V_h^T [Kv, S]
  kernels::gemm({.trans_b = true,
                 .m = l.t,
                 .n = l.s,
                 .k = l.kv,
                 .a = grad_out,
                 .b = in.v + l.v_at(b, h),
                 .c = ds,
                 .lda = l.dv,
                 .ldb = l.dv});
  // dS_h = P_h o (dP_h - rowsum(dP_h o P_h)) * scale, in place over dP_h
  for (int64_t i = 0; i < l.t; ++i) {
    float* row = ds + i * l.s;
    const float* probs_row = probs_h + i * l.s;
    const float along = kernels::dot(row, probs_row, l.s);
    for (int64_t j = 0; j < l.s; ++j) row[j] = probs_row[j] * (row[j] - along) * scale;
  }
  if (grad.q) {
    // dQ_h [T, K] = dS_h [T, S] K_h [S, K]
    kernels::gemm({.m = l.t,
                   .n = l.k,
                   .k = l.s,
                   .a = ds,
                   .b = in.k + l.k_at(b, h),
                   .c = grad.q + l.q_at(b, h),
                   .ldb = l.d,
                   .ldc = l.d});
  }
  if (grad.k) {
    // dK_h [S, K] = dS_h^T [S, T] Q_h [T, K]
    kernels::gemm({.trans_a = true,
                   .m = l.s,
                   .n = l.k,
                   .k = l.t,
                   .a = ds,
                   .b = in.q + l.q_at(b, h),
                   .c = grad.k + full.k_at(b, h),
                   .ldb = l.d,
                   .ldc = l.d});
  }
}

}  // namespace

// Each (batch row, head) pair is one attention of §3.2.1 over matrices read in place: forward
// is attend() for every pair, backward attend_backward(). One thread computes each pair from
// start to end, and pairs never share an output, so the result is the same for any number of
// threads.
Tensor multi_head_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                            int64_t heads, float scale, Tensor* probs) {
  const Layout l = check_inputs(q, k, v, heads);
  const MaskView m = check_mask(mask, l);

  Tensor y = Tensor::empty({l.batch, l.t, l.dv});
  Tensor p = Tensor::empty({l.batch, l.heads, l.t, l.s});
  const Operands in{q.data(), k.data(), v.data()};
  float* py = y.data();
  float* pp = p.data();
  const int64_t cost_per_pair = l.t * l.s * (l.k + l.kv + 8);
  kernels::parallel_for(l.batch * l.heads, cost_per_pair, [&](int64_t begin, int64_t end) {
    for (int64_t pair = begin; pair < end; ++pair)
      attend(l, m, scale, pair / l.heads, pair % l.heads, in, pp, py);
  });
  if (probs) *probs = p.clone();  // a copy: backward below reads p

  record(y, "attention", {q, k, v}, [q, k, v, p, l, scale](const Tensor& grad_y) {
    const bool need_q = q.requires_grad(), need_k = k.requires_grad(), need_v = v.requires_grad();
    // A shared k or v (batch 1) gets one gradient per batch row first, summed below.
    const Shape k_full{l.batch, l.s, l.d}, v_full{l.batch, l.s, l.dv};
    Tensor grad_q = need_q ? Tensor::empty(q.shape()) : Tensor();
    Tensor grad_k = need_k ? Tensor::empty(k_full) : Tensor();
    Tensor grad_v = need_v ? Tensor::empty(v_full) : Tensor();
    const Operands inputs{q.data(), k.data(), v.data()};
    const InputGrads grad{need_q ? grad_q.data() : nullptr, need_k ? grad_k.data() : nullptr,
                          need_v ? grad_v.data() : nullptr};
    const int64_t backward_cost = l.t * l.s * (2 * l.k + 2 * l.kv + 4);
    kernels::parallel_for(l.batch * l.heads, backward_cost, [&](int64_t begin, int64_t end) {
      std::vector<float> grad_scores(static_cast<size_t>(need_q || need_k ? l.t * l.s : 0));
      for (int64_t pair = begin; pair < end; ++pair)
        attend_backward(l, scale, pair / l.heads, pair % l.heads, inputs, p.data(), grad_y.data(),
                        grad, grad_scores.data());
    });
    // A k or v shared by every batch row receives the sum of the rows' gradients.
    if (need_k && l.k_batch != l.batch) grad_k = sum_to(grad_k, k.shape());
    if (need_v && l.v_batch != l.batch) grad_v = sum_to(grad_v, v.shape());
    return Grads{grad_q, grad_k, grad_v};
  });
  return y;
}

}  // namespace gf
