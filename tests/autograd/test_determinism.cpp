// The same seed gives the same run, bit for bit: initialisation, dropout masks, the order of
// every sum in forward and backward, and the parameter updates.
#include <catch2/catch.hpp>
#include <vector>

#include "autograd/graph.h"
#include "autograd/ops.h"
#include "autograd/random.h"

using namespace gf;

namespace {

// Trains a two-layer network with dropout for a few steps of gradient descent and returns
// the loss of every step.
std::vector<float> train(uint64_t seed) {
  Rng rng(seed);
  Tensor w1 = Tensor::randn({16, 64}, rng, 0.25f).set_requires_grad();
  Tensor b1 = Tensor::zeros({64}).set_requires_grad();
  Tensor w2 = Tensor::randn({64, 5}, rng, 0.125f).set_requires_grad();
  const Tensor x = Tensor::randn({256, 16}, rng);
  std::vector<int32_t> labels(256);
  for (int32_t& l : labels) l = static_cast<int32_t>(rng.below(5));
  const IndexTensor y = IndexTensor::from({256}, labels);
  std::vector<float> losses;
  for (int step = 0; step < 5; ++step) {
    const Tensor h = dropout(relu(matmul(x, w1) + b1), 0.1f, rng);
    const Tensor loss =
        cross_entropy(matmul(layer_norm(h, Tensor::ones({64}), Tensor::zeros({64})), w2), y,
                      {.label_smoothing = 0.1f});
    loss.backward();
    losses.push_back(loss.item());
    NoGrad no_grad;
    for (Tensor* p : {&w1, &b1, &w2}) {
      for (int64_t i = 0; i < p->numel(); ++i) p->data()[i] -= 0.5f * p->grad().data()[i];
      p->zero_grad();
    }
  }
  return losses;
}

}  // namespace

TEST_CASE("the same seed gives the same losses, bit for bit", "[autograd][determinism]") {
  const std::vector<float> first = train(17);
  CHECK(first == train(17));            // exact equality, not approximate
  CHECK(first != train(18));            // and the seed matters
  CHECK(first.back() < first.front());  // the steps really train
}
