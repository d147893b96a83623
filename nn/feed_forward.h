// Position-wise feed-forward network (Vaswani et al. 2017, §3.3, eq. 2):
//   FFN(x) = max(0, x W_1 + b_1) W_2 + b_2
// the same two-layer MLP applied to every position separately: d_model -> d_ff -> d_model.
#pragma once

#include "nn/layers.h"

namespace gf::nn {

class PositionwiseFeedForward : public Module {
 public:
  PositionwiseFeedForward(int64_t d_model, int64_t d_ff, Rng& rng);
  Tensor forward(const Tensor& x) const;  // [..., D] -> [..., D]

  Linear linear1, linear2;  // [d_ff, d_model] and [d_model, d_ff]
};

// The paper's sinusoidal positions (§3.5):
//   PE(pos, 2i) = sin(pos / 10000^(2i / d_model)),  PE(pos, 2i+1) = cos(pos / 10000^(2i / d_model))
// Each dimension is a sinusoid of its own wavelength, from 2 pi to 10000 2 pi, so that
// PE(pos + k) is a linear function of PE(pos) for any fixed offset k. Not a parameter.
class PositionalEncoding {
 public:
  PositionalEncoding(int64_t max_len, int64_t d_model);
  // Rows offset .. offset + length - 1 of the table: [length, D]. Throws when they run past
  // max_len.
  Tensor rows(int64_t offset, int64_t length) const;
  const Tensor& table() const { return table_; }  // [max_len, D]

 private:
  Tensor table_;
};

}  // namespace gf::nn
