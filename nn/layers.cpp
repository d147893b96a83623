#include "nn/layers.h"

#include <fmt/format.h>

#include <stdexcept>

#include "autograd/ops.h"
#include "nn/init.h"

namespace gf::nn {

static void require_positive(const char* layer, const char* what, int64_t value) {
  if (value <= 0)
    throw std::invalid_argument(fmt::format("{}: {} must be positive, got {}", layer, what, value));
}

Linear::Linear(int64_t in, int64_t out, Rng& rng, bool with_bias) {
  require_positive("Linear", "in", in);
  require_positive("Linear", "out", out);
  weight = register_parameter("weight", init::xavier_uniform({out, in}, rng));
  if (with_bias) bias = register_parameter("bias", Tensor::zeros({out}));
}

Tensor Linear::forward(const Tensor& x) const {
  return linear(x, weight, bias);
}

Embedding::Embedding(int64_t vocab_size, int64_t dim, Rng& rng) {
  require_positive("Embedding", "vocab_size", vocab_size);
  require_positive("Embedding", "dim", dim);
  weight = register_parameter("weight", init::xavier_uniform({vocab_size, dim}, rng));
}

Tensor Embedding::forward(const IndexTensor& ids) const {
  return embedding(weight, ids);
}

LayerNorm::LayerNorm(int64_t dim, float eps_) : eps(eps_) {
  require_positive("LayerNorm", "dim", dim);
  weight = register_parameter("weight", Tensor::ones({dim}));
  bias = register_parameter("bias", Tensor::zeros({dim}));
}

Tensor LayerNorm::forward(const Tensor& x) const {
  return layer_norm(x, weight, bias, eps);
}

Dropout::Dropout(float p_, Rng& rng) : p(p_), rng_(rng.next_u64()) {
  if (!(p >= 0.0f && p < 1.0f))
    throw std::invalid_argument(fmt::format("Dropout: probability {} is outside [0, 1)", p));
}

Tensor Dropout::forward(const Tensor& x) {
  return training() && p > 0.0f ? dropout(x, p, rng_) : x;
}

}  // namespace gf::nn
