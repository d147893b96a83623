// A GRU's loop over time as one op (Cho et al. 2014, in PyTorch's form; nn/recurrent.h):
//
//   [a_r; a_z; a_n] = W_hh h_{t-1} + b_hh                    one product per step
//   r = sigmoid(x_r + a_r),  z = sigmoid(x_z + a_z),  n = tanh(x_n + r a_n)
//   h_t = n + z (h_{t-1} - n)
//
// where x_t = W_ih x + b_ih arrives computed for every t at once (one GEMM before the loop).
// nn::GRU::forward_step_by_step is the readable version: each step a handful of tape nodes, and
// a test checks this op against it. The forward is the same loop either way; the saving is in
// backward. The gradient of W_hh is a sum over time, sum_t dA_t^T h_{t-1}, one [3H, H] outer
// product per step. On the tape each is a GEMM of depth B into a fresh [3H, H] tensor, then
// added to the sum: T passes over the matrix, 3 MB at H = 512, more than a core's L2. Here the
// dA_t of every step are kept, and the sum is one GEMM of depth T B after the loop, as for the
// input projections. bench/attn_scaling's GRU (H = 512, batch 1, T = 2048, two cores) took
// 4.7 s for forward + backward step by step, 0.67 s with this op.
//
// Derivatives, with g = dL/dh_t (from the output at t and from step t + 1):
//   dn = g (1 - z),   dz = g (h_{t-1} - n),   and g z goes straight to h_{t-1}
//   dx_n = dn (1 - n^2),   da_n = dx_n r,   dr = dx_n a_n
//   dx_r = da_r = dr r (1 - r),   dx_z = da_z = dz z (1 - z)
//   dh_{t-1} = g z + dA_t W_hh,   dW_hh = sum_t dA_t^T h_{t-1},   db_hh = sum_t dA_t
// A row whose sequence has ended (t >= its length) keeps its state: g passes through, dA = 0.
//
// Shape legend: B batch, T steps, H hidden width, G = 3 H (the gates r, z, n stacked).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "autograd/errors.h"
#include "autograd/graph.h"
#include "autograd/kernels/gemm.h"
#include "autograd/ops.h"
#include "autograd/ops/pointwise.h"

namespace gf {

namespace {

struct Sizes {
  int64_t batch, steps, hidden, gates;  // B, T, H, G = 3 H
};

Sizes check_inputs(const Tensor& x, const Tensor& h0, const Tensor& w, const Tensor& b,
                   const std::vector<int64_t>& lengths) {
  if (h0.rank() != 2 || x.rank() != 3)
    throw ShapeError(
        fmt::format("gru: expects projected inputs [B, T, 3H] and h0 [B, H], got {} "
                    "and {}",
                    x.shape(), h0.shape()));
  const Sizes s{x.dim(0), x.dim(1), h0.dim(1), 3 * h0.dim(1)};
  if (x.dim(0) != h0.dim(0) || x.dim(2) != s.gates || s.steps < 1)
    throw ShapeError(
        fmt::format("gru: projected inputs {} do not fit h0 {} (expected [{}, T >= 1, "
                    "{}])",
                    x.shape(), h0.shape(), h0.dim(0), s.gates));
  if (!(w.shape() == Shape{s.gates, s.hidden}) || !(b.shape() == Shape{s.gates}))
    throw ShapeError(fmt::format("gru: weight_hh {} and bias_hh {} must be [{}, {}] and [{}]",
                                 w.shape(), b.shape(), s.gates, s.hidden, s.gates));
  // Wrong lengths are wrong values, not shapes: std::invalid_argument, as nn::GRU throws.
  if (!lengths.empty() && static_cast<int64_t>(lengths.size()) != s.batch)
    throw std::invalid_argument(
        fmt::format("gru: {} lengths for a batch of {}", lengths.size(), s.batch));
  for (const int64_t length : lengths)
    if (length < 1 || length > s.steps)
      throw std::invalid_argument(
          fmt::format("gru: length {} is outside [1, {}]", length, s.steps));
  return s;
}

// What backward needs: the sizes, the lengths, h_{t-1} for every t [T, B, H] (time-major, so
// that step t's rows are contiguous: the operand of the final GEMM), r, z, n and a_n [T, B, 4H].
struct Tape {
  Sizes s;
  std::vector<int64_t> lengths;
  Tensor h_prev, saved, weight_hh;

