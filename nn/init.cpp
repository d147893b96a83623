#include "nn/init.h"

#include <fmt/format.h>

#include <cmath>

#include "autograd/errors.h"

namespace gf::nn::init {

Tensor xavier_uniform(const Shape& shape, Rng& rng) {
  if (shape.rank() != 2)
    throw ShapeError(fmt::format("xavier_uniform: expects a matrix shape, got {}", shape));
  const double fan_out = static_cast<double>(shape[0]), fan_in = static_cast<double>(shape[1]);
  const auto bound = static_cast<float>(std::sqrt(6.0 / (fan_in + fan_out)));
  return Tensor::uniform(shape, rng, -bound, bound);
}

}  // namespace gf::nn::init
