#include <catch2/catch.hpp>
#include <cmath>
#include <numbers>

#include "autograd/ops.h"
#include "nn/optim.h"

using namespace gf;
using namespace gf::nn;

TEST_CASE("Adam's first step moves each parameter by lr against its gradient's sign",
          "[nn][optim]") {
  // m = 0.1 g, v = 0.02 g^2; after bias correction m / sqrt(v) = g / |g|: a step of exactly lr.
  Tensor p = Tensor::from({2}, {1.0f, -2.0f}).set_requires_grad();
  Adam adam({p}, {.lr = 0.1f});
  sum(p * Tensor::from({2}, {0.5f, -3.0f})).backward();  // gradient [0.5, -3]
  adam.step();
  CHECK(p.at({0}) == Approx(0.9f));
  CHECK(p.at({1}) == Approx(-1.9f));
  CHECK(adam.steps() == 1);
}

TEST_CASE("Adam matches its update rule over several steps", "[nn][optim]") {
  Tensor p = Tensor::scalar(0.5f).set_requires_grad();
  Adam adam({p}, {.lr = 0.01f, .beta1 = 0.9f, .beta2 = 0.98f, .eps = 1e-9f});
  double w = 0.5, m = 0.0, v = 0.0;
  for (int t = 1; t <= 5; ++t) {
    adam.zero_grad();
    (p * p).backward();  // g = 2p
    const double g = 2.0 * w;
    m = 0.9 * m + 0.1 * g;
    v = 0.98 * v + 0.02 * g * g;
    w -= 0.01 / (1 - std::pow(0.9, t)) * m /
         (std::sqrt(v) / std::sqrt(1 - std::pow(0.98, t)) + 1e-9);
    adam.step();
    CHECK(p.item() == Approx(w).epsilon(1e-5));
  }
}

TEST_CASE("SGD with momentum follows PyTorch's rule", "[nn][optim]") {
  Tensor p = Tensor::scalar(1.0f).set_requires_grad();
  Sgd sgd({p}, {.lr = 0.1f, .momentum = 0.9f});
  for (int i = 0; i < 2; ++i) {
    sgd.zero_grad();
    (p * 2.0f).backward();  // g = 2
    sgd.step();
  }
  // v1 = 2, p = 0.8; v2 = 0.9 * 2 + 2 = 3.8, p = 0.8 - 0.38 = 0.42
  CHECK(p.item() == Approx(0.42f));
}

TEST_CASE("clip_grad_norm scales all gradients together", "[nn][optim]") {
  Tensor a = Tensor::from({2}, {0, 0}).set_requires_grad();
  Tensor b = Tensor::scalar(0).set_requires_grad();
  (sum(a * Tensor::from({2}, {3, 0})) + b * 4.0f).backward();  // gradients [3, 0] and 4: norm 5
  CHECK(clip_grad_norm({a, b}, 1.0f) == Approx(5.0f));
  CHECK(a.grad().at({0}) == Approx(0.6f).epsilon(1e-5));
  CHECK(b.grad().item() == Approx(0.8f).epsilon(1e-5));
  CHECK(clip_grad_norm({a, b}, 10.0f) == Approx(1.0f).epsilon(1e-5));  // under the limit: unchanged
  CHECK(b.grad().item() == Approx(0.8f).epsilon(1e-5));
}

TEST_CASE("the warm-up schedule rises linearly, peaks at warmup, then decays", "[nn][schedule]") {
  const int64_t d = 512, warmup = 4000;
  CHECK(noam_lr(1, d, warmup) == Approx(std::pow(512.0, -0.5) * std::pow(4000.0, -1.5)));
  CHECK(noam_lr(2000, d, warmup) == Approx(2000 * std::pow(512.0, -0.5) * std::pow(4000.0, -1.5)));
  const double peak = std::pow(512.0, -0.5) * std::pow(4000.0, -0.5);  // ~7.0e-4
  CHECK(noam_lr(warmup, d, warmup) == Approx(peak));
  CHECK(noam_lr(16000, d, warmup) == Approx(peak / 2));  // step^-0.5: four times later, half
  CHECK(noam_lr(4000, d, warmup, 2.0f) == Approx(2 * peak));
  CHECK(noam_lr(3999, d, warmup) < noam_lr(4000, d, warmup));
  CHECK(noam_lr(4001, d, warmup) < noam_lr(4000, d, warmup));
}

TEST_CASE("the cosine schedule warms up to its peak, then falls to near zero at the end",
          "[nn][schedule]") {
  const int64_t warmup = 100, total = 1099;  // 1000 steps after the warm-up
  CHECK(cosine_lr(1, warmup, total, 1e-3f) == Approx(1e-5));
  CHECK(cosine_lr(50, warmup, total, 1e-3f) == Approx(5e-4));
  CHECK(cosine_lr(100, warmup, total, 1e-3f) == Approx(1e-3));
  CHECK(cosine_lr(600, warmup, total, 1e-3f) == Approx(5e-4));  // half way down: half the peak
  const double last = 1e-3 * 0.5 * (1 + std::cos(std::numbers::pi * 999.0 / 1000.0));
  CHECK(cosine_lr(total, warmup, total, 1e-3f) == Approx(last));  // ~2.5e-9: small, not zero
  CHECK(cosine_lr(total, warmup, total, 1e-3f) > 0.0f);
  CHECK(cosine_lr(101, warmup, total, 1e-3f) < cosine_lr(100, warmup, total, 1e-3f));
  CHECK_THROWS_WITH(cosine_lr(1, 100, 100, 1e-3f),
                    "cosine_lr: need step >= 1 and 1 <= warmup < total (got step 1, warmup 100, "
                    "total 100)");
}
