#include <catch2/catch.hpp>

#include "autograd/errors.h"
#include "autograd/ops.h"
#include "autograd/random.h"
#include "autograd/tensor.h"

using namespace gf;
using Catch::Matchers::Contains;

TEST_CASE("Shape prints in bracket notation and counts elements", "[autograd][tensor]") {
  CHECK(to_string(Shape{2, 3, 5}) == "[2, 3, 5]");
  CHECK(fmt::format("{}", Shape{}) == "[]");
  CHECK(Shape{2, 3, 5}.numel() == 30);
  CHECK(Shape{}.numel() == 1);
  CHECK(Shape{4, 0}.numel() == 0);
  CHECK(Shape{2, 3} == Shape{2, 3});
  CHECK_FALSE(Shape{2, 3} == Shape{3, 2});
  REQUIRE_THROWS_WITH((Shape{1, 1, 1, 1, 1, 1, 1, 1, 1}),
                      Contains("rank 9 exceeds the maximum of 8"));
}

TEST_CASE("factories fill values and check shapes", "[autograd][tensor]") {
  Tensor t = Tensor::from({2, 2}, {1, 2, 3, 4});
  CHECK(t.at({1, 0}) == 3.0f);
  CHECK(Tensor::full({3}, 2.5f).to_vector() == std::vector<float>{2.5f, 2.5f, 2.5f});
  CHECK(Tensor::scalar(4.0f).item() == 4.0f);
  CHECK(Tensor::scalar(4.0f).rank() == 0);
  REQUIRE_THROWS_WITH(Tensor::from({2, 2}, {1, 2, 3}),
                      Contains("3 values cannot fill shape [2, 2]"));
  REQUIRE_THROWS_WITH(Tensor::zeros({2, -1}), Contains("negative dimension in shape [2, -1]"));
  REQUIRE_THROWS_WITH(t.at({2, 0}), Contains("index 2 is out of range [0, 2) in dimension 0"));
  REQUIRE_THROWS_WITH(t.item(), Contains("has 4 elements, not 1"));
  CHECK(t.dim(-1) == 2);
  REQUIRE_THROWS_WITH(t.dim(2), Contains("axis 2 is out of range for a tensor of rank 2"));
}

TEST_CASE("a handle shares storage, clone and detach behave as documented", "[autograd][tensor]") {
  Tensor a = Tensor::zeros({2, 3});
  Tensor b = a;  // same storage
  b.data()[0] = 7.0f;
  CHECK(a.at({0, 0}) == 7.0f);
  Tensor c = a.clone();
  c.data()[0] = 1.0f;
  CHECK(a.at({0, 0}) == 7.0f);
  Tensor r = reshape(a, {3, 2});  // reshape shares
  r.data()[5] = 9.0f;
  CHECK(a.at({1, 2}) == 9.0f);
  Tensor d = a.detach();
  CHECK(d.data() == a.data());
  CHECK_FALSE(d.requires_grad());
}

TEST_CASE("random tensors are reproducible from the seed", "[autograd][tensor][random]") {
  Rng r1(42), r2(42), r3(43);
  const auto x1 = Tensor::randn({100}, r1).to_vector();
  CHECK(x1 == Tensor::randn({100}, r2).to_vector());
  CHECK(x1 != Tensor::randn({100}, r3).to_vector());
  // Standard normal: the mean and variance of 20000 draws are near 0 and 1.
  Rng r4(1);
  const Tensor z = Tensor::randn({20000}, r4);
  double s = 0, s2 = 0;
  for (float v : z.to_vector()) s += v, s2 += double(v) * v;
  CHECK(std::abs(s / 20000) < 0.03);
  CHECK(std::abs(s2 / 20000 - 1.0) < 0.05);
  Rng r5(9);
  for (int i = 0; i < 1000; ++i) {
    const float u = r5.uniform();
    REQUIRE((u >= 0.0f && u < 1.0f));
    const int64_t k = r5.below(7);
    REQUIRE((k >= 0 && k < 7));
  }
}

TEST_CASE("to_string shows values and shape, eliding the middle", "[autograd][tensor]") {
  CHECK(to_string(Tensor::from({2, 2}, {1, 2, 3, 4}), 1) ==
        "tensor([[1.0, 2.0], [3.0, 4.0]], shape [2, 2])");
  Tensor long_row = Tensor::zeros({10});
  CHECK(to_string(long_row, 0) == "tensor([0, 0, 0, ..., 0, 0, 0], shape [10])");
  CHECK(to_string(Tensor::scalar(2.5f), 2) == "tensor(2.50, shape [])");
}

TEST_CASE("IndexTensor holds ids with a shape", "[autograd][tensor]") {
  const IndexTensor ids = IndexTensor::from({2, 2}, {1, 2, 3, 4});
  CHECK(ids.at({1, 1}) == 4);
  CHECK(ids.numel() == 4);
  REQUIRE_THROWS_WITH(IndexTensor::from({3}, {1, 2}), Contains("2 ids cannot fill shape [3]"));
}
