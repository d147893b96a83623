#include "nn/conv.h"

#include <fmt/format.h>

#include <stdexcept>
#include <vector>

#include "autograd/errors.h"
#include "autograd/ops.h"
#include "nn/init.h"

namespace gf::nn {

Conv1d::Conv1d(const Conv1dConfig& config_, Rng& rng) : config(config_) {
  const auto require_positive = [](const char* what, int64_t value) {
    if (value <= 0)
      throw std::invalid_argument(fmt::format("Conv1d: {} must be positive, got {}", what, value));
  };
  require_positive("in_channels", config.in_channels);
  require_positive("out_channels", config.out_channels);
  require_positive("kernel_size", config.kernel_size);
  require_positive("dilation", config.dilation);
  weight = register_parameter(
      "weight",
      init::xavier_uniform({config.out_channels, config.kernel_size * config.in_channels}, rng));
  if (config.bias) bias = register_parameter("bias", Tensor::zeros({config.out_channels}));
}

// Why unfold-then-one-linear rather than a sum of k linears over shifted inputs: both cost
// k * N * C * O multiply-adds, but the unfolded windows [B, N, k*C] make it ONE GEMM of
// [B*N, k*C] x [k*C, O], the shape GEMM kernels run fastest, and one recorded op instead of
// k products and k-1 additions. The price is k copies of x in memory, which is what im2col
// (the usual way to run a convolution as a GEMM) also pays.
Tensor Conv1d::forward(const Tensor& x) const {
  const Shape& xs = x.shape();
  if (xs.size() != 3 || xs[2] != config.in_channels || xs[1] < 1)
    throw ShapeError(
        fmt::format("Conv1d: expects x [B, N, {}] with N >= 1, got {}", config.in_channels, xs));
  const int64_t batch = xs[0], length = xs[1], channels = xs[2];
  const int64_t span = (config.kernel_size - 1) * config.dilation;
  const int64_t left = config.padding == Padding::Same ? span / 2 : span;
  const int64_t right = span - left;

  std::vector<Tensor> parts;
  if (left > 0) parts.push_back(Tensor::zeros({batch, left, channels}));
  parts.push_back(x);
  if (right > 0) parts.push_back(Tensor::zeros({batch, right, channels}));
  const Tensor padded = parts.size() == 1 ? x : concat(parts, 1);  // [B, N + span, C]

  // Tap j of output t reads padded position t + j*dilation.
  std::vector<Tensor> taps;
  for (int64_t j = 0; j < config.kernel_size; ++j)
    taps.push_back(slice(padded, 1, j * config.dilation, j * config.dilation + length));
  const Tensor windows = taps.size() == 1 ? taps[0] : concat(taps, 2);  // [B, N, k*C]
  return linear(windows, weight, bias);                                 // [B, N, O]
}

}  // namespace gf::nn
