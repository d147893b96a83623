#include "nn/feed_forward.h"

#include <fmt/format.h>

#include <cmath>

#include "autograd/errors.h"
#include "autograd/ops.h"

namespace gf::nn {

PositionwiseFeedForward::PositionwiseFeedForward(int64_t d_model, int64_t d_ff, Rng& rng)
    : linear1(d_model, d_ff, rng), linear2(d_ff, d_model, rng) {
  register_module("linear1", linear1);
  register_module("linear2", linear2);
}

Tensor PositionwiseFeedForward::forward(const Tensor& x) const {
  return linear2.forward(relu(linear1.forward(x)));
}

PositionalEncoding::PositionalEncoding(int64_t max_len, int64_t d_model)
    : table_(Tensor::empty({max_len, d_model})) {
  float* pe = table_.data();
  for (int64_t pos = 0; pos < max_len; ++pos)
    for (int64_t i = 0; i < d_model; i += 2) {
      // Computed in double: for long tables pos * frequency loses digits in float.
      const double angle =
          static_cast<double>(pos) *
          std::pow(10000.0, -static_cast<double>(i) / static_cast<double>(d_model));
      pe[pos * d_model + i] = static_cast<float>(std::sin(angle));
      if (i + 1 < d_model) pe[pos * d_model + i + 1] = static_cast<float>(std::cos(angle));
    }
}

Tensor PositionalEncoding::rows(int64_t offset, int64_t length) const {
  const int64_t max_len = table_.dim(0);
  if (offset < 0 || length < 0 || offset + length > max_len)
    throw IndexError(
        fmt::format("positional encoding: positions {} to {} exceed max_len {} (raise max_len)",
                    offset, offset + length - 1, max_len));
  return slice(table_, 0, offset, offset + length);
}

}  // namespace gf::nn
