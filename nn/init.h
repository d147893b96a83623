// Initial values for parameters. The Transformer initialises every matrix with Xavier/Glorot
// uniform, as the reference implementations do; vectors (biases, norm gains) start at 0 or 1.
#pragma once

#include "autograd/random.h"
#include "autograd/tensor.h"

namespace gf::nn::init {

// U(-a, a) with a = sqrt(6 / (fan_in + fan_out)), for a weight [fan_out, fan_in] (Glorot and
// Bengio 2010): it keeps the variance of activations and of gradients roughly equal from
// layer to layer. Throws ShapeError unless shape has rank 2.
Tensor xavier_uniform(const Shape& shape, Rng& rng);

}  // namespace gf::nn::init