  bool running(int64_t b, int64_t t) const {
    return lengths.empty() || t < lengths[static_cast<size_t>(b)];
  }
};

// Step t: A = h_{t-1} W_hh^T + b_hh (as linear() computes it, C starting from the bias), then
// the gates and h_t into y, kept gates into the tape, h_t into the tape's h_prev for t + 1.
void forward_step(Tape& tape, int64_t t, const float* projected_x, const float* w,
                  const float* bias, std::vector<float>& a, float* y) {
  const auto [batch, steps, hidden, gates] = tape.s;
  const float* h = tape.h_prev.data() + t * batch * hidden;
  for (int64_t b = 0; b < batch; ++b) std::copy_n(bias, gates, a.data() + b * gates);
  kernels::gemm({.trans_b = true,
                 .m = batch,
                 .n = gates,
                 .k = hidden,
                 .a = h,
                 .b = w,
                 .c = a.data(),
                 .accumulate = true});
  for (int64_t b = 0; b < batch; ++b) {
    const float* x = projected_x + (b * steps + t) * gates;
    const float* ab = a.data() + b * gates;
    const float* hb = h + b * hidden;
    float* kept = tape.saved.data() + (t * batch + b) * 4 * hidden;
    float* out = y + (b * steps + t) * hidden;
    const bool live = tape.running(b, t);
    for (int64_t j = 0; j < hidden; ++j) {
      const float r = detail::stable_sigmoid(x[j] + ab[j]);
      const float z = detail::stable_sigmoid(x[hidden + j] + ab[hidden + j]);
      const float a_n = ab[2 * hidden + j];
      const float n = std::tanh(x[2 * hidden + j] + r * a_n);
      out[j] = live ? n + z * (hb[j] - n) : hb[j];
      kept[j] = r;
      kept[hidden + j] = z;
      kept[2 * hidden + j] = n;
      kept[3 * hidden + j] = a_n;
    }
    if (t + 1 < steps)
      std::copy_n(out, hidden, tape.h_prev.data() + ((t + 1) * batch + b) * hidden);
  }
}

// Row b of step t backward: g = dL/dh_t is g_out + dh; writes dx_t, dA_t and the part g z of
// dL/dh_{t-1} (dA_t W_hh is added after, for all rows at once).
void backward_row(const Tape& tape, int64_t t, int64_t b, const float* g_out, const float* dh,
                  float* gx, float* ga, float* to_prev) {
  const int64_t hidden = tape.s.hidden, gates = tape.s.gates;
  if (!tape.running(b, t)) {  // the state was kept: all of g goes to h_{t-1}
    for (int64_t j = 0; j < hidden; ++j) to_prev[j] = g_out[j] + dh[j];
    std::fill_n(gx, gates, 0.0f);
    std::fill_n(ga, gates, 0.0f);
    return;
  }
  const float* kept = tape.saved.data() + (t * tape.s.batch + b) * 4 * hidden;
  const float* h = tape.h_prev.data() + (t * tape.s.batch + b) * hidden;
  for (int64_t j = 0; j < hidden; ++j) {
    const float g = g_out[j] + dh[j];
    const float r = kept[j], z = kept[hidden + j], n = kept[2 * hidden + j];
    const float a_n = kept[3 * hidden + j];
    const float dx_n = g * (1.0f - z) * (1.0f - n * n);
    const float dx_r = dx_n * a_n * r * (1.0f - r);
    const float dx_z = g * (h[j] - n) * z * (1.0f - z);
    gx[j] = ga[j] = dx_r;
    gx[hidden + j] = ga[hidden + j] = dx_z;
    gx[2 * hidden + j] = dx_n;
    ga[2 * hidden + j] = dx_n * r;
    to_prev[j] = g * z;
  }
}

// The steps in reverse, then W_hh's and b_hh's gradients over all of them at once.
Grads backward(const Tape& tape, const Tensor& grad_y, bool need_w, bool need_b) {
  const auto [batch, steps, hidden, gates] = tape.s;
  Tensor grad_x = Tensor::empty({batch, steps, gates});
  Tensor grad_a = Tensor::empty({steps, batch, gates});  // dA_t, time-major
  // dA_t W_hh reads W_hh^T [H, G] a row at a time: gemm's path for products with few rows.
  const Tensor w_t = transpose(tape.weight_hh, 0, 1);
  std::vector<float> dh(static_cast<size_t>(batch * hidden), 0.0f), dh_prev(dh.size());
  for (int64_t t = steps - 1; t >= 0; --t) {
    float* ga = grad_a.data() + t * batch * gates;
    for (int64_t b = 0; b < batch; ++b)
      backward_row(tape, t, b, grad_y.data() + (b * steps + t) * hidden, dh.data() + b * hidden,
                   grad_x.data() + (b * steps + t) * gates, ga + b * gates,
                   dh_prev.data() + b * hidden);
    kernels::gemm({.trans_b = true,
                   .m = batch,
                   .n = hidden,
                   .k = gates,
                   .a = ga,
                   .b = w_t.data(),
                   .c = dh_prev.data(),
                   .accumulate = true});
    dh.swap(dh_prev);
  }
  Tensor grad_w, grad_b;
  if (need_w) {  // sum_t dA_t^T h_{t-1}: one GEMM of depth T B
    grad_w = Tensor::empty({gates, hidden});
    kernels::gemm({.trans_a = true,
                   .m = gates,
                   .n = hidden,
                   .k = steps * batch,
                   .a = grad_a.data(),
                   .b = tape.h_prev.data(),
                   .c = grad_w.data()});
  }
  if (need_b) grad_b = sum(reshape(grad_a, {steps * batch, gates}), 0);
  return Grads{grad_x, Tensor::from({batch, hidden}, std::move(dh)), grad_w, grad_b};
}

}  // namespace

Tensor gru(const Tensor& projected_x, const Tensor& h0, const Tensor& weight_hh,
           const Tensor& bias_hh, const std::vector<int64_t>& lengths) {
  const Sizes s = check_inputs(projected_x, h0, weight_hh, bias_hh, lengths);
  Tape tape{.s = s,
            .lengths = lengths,
            .h_prev = Tensor::empty({s.steps, s.batch, s.hidden}),
            .saved = Tensor::empty({s.steps, s.batch, 4 * s.hidden}),
            .weight_hh = weight_hh.detach()};
  Tensor y = Tensor::empty({s.batch, s.steps, s.hidden});
  std::vector<float> a(static_cast<size_t>(s.batch * s.gates));
  std::copy_n(h0.data(), s.batch * s.hidden, tape.h_prev.data());
  for (int64_t t = 0; t < s.steps; ++t)
    forward_step(tape, t, projected_x.data(), weight_hh.data(), bias_hh.data(), a, y.data());
  record(y, "gru", {projected_x, h0, weight_hh, bias_hh},
         [tape = std::move(tape), need_w = weight_hh.requires_grad(),
          need_b = bias_hh.requires_grad()](const Tensor& grad_y) {
           return backward(tape, grad_y, need_w, need_b);
         });
  return y;
}

}  // namespace gf
