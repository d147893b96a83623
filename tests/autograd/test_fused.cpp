// The fused ops against hand-computed values and against the same functions composed from
// simpler ops (values and gradients).
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "autograd/errors.h"
#include "autograd/graph.h"
#include "autograd/ops.h"
#include "autograd/random.h"

using namespace gf;
using Catch::Matchers::Contains;

namespace {

// Values and, with a random seed gradient, input gradients of two functions agree.
void check_same_function(const std::function<Tensor(const Tensor&)>& fused,
                         const std::function<Tensor(const Tensor&)>& composite, const Tensor& input,
                         float tolerance) {
  Tensor x1 = input.clone().set_requires_grad(), x2 = input.clone().set_requires_grad();
  const Tensor y1 = fused(x1), y2 = composite(x2);
  REQUIRE(y1.shape() == y2.shape());
  for (int64_t i = 0; i < y1.numel(); ++i)
    REQUIRE(y1.data()[i] == Approx(y2.data()[i]).margin(tolerance));
  Rng rng(3);
  const Tensor seed = Tensor::randn(y1.shape(), rng);
  y1.backward(seed);
  y2.backward(seed);
  for (int64_t i = 0; i < x1.numel(); ++i)
    REQUIRE(x1.grad().data()[i] == Approx(x2.grad().data()[i]).margin(tolerance));
}

}  // namespace

TEST_CASE("softmax of large inputs does not overflow", "[autograd][softmax]") {
  const Tensor y = softmax(Tensor::from({3}, {1000.0f, 1001.0f, 1002.0f}));
  CHECK(y.at({0}) == Approx(0.09003f));
  CHECK(y.at({1}) == Approx(0.24473f));
  CHECK(y.at({2}) == Approx(0.66524f));
  const Tensor l = log_softmax(Tensor::from({2}, {-1000.0f, 1000.0f}));
  CHECK(l.at({0}) == Approx(-2000.0f));
  CHECK(l.at({1}) == 0.0f);
}

TEST_CASE("softmax rows sum to one, a fully masked row gives zeros, not NaN",
          "[autograd][softmax]") {
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor y = softmax(Tensor::from({2, 3}, {0.5f, -1.0f, 2.0f, -inf, -inf, -inf}));
  CHECK(y.at({0, 0}) + y.at({0, 1}) + y.at({0, 2}) == Approx(1.0f));
  CHECK(y.at({1, 0}) == 0.0f);
  CHECK(y.at({1, 2}) == 0.0f);
  const Tensor partly = softmax(Tensor::from({3}, {1.0f, -inf, 1.0f}));
  CHECK(partly.to_vector() == std::vector<float>{0.5f, 0.0f, 0.5f});
}

TEST_CASE("fused softmax and log_softmax match their composite forms", "[autograd][softmax]") {
  Rng rng(8);
  const Tensor x = Tensor::randn({4, 7}, rng, 3.0f);
  check_same_function([](const Tensor& t) { return softmax(t); },
                      [](const Tensor& t) {
                        const Tensor e = exp(t - max(t, -1, true));
                        return e / sum(e, -1, true);
                      },
                      x, 1e-5f);
  check_same_function([](const Tensor& t) { return log_softmax(t); },
                      [](const Tensor& t) {
                        const Tensor shifted = t - max(t, -1, true);
                        return shifted - log(sum(exp(shifted), -1, true));
                      },
                      x, 1e-4f);
}

TEST_CASE("fused layer_norm matches its composite form and PyTorch's definition",
          "[autograd][layer_norm]") {
  Rng rng(9);
  const Tensor x = Tensor::randn({3, 2, 8}, rng, 2.0f) + 5.0f;
  const Tensor w = Tensor::randn({8}, rng), b = Tensor::randn({8}, rng);
  check_same_function([&](const Tensor& t) { return layer_norm(t, w, b, 1e-5f); },
                      [&](const Tensor& t) {
                        const Tensor centred = t - mean(t, -1, true);
                        const Tensor variance =
                            mean(centred * centred, -1, true);  // biased, as PyTorch
                        return centred / sqrt(variance + 1e-5f) * w + b;
                      },
                      x, 1e-4f);
  // A hand case: [1, 2, 3, 4] has mean 2.5 and biased variance 1.25.
  const Tensor y =
      layer_norm(Tensor::from({4}, {1, 2, 3, 4}), Tensor::ones({4}), Tensor::zeros({4}), 0.0f);
  CHECK(y.at({0}) == Approx(-1.5f / std::sqrt(1.25f)));
  CHECK(y.at({3}) == Approx(1.5f / std::sqrt(1.25f)));
  REQUIRE_THROWS_WITH(
      layer_norm(x, Tensor::ones({4}), b),
      Contains("layer_norm: weight [4] and bias [8] must both be [8] for input [3, 2, 8]"));
}

