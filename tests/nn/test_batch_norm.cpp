#include <catch2/catch.hpp>
#include <cmath>

#include "autograd/errors.h"
#include "autograd/ops.h"
#include "nn/batch_norm.h"

using namespace gf;
using namespace gf::nn;

TEST_CASE("BatchNorm normalises each feature over the batch, by hand", "[nn][batch_norm]") {
  BatchNorm bn(2);
  // Feature 0: 1, 3 (mean 2, biased variance 1); feature 1: 10, 10 (mean 10, variance 0).
  const Tensor x = Tensor::from({2, 2}, {1, 10, 3, 10});
  const Tensor y = bn.forward(x);
  const float s = 1.0f / std::sqrt(1.0f + 1e-5f);
  CHECK(y.at({0, 0}) == Approx(-s));
  CHECK(y.at({1, 0}) == Approx(s));
  CHECK(y.at({0, 1}) == Approx(0.0f).margin(1e-6));
  const NamedTensors named = bn.named_parameters();
  REQUIRE(named.size() == 2);
  CHECK(named[0].first == "weight");
  CHECK(named[1].first == "bias");
  // Running statistics: 0.9 * 0 + 0.1 * 2 and 0.9 * 1 + 0.1 * (unbiased variance 2).
  CHECK(bn.running_mean.at({0}) == Approx(0.2f));
  CHECK(bn.running_mean.at({1}) == Approx(1.0f));
  CHECK(bn.running_var.at({0}) == Approx(1.1f));
  CHECK(bn.running_var.at({1}) == Approx(0.9f));
  CHECK(bn.batches_seen == 1);
}

TEST_CASE("BatchNorm uses its running statistics in eval mode", "[nn][batch_norm]") {
  BatchNorm bn(1);
  bn.weight.data()[0] = 2.0f;
  bn.bias.data()[0] = 0.5f;
  bn.running_mean.data()[0] = 4.0f;
  bn.running_var.data()[0] = 9.0f;
  bn.eval();
  const Tensor y = bn.forward(Tensor::from({3, 1}, {4, 7, 1}));
  const float s = 2.0f / std::sqrt(9.0f + 1e-5f);
  CHECK(y.at({0, 0}) == Approx(0.5f));
  CHECK(y.at({1, 0}) == Approx(0.5f + 3.0f * s));
  CHECK(y.at({2, 0}) == Approx(0.5f - 3.0f * s));
  CHECK(bn.running_mean.at({0}) == 4.0f);  // untouched
  CHECK(bn.batches_seen == 0);
  // One example alone gives the same output as inside its batch.
  CHECK(bn.forward(Tensor::from({1, 1}, {7})).at({0, 0}) == y.at({1, 0}));
}

TEST_CASE("BatchNorm with a mask ignores padded positions", "[nn][batch_norm]") {
  BatchNorm bn(1);
  // [B = 2, T = 3, C = 1]; the second sequence has one real token, then padding (zeros).
  const Tensor x = Tensor::from({2, 3, 1}, {1, 2, 3, 6, 0, 0});
  const Tensor mask = Tensor::from({2, 3}, {1, 1, 1, 1, 0, 0});
  const Tensor y = bn.forward(x, mask);
  // Real values 1, 2, 3, 6: mean 3, biased variance (4 + 1 + 0 + 9) / 4 = 3.5.
  const float s = 1.0f / std::sqrt(3.5f + 1e-5f);
  CHECK(y.at({0, 0, 0}) == Approx(-2.0f * s));
  CHECK(y.at({1, 0, 0}) == Approx(3.0f * s));
  CHECK(bn.running_mean.at({0}) == Approx(0.3f));
  CHECK(bn.running_var.at({0}) == Approx(0.9f + 0.1f * 14.0f / 3.0f));
  // Unmasked, the two zeros drag the mean down to 2.
  BatchNorm plain(1);
  plain.forward(x);
  CHECK(plain.running_mean.at({0}) == Approx(0.2f));
  CHECK_THROWS_AS(bn.forward(x, Tensor::zeros({2, 2})), ShapeError);
  CHECK_THROWS_AS(bn.forward(x, Tensor::zeros({2, 3})), std::invalid_argument);
  CHECK_THROWS_AS(bn.forward(Tensor::zeros({2, 2})), ShapeError);
}

TEST_CASE("BatchNorm's gradient flows through the batch statistics", "[nn][batch_norm]") {
  BatchNorm bn(1);
  Tensor x = Tensor::from({3, 1}, {1, 2, 4});
  x.set_requires_grad();
  // The outputs of a normalised feature sum to 0 whatever x is, so d(sum y)/dx = 0; the
  // weight's gradient is sum of the normalised values = 0 too, the bias's is N = 3.
  sum(bn.forward(x)).backward();
  for (float g : x.grad().to_vector()) CHECK(g == Approx(0.0f).margin(1e-5));
  CHECK(bn.bias.grad().at({0}) == Approx(3.0f));
  CHECK(bn.weight.grad().at({0}) == Approx(0.0f).margin(1e-5));
}
