// Batch normalisation (Ioffe and Szegedy 2015), for comparing against LayerNorm (lesson 05).
//
// Each feature (the last axis) is normalised with the mean and variance taken over every
// other position of the batch: for x [..., C], over all rows of x viewed as [N, C]. That is
// "channels last", unlike PyTorch's BatchNorm1d which takes [N, C, L]; the numbers are the same
// once the axes agree. In training mode the statistics come from the batch and the running
// buffers move towards them with momentum 0.1 (running = 0.9 running + 0.1 batch, the running
// variance taking the unbiased estimate, as PyTorch does); in eval mode the running buffers
// replace the batch statistics, so one example's output no longer depends on its batch.
//
// Padding: mask [...] (x's shape without its last axis), 1 where a position counts and 0 for
// padding, restricts the statistics to the positions that count. Without a mask every
// position counts. Padded positions are still normalised (with the real positions'
// statistics); whatever reads them must ignore them, as attention's padding mask does.
//
// Composed from differentiable ops (mean, sum, mul, sub, sqrt, div): no kernel of its own, so
// its gradient is that of the gradient-checked ops.
#pragma once

#include <cstdint>

#include "autograd/tensor.h"
#include "nn/module.h"

namespace gf::nn {

class BatchNorm : public Module {
 public:
  explicit BatchNorm(int64_t features, float eps = 1e-5f, float momentum = 0.1f);
  // x [..., C] -> [..., C]. mask, when given, has x's shape without the last axis.
  // Throws ShapeError for a last axis other than C or a mask of the wrong shape, and
  // std::invalid_argument in training mode when no position counts.
  Tensor forward(const Tensor& x, const Tensor& mask = {});

  Tensor weight, bias;               // [C]: ones and zeros, parameters
  Tensor running_mean, running_var;  // [C]: zeros and ones, buffers (no gradient)
  float eps, momentum;
  int64_t batches_seen = 0;  // training-mode forward calls so far
};

}  // namespace gf::nn
