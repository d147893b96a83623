// Cross-entropy with label smoothing and an ignored (padding) id, fused with log_softmax.
//
// For one position with logits x [V], target t and smoothing eps (§5.4 of the paper,
// "label smoothing of value eps_ls = 0.1"), the target distribution is
//   q_j = (1 - eps) [j == t] + eps / V          (PyTorch's convention: eps/V on every class)
// and the loss is
//   l = -sum_j q_j log p_j,   log p_j = x_j - lse(x),   lse(x) = log sum_j exp(x_j)
//     = lse(x) - (1 - eps) x_t - (eps / V) sum_j x_j          (since sum_j q_j = 1)
// The result is the mean of l over the N positions whose target is not ignore_index.
//
// Backward: dl/dx_j = p_j - q_j, so dL/dx_j = grad * (p_j - q_j) / N at counted positions
// and 0 at ignored ones. Fusing avoids forming log p (a [..., V] tensor) and the one-hot q.
#include <algorithm>
#include <cmath>
#include <vector>

#include "autograd/errors.h"
#include "autograd/graph.h"
#include "autograd/kernels/parallel.h"
#include "autograd/kernels/reduce.h"
#include "autograd/ops.h"

namespace gf {

Tensor cross_entropy(const Tensor& logits, const IndexTensor& targets,
                     const CrossEntropyOptions& options) {
  if (!targets.defined()) throw std::invalid_argument("cross_entropy: the targets are undefined");
  if (logits.rank() < 1)
    throw ShapeError("cross_entropy: logits must have a class dimension, got []");
  Shape expected =
      Shape(std::span<const int64_t>(logits.shape().begin(), logits.shape().end() - 1));
  if (!(targets.shape() == expected))
    throw ShapeError(fmt::format("cross_entropy: logits {} need targets of shape {}, got {}",
                                 logits.shape(), expected, targets.shape()));
  const float eps = options.label_smoothing;
  if (!(eps >= 0.0f && eps <= 1.0f))
    throw std::invalid_argument(
        fmt::format("cross_entropy: label_smoothing {} is outside [0, 1]", eps));
  const int64_t v = logits.shape().back(), rows = targets.numel();
  const int32_t* t = targets.data();
  int64_t counted = 0;
  for (int64_t row = 0; row < rows; ++row) {
    if (t[row] == options.ignore_index) continue;
    if (t[row] < 0 || t[row] >= v)
      throw IndexError(fmt::format(
          "cross_entropy: target {} at position {} is out of range [0, {})", t[row], row, v));
    ++counted;
  }

  // Rows are independent: each thread takes whole rows, and the per-row losses are summed
  // afterwards in row order, so the bits do not depend on the thread count.
  const float* x = logits.data();
  std::vector<float> lse(static_cast<size_t>(rows)), row_loss(static_cast<size_t>(rows));
  kernels::parallel_for(rows, 4 * v, [&](int64_t begin, int64_t end) {
    std::vector<float> scratch(static_cast<size_t>(v));
    for (int64_t row = begin; row < end; ++row) {
      if (t[row] == options.ignore_index) continue;
      const float* xr = x + row * v;
      const float m = kernels::max(xr, v);
      for (int64_t j = 0; j < v; ++j) scratch[static_cast<size_t>(j)] = std::exp(xr[j] - m);
      const float l = m + std::log(kernels::sum(scratch.data(), v));
      lse[static_cast<size_t>(row)] = l;
      float loss = l - (1.0f - eps) * xr[t[row]];
      if (eps > 0.0f) loss -= eps / static_cast<float>(v) * kernels::sum(xr, v);
      row_loss[static_cast<size_t>(row)] = loss;
    }
  });
  double total = 0.0;  // the sum of many per-position losses: double keeps it exact enough
  for (int64_t row = 0; row < rows; ++row)
    if (t[row] != options.ignore_index) total += row_loss[static_cast<size_t>(row)];
  Tensor y =
      Tensor::scalar(counted > 0 ? static_cast<float>(total / static_cast<double>(counted)) : 0.0f);

  record(y, "cross_entropy", {logits},
         [logits, targets, lse = std::move(lse), options, counted](const Tensor& grad_y) {
           const int64_t classes = logits.shape().back(), positions = targets.numel();
           Tensor grad_x = Tensor::empty(logits.shape());
           float* gx = grad_x.data();
           if (counted == 0) {
             std::fill_n(gx, grad_x.numel(), 0.0f);
             return Grads{grad_x};
           }
           const float scale = grad_y.item() / static_cast<float>(counted);
           const float smoothing = options.label_smoothing;
           const float off = smoothing / static_cast<float>(classes);  // q_j for j != t
           const float* logit = logits.data();
           const int32_t* target = targets.data();
           kernels::parallel_for(positions, 2 * classes, [&](int64_t begin, int64_t end) {
             for (int64_t row = begin; row < end; ++row) {
               float* gr = gx + row * classes;
               if (target[row] == options.ignore_index) {
                 std::fill_n(gr, classes, 0.0f);
                 continue;
               }
               const float* xr = logit + row * classes;
               const float l = lse[static_cast<size_t>(row)];
               for (int64_t j = 0; j < classes; ++j) gr[j] = scale * (std::exp(xr[j] - l) - off);
               gr[target[row]] -= scale * (1.0f - smoothing);
             }
           });
           return Grads{grad_x};
         });
  return y;
}

}  // namespace gf