TEST_CASE("cross_entropy with label smoothing matches a hand computation",
          "[autograd][cross_entropy]") {
  // logits [1, 2, 3], target 2: lse = log(e + e^2 + e^3) = 3.4076059644.
  const Tensor logits = Tensor::from({1, 3}, {1, 2, 3});
  const IndexTensor target = IndexTensor::from({1}, {2});
  const double lse = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
  CHECK(cross_entropy(logits, target).item() == Approx(lse - 3.0));  // 0.4076
  // eps = 0.1: q = [0.1/3, 0.1/3, 0.9 + 0.1/3]; loss = lse - 0.9 * 3 - (0.1/3) * (1 + 2 + 3)
  CHECK(cross_entropy(logits, target, {.label_smoothing = 0.1f}).item() ==
        Approx(lse - 0.9 * 3.0 - 0.1 / 3.0 * 6.0));  // 0.5076
}

TEST_CASE("cross_entropy ignores padding and averages over the rest", "[autograd][cross_entropy]") {
  Rng rng(4);
  Tensor logits = Tensor::randn({2, 3, 5}, rng).set_requires_grad();
  const IndexTensor targets = IndexTensor::from({2, 3}, {1, 0, 4, 2, 0, 3});  // two pads (0)
  const CrossEntropyOptions options{.ignore_index = 0, .label_smoothing = 0.2f};
  const Tensor loss = cross_entropy(logits, targets, options);
  // Composite: -sum_j q_j log p_j at each counted position, averaged over the four of them.
  float expected = 0.0f;
  const Tensor logp = log_softmax(logits.detach());
  for (int64_t i = 0; i < 6; ++i) {
    const int32_t t = targets.data()[i];
    if (t == 0) continue;
    for (int j = 0; j < 5; ++j)
      expected -= ((j == t ? 0.8f : 0.0f) + 0.2f / 5.0f) * logp.data()[i * 5 + j];
  }
  CHECK(loss.item() == Approx(expected / 4.0f));
  loss.backward();
  for (int j = 0; j < 5; ++j) CHECK(logits.grad().at({0, 1, j}) == 0.0f);  // a pad position
  // Each counted row's gradient sums to zero: sum_j (p_j - q_j) = 1 - 1.
  float row = 0.0f;
  for (int j = 0; j < 5; ++j) row += logits.grad().at({1, 0, j});
  CHECK(row == Approx(0.0f).margin(1e-6));
}

TEST_CASE("cross_entropy over only padding is zero with zero gradient",
          "[autograd][cross_entropy]") {
  Tensor logits = Tensor::ones({2, 4}).set_requires_grad();
  const Tensor loss = cross_entropy(logits, IndexTensor::from({2}, {0, 0}), {.ignore_index = 0});
  CHECK(loss.item() == 0.0f);
  loss.backward();
  CHECK(logits.grad().to_vector() == std::vector<float>(8, 0.0f));
}

TEST_CASE("cross_entropy refuses bad targets with their position", "[autograd][cross_entropy]") {
  const Tensor logits = Tensor::zeros({2, 3, 11});
  REQUIRE_THROWS_WITH(cross_entropy(logits, IndexTensor::from({2, 3}, {1, 2, 3, 11, 0, 0})),
                      Contains("cross_entropy: target 11 at position 3 is out of range [0, 11)"));
  REQUIRE_THROWS_WITH(
      cross_entropy(logits, IndexTensor::from({6}, {1, 2, 3, 4, 5, 6})),
      Contains("cross_entropy: logits [2, 3, 11] need targets of shape [2, 3], got [6]"));
  REQUIRE_THROWS_WITH(cross_entropy(logits, IndexTensor::zeros({2, 3}), {.label_smoothing = 1.5f}),
                      Contains("label_smoothing 1.5 is outside [0, 1]"));
}

TEST_CASE("cross_entropy refuses a target of -1 unless -1 is the ignore index",
          "[autograd][cross_entropy]") {
  const Tensor logits = Tensor::zeros({3, 4});
  const IndexTensor targets = IndexTensor::from({3}, {2, -1, 3});
  REQUIRE_THROWS_AS(cross_entropy(logits, targets), IndexError);
  REQUIRE_THROWS_WITH(cross_entropy(logits, targets),
                      Contains("cross_entropy: target -1 at position 1 is out of range [0, 4)"));
  REQUIRE_THROWS_WITH(cross_entropy(logits, targets, {.ignore_index = 0}),
                      Contains("target -1 at position 1"));
  // Named as the ignore index, -1 is skipped: the two other rows give log 4 each.
  CHECK(cross_entropy(logits, targets, {.ignore_index = -1}).item() == Approx(std::log(4.0f)));
}
