#include "nn/batch_norm.h"

#include <fmt/format.h>

#include <stdexcept>

#include "autograd/errors.h"
#include "autograd/graph.h"
#include "autograd/ops.h"

namespace gf::nn {

BatchNorm::BatchNorm(int64_t features, float eps_, float momentum_)
    : eps(eps_), momentum(momentum_) {
  if (features <= 0)
    throw std::invalid_argument(
        fmt::format("BatchNorm: features must be positive, got {}", features));
  weight = register_parameter("weight", Tensor::ones({features}));
  bias = register_parameter("bias", Tensor::zeros({features}));
  running_mean = Tensor::zeros({features});
  running_var = Tensor::ones({features});
}

Tensor BatchNorm::forward(const Tensor& x, const Tensor& mask) {
  const int64_t c = weight.numel();
  if (x.rank() < 1 || x.shape().back() != c)
    throw ShapeError(fmt::format("BatchNorm: expected [..., {}], got {}", c, x.shape()));
  const int64_t n = x.numel() / c;
  if (mask.defined() && mask.numel() != n)
    throw ShapeError(
        fmt::format("BatchNorm: mask {} does not match input {}", mask.shape(), x.shape()));
  const Tensor rows = reshape(x, {n, c});  // [N, C]: one row per position
  Tensor mu, var;                          // [1, C]
  if (!training()) {
    mu = reshape(running_mean, {1, c});
    var = reshape(running_var, {1, c});
  } else {
    // mean_c = sum_n m_n x_nc / sum_n m_n;  var_c = sum_n m_n (x_nc - mean_c)^2 / sum_n m_n
    // (m_n = 1 for every row without a mask). The biased variance normalises, as in PyTorch.
    Tensor count;
    if (mask.defined()) {
      const Tensor m = reshape(mask.detach(), {n, 1});
      count = sum(m);
      if (count.item() <= 0.0f)
        throw std::invalid_argument("BatchNorm: the mask leaves no position to take statistics");
      mu = sum(rows * m, 0, true) / count;
      var = sum(pow(rows - mu, 2.0f) * m, 0, true) / count;
    } else {
      count = Tensor::scalar(static_cast<float>(n));
      mu = mean(rows, 0, true);
      var = mean(pow(rows - mu, 2.0f), 0, true);
    }
    // The running buffers: no gradient, the unbiased variance.
    NoGrad no_grad;
    const float k = count.item();
    const float unbias = k > 1.0f ? k / (k - 1.0f) : 1.0f;
    for (int64_t j = 0; j < c; ++j) {
      running_mean.data()[j] = (1.0f - momentum) * running_mean.data()[j] + momentum * mu.data()[j];
      running_var.data()[j] =
          (1.0f - momentum) * running_var.data()[j] + momentum * var.data()[j] * unbias;
    }
    ++batches_seen;
  }
  const Tensor y = (rows - mu) / sqrt(var + eps) * weight + bias;
  return reshape(y, x.shape());
}

}  // namespace gf::nn
