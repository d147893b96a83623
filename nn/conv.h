// A 1-D convolution over the positions of a sequence, the convolutional layer of the paper's
// Table 1 (Vaswani et al. 2017, §4): each output position mixes the k input positions of its
// window, all positions at once (O(1) sequential operations) for O(k n d^2) work, but a signal
// needs a stack of layers to cross more than one window (path length O(n/k) for contiguous
// kernels, O(log_k n) for dilated ones, Kalchbrenner et al. 2016).
//
//   y[b, t, o] = bias[o] + sum_{j<k} sum_c weight[o, j*C + c] * x[b, t + j*dilation - left, c]
//
// with x taken as 0 outside [0, n). Channels last, like the rest of the library.
//
// Shape legend: B batch, N sequence length, C input channels, O output channels, k kernel size.
#pragma once

#include <cstdint>

#include "autograd/random.h"
#include "autograd/tensor.h"
#include "nn/module.h"

namespace gf::nn {

enum class Padding {
  Same,    // left = span / 2 zeros before, the rest after: output t is centred on input t
  Causal,  // all span zeros before: output t sees only inputs <= t (a decoder's convolution)
};

struct Conv1dConfig {
  int64_t in_channels = 0;
  int64_t out_channels = 0;
  int64_t kernel_size = 3;
  int64_t dilation = 1;  // gap between the taps; span = (kernel_size - 1) * dilation
  Padding padding = Padding::Same;
  bool bias = true;
};

// weight [O, k*C] (Xavier uniform), row o holding the k taps one after the other, each C wide;
// bias [O] (zeros). forward: x [B, N, C] -> [B, N, O]. Throws ShapeError when x is not
// [B, N, C]; the constructor throws std::invalid_argument for non-positive sizes.
class Conv1d : public Module {
 public:
  Conv1d(const Conv1dConfig& config, Rng& rng);
  Tensor forward(const Tensor& x) const;

  Conv1dConfig config;
  Tensor weight, bias;
};

}  // namespace gf::nn
