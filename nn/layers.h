// The basic layers: Linear, Embedding, LayerNorm, Dropout. Each is a Module whose parameters
// carry PyTorch's names (weight, bias), so checkpoints read the same in both.
//
// Shape legend: [..., I] any leading dimensions then I inputs; V vocabulary, D model width.
#pragma once

#include <cstdint>

#include "autograd/random.h"
#include "autograd/tensor.h"
#include "nn/module.h"

namespace gf::nn {

// y = x W^T + b. weight [out, in] (Xavier uniform), bias [out] (zeros) unless with_bias = false.
class Linear : public Module {
 public:
  Linear(int64_t in, int64_t out, Rng& rng, bool with_bias = true);
  Tensor forward(const Tensor& x) const;  // [..., in] -> [..., out]

  Tensor weight, bias;  // bias is undefined when the layer has none
};

// Row lookup: ids [...] -> [..., D]. weight [V, D], Xavier uniform.
class Embedding : public Module {
 public:
  Embedding(int64_t vocab_size, int64_t dim, Rng& rng);
  Tensor forward(const IndexTensor& ids) const;

  Tensor weight;
};

// Normalises the last axis to mean 0 and variance 1, then scales by weight (ones) and shifts
// by bias (zeros). eps guards the division; PyTorch's default is 1e-5.
class LayerNorm : public Module {
 public:
  explicit LayerNorm(int64_t dim, float eps = 1e-5f);
  Tensor forward(const Tensor& x) const;

  Tensor weight, bias;
  float eps;
};

// Zeroes each element with probability p in training mode and scales the rest by 1/(1-p);
// the identity in eval mode. It owns a generator seeded from the one given at construction,
// so that a model's dropout masks follow from its seed alone.
class Dropout : public Module {
 public:
  Dropout(float p, Rng& rng);
  Tensor forward(const Tensor& x);
  Rng* random_stream() override { return &rng_; }  // the masks' generator

  float p;

 private:
  Rng rng_;
};

}  // namespace gf::nn
