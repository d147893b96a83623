// Forward values of the ops on small hand-computed cases, broadcasting, and every error
// message. (Gradients are checked in test_gradcheck.cpp.)
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "autograd/errors.h"
#include "autograd/graph.h"
#include "autograd/ops.h"
#include "autograd/random.h"

using namespace gf;
using Catch::Matchers::Contains;
using V = std::vector<float>;

TEST_CASE("element-wise ops broadcast as NumPy does", "[autograd][elementwise]") {
  const Tensor a = Tensor::from({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor row = Tensor::from({3}, {10, 20, 30});
  const Tensor col = Tensor::from({2, 1}, {100, 200});
  CHECK((a + row).to_vector() == V{11, 22, 33, 14, 25, 36});
  CHECK((a - col).to_vector() == V{-99, -98, -97, -196, -195, -194});
  CHECK((row * col).shape() == Shape{2, 3});
  CHECK((row * col).to_vector() == V{1000, 2000, 3000, 2000, 4000, 6000});
  CHECK((a / Tensor::scalar(2.0f)).to_vector() == V{0.5f, 1, 1.5f, 2, 2.5f, 3});
  CHECK((Tensor::ones({4, 1, 3}) + Tensor::ones({2, 1})).shape() == Shape{4, 2, 3});
  REQUIRE_THROWS_WITH(a + Tensor::ones({2}),
                      Contains("add: cannot broadcast [2, 3] with [2] (dimension 1: 3 vs 2)"));
  REQUIRE_THROWS_WITH(mul(Tensor::ones({4, 3}), Tensor::ones({2, 3})),
                      Contains("mul: cannot broadcast"));
}

TEST_CASE("scalar forms and unary functions", "[autograd][elementwise]") {
  const Tensor x = Tensor::from({3}, {-1.0f, 0.0f, 2.0f});
  CHECK((x + 1.0f).to_vector() == V{0, 1, 3});
  CHECK((1.0f - x).to_vector() == V{2, 1, -1});
  CHECK((x * 3.0f).to_vector() == V{-3, 0, 6});
  CHECK((x / 2.0f).to_vector() == V{-0.5f, 0, 1});
  CHECK((2.0f / Tensor::from({2}, {4, 8})).to_vector() == V{0.5f, 0.25f});
  CHECK(relu(x).to_vector() == V{0, 0, 2});
  CHECK(neg(x).to_vector() == V{1, -0.0f, -2});
  CHECK(exp(x).at({2}) == Approx(std::exp(2.0f)));
  CHECK(log(Tensor::from({1}, {std::exp(1.5f)})).item() == Approx(1.5f));
  CHECK(sqrt(Tensor::from({1}, {9})).item() == 3.0f);
  CHECK(pow(Tensor::from({1}, {2}), 10.0f).item() == 1024.0f);
  CHECK(tanh(x).at({2}) == Approx(std::tanh(2.0f)));
  const V s = sigmoid(Tensor::from({3}, {0, 100, -100})).to_vector();
  CHECK(s[0] == 0.5f);
  CHECK(s[1] == 1.0f);
  // 1 / (1 + e^100) is below the smallest normal float: 0 where the kernels flush subnormals
  // (autograd/kernels/cpu.h), the subnormal itself where they cannot (WebAssembly).
  CHECK(s[2] >= 0.0f);
  CHECK(s[2] < std::numeric_limits<float>::min());
}

TEST_CASE("sum_to and expand undo each other's broadcasting", "[autograd][elementwise]") {
  const Tensor g = Tensor::from({2, 3}, {1, 2, 3, 4, 5, 6});
  CHECK(sum_to(g, {3}).to_vector() == V{5, 7, 9});
  CHECK(sum_to(g, {2, 1}).to_vector() == V{6, 15});
  CHECK(sum_to(g, {}).item() == 21.0f);
  CHECK(expand(Tensor::from({2, 1}, {1, 2}), {2, 3}).to_vector() == V{1, 1, 1, 2, 2, 2});
  REQUIRE_THROWS_WITH(sum_to(g, {4}), Contains("sum_to: cannot reduce [2, 3] to [4]"));
  REQUIRE_THROWS_WITH(expand(g, {3, 3}), Contains("expand: cannot expand [2, 3] to [3, 3]"));
}

TEST_CASE("reductions over all elements and over an axis", "[autograd][reduce]") {
  const Tensor x = Tensor::from({2, 3}, {1, 5, 3, 4, 2, 6});
  CHECK(sum(x).item() == 21.0f);
  CHECK(mean(x).item() == 3.5f);
  CHECK(sum(x, 0).to_vector() == V{5, 7, 9});
  CHECK(sum(x, -1).to_vector() == V{9, 12});
  CHECK(sum(x, 1, true).shape() == Shape{2, 1});
  CHECK(mean(x, 1).to_vector() == V{3, 4});
  CHECK(max(x, 1).to_vector() == V{5, 6});
  CHECK(max(x, 0).to_vector() == V{4, 5, 6});
  REQUIRE_THROWS_WITH(sum(x, 2), Contains("sum: axis 2 is out of range for a tensor of rank 2"));
  REQUIRE_THROWS_WITH(max(Tensor::zeros({2, 0}), 1),
                      Contains("max: cannot take the maximum over an empty axis"));
}

TEST_CASE("max sends the gradient to the first maximum only", "[autograd][reduce]") {
  Tensor x = Tensor::from({4}, {1, 3, 3, 2}).set_requires_grad();
  max(x, 0).backward();
  CHECK(x.grad().to_vector() == V{0, 1, 0, 0});
}

TEST_CASE("matmul: 2-D, batched, shared and broadcast batch dimensions", "[autograd][matmul]") {
  const Tensor a = Tensor::from({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor b = Tensor::from({3, 2}, {7, 8, 9, 10, 11, 12});
  CHECK(matmul(a, b).to_vector() == V{58, 64, 139, 154});
  // A batch of two against a shared matrix: each batch entry is its own product.
  const Tensor batch = concat({reshape(a, {1, 2, 3}), reshape(a * 2.0f, {1, 2, 3})}, 0);
  CHECK(matmul(batch, b).to_vector() == V{58, 64, 139, 154, 116, 128, 278, 308});
  // [2, 1, 2, 3] @ [3, 3, 2] broadcasts to [2, 3, 2, 2].
  Rng rng(1);
  const Tensor p = Tensor::randn({2, 1, 2, 3}, rng), q = Tensor::randn({3, 3, 2}, rng);
  const Tensor pq = matmul(p, q);
  CHECK(pq.shape() == Shape{2, 3, 2, 2});
  const Tensor p1 = slice(p, 0, 1, 2), q2 = slice(q, 0, 2, 3);
  const Tensor expected = matmul(reshape(p1, {2, 3}), reshape(q2, {3, 2}));
  CHECK(reshape(slice(slice(pq, 0, 1, 2), 1, 2, 3), {2, 2}).to_vector() == expected.to_vector());
  REQUIRE_THROWS_WITH(
      matmul(Tensor::ones({2, 3, 5}), Tensor::ones({4, 7})),
      Contains("matmul: cannot multiply [2, 3, 5] by [4, 7] (inner dimensions 5 and 4 differ)"));
  REQUIRE_THROWS_WITH(matmul(Tensor::ones({5}), Tensor::ones({5, 3})),
                      Contains("matmul: expects tensors of rank 2 or more, got [5] and [5, 3]"));
  REQUIRE_THROWS_WITH(
      matmul(Tensor::ones({2, 3, 4}), Tensor::ones({3, 4, 5})),
      Contains(
          "matmul: batch dimensions of [2, 3, 4] and [3, 4, 5] cannot broadcast ([2] vs [3])"));
}

TEST_CASE("reshape, permute, transpose, slice, concat move numbers as expected",
          "[autograd][shape]") {
  const Tensor x = Tensor::from({2, 3}, {1, 2, 3, 4, 5, 6});
  CHECK(reshape(x, {3, -1}).shape() == Shape{3, 2});
  CHECK(reshape(x, {6}).data() == x.data());  // shares storage
  CHECK(transpose(x, 0, 1).to_vector() == V{1, 4, 2, 5, 3, 6});
  const Tensor y = reshape(Tensor::from({24},
                                        [] {
                                          V v(24);
                                          for (int i = 0; i < 24; ++i) v[size_t(i)] = float(i);
                                          return v;
                                        }()),
                           {2, 3, 4});
  const Tensor z = permute(y, {2, 0, 1});  // z[k, i, j] = y[i, j, k]
  CHECK(z.shape() == Shape{4, 2, 3});
  CHECK(z.at({3, 1, 2}) == y.at({1, 2, 3}));
  CHECK(z.at({1, 0, 2}) == y.at({0, 2, 1}));
  CHECK(slice(x, 1, 1, 3).to_vector() == V{2, 3, 5, 6});
  CHECK(concat({x, slice(x, 1, 0, 1)}, 1).to_vector() == V{1, 2, 3, 1, 4, 5, 6, 4});
  CHECK(concat({x, x}, 0).shape() == Shape{4, 3});
  REQUIRE_THROWS_WITH(reshape(x, {4, -1}),
                      Contains("reshape: cannot reshape [2, 3] (6 elements) into [4, -1]"));
  REQUIRE_THROWS_WITH(reshape(x, {5}),
                      Contains("cannot reshape [2, 3] (6 elements) into [5] (5 elements)"));
  REQUIRE_THROWS_WITH(permute(x, {0, 0}), Contains("permute: dimension 0 is listed twice"));
  REQUIRE_THROWS_WITH(permute(x, {0}),
                      Contains("permute: 1 dimensions given for a tensor of shape [2, 3]"));
  REQUIRE_THROWS_WITH(
      slice(x, 1, 2, 4),
      Contains("slice: range [2, 4) is out of bounds for dimension 1 of [2, 3] (size 3)"));
  REQUIRE_THROWS_WITH(
      concat({x, Tensor::ones({2, 2})}, 0),
      Contains(
          "concat: tensor 1 has shape [2, 2], which does not match [2, 3] outside dimension 0"));
  REQUIRE_THROWS_WITH(transpose(x, 0, 2), Contains("transpose: axis 2 is out of range"));
}

TEST_CASE("embedding looks up rows and refuses ids out of range", "[autograd][index]") {
  const Tensor w = Tensor::from({3, 2}, {0, 1, 10, 11, 20, 21});
  const Tensor e = embedding(w, IndexTensor::from({2, 2}, {2, 0, 1, 2}));
  CHECK(e.shape() == Shape{2, 2, 2});
  CHECK(e.to_vector() == V{20, 21, 0, 1, 10, 11, 20, 21});
  REQUIRE_THROWS_WITH(embedding(w, IndexTensor::from({1}, {3})),
                      Contains("embedding: token id 3 is out of range [0, 3)"));
  REQUIRE_THROWS_WITH(embedding(w, IndexTensor::from({1}, {-1})),
                      Contains("token id -1 is out of range"));
}

TEST_CASE("masked_fill, where and dropout", "[autograd][index]") {
  const Tensor x = Tensor::from({2, 2}, {1, 2, 3, 4});
  const Tensor causal = Tensor::from({2, 2}, {0, 1, 0, 0});
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(masked_fill(x, causal, -inf).to_vector() == V{1, -inf, 3, 4});
  CHECK(masked_fill(x, Tensor::from({2}, {1, 0}), 0.0f).to_vector() == V{0, 2, 0, 4});
  REQUIRE_THROWS_WITH(masked_fill(x, Tensor::ones({3}), 0.0f),
                      Contains("masked_fill: cannot broadcast [2, 2] with [3]"));
  REQUIRE_THROWS_WITH(
      masked_fill(x, Tensor::ones({2, 2, 2}), 0.0f),
      Contains("masked_fill: mask of shape [2, 2, 2] does not broadcast to [2, 2]"));
  CHECK(where(Tensor::from({2}, {1, 0}), x, Tensor::scalar(-1.0f)).to_vector() == V{1, -1, 3, -1});

  Rng rng(123);
  const Tensor ones = Tensor::ones({10000});
  const Tensor dropped = dropout(ones, 0.25f, rng);
  int64_t zeros = 0;
  for (float v : dropped.to_vector()) {
    REQUIRE((v == 0.0f || v == Approx(1.0f / 0.75f)));
    zeros += v == 0.0f;
  }
  CHECK(zeros > 2300);  // about a quarter of 10000
  CHECK(zeros < 2700);
  Rng same(123);
  CHECK(dropout(ones, 0.25f, same).to_vector() == dropped.to_vector());  // seeded
  CHECK(dropout(ones, 0.0f, rng).data() == ones.data());                 // p = 0: x itself
  REQUIRE_THROWS_WITH(dropout(ones, 1.0f, rng),
                      Contains("dropout: probability 1 is outside [0, 1)"));
}

TEST_CASE("a refused op leaves its inputs and the tape unchanged", "[autograd][errors]") {
  Tensor a = Tensor::ones({2, 3}).set_requires_grad();
  Tensor h = a * 2.0f;
  const int64_t nodes = count_nodes(h);
  REQUIRE_THROWS_AS(matmul(h, Tensor::ones({4, 2})), ShapeError);
  REQUIRE_THROWS_AS(h + Tensor::ones({4}), ShapeError);
  CHECK(count_nodes(h) == nodes);
  CHECK(h.to_vector() == V(6, 2.0f));
  sum(h).backward();
  CHECK(a.grad().to_vector() == V(6, 2.0f));
}

TEST_CASE("linear equals the composite x W^T + b and checks its shapes", "[autograd][matmul]") {
  Rng rng(2);
  const Tensor x = Tensor::randn({2, 3, 4}, rng), w = Tensor::randn({5, 4}, rng),
               b = Tensor::randn({5}, rng);
  const Tensor fused = linear(x, w, b), composite = matmul(x, transpose(w, 0, 1)) + b;
  REQUIRE(fused.shape() == Shape{2, 3, 5});
  for (int64_t i = 0; i < fused.numel(); ++i)
    CHECK(fused.data()[i] == Approx(composite.data()[i]).margin(1e-5));
  CHECK(linear(x, w).at({1, 2, 3}) == Approx(composite.at({1, 2, 3}) - b.at({3})).margin(1e-5));
  REQUIRE_THROWS_WITH(
      linear(x, Tensor::ones({5, 3})),
      Contains("linear: input [2, 3, 4] does not end in the weight's 3 inputs ([5, 3])"));
  REQUIRE_THROWS_WITH(linear(x, w, Tensor::ones({4})),
                      Contains("linear: bias [4] does not match the weight's 5 outputs"));
}

TEST_CASE("edge cases: empty inner dimension, scalars, undefined inputs", "[autograd][errors]") {
  Tensor a = Tensor::zeros({2, 3, 0}).set_requires_grad();
  Tensor b = Tensor::zeros({0, 2}).set_requires_grad();
  const Tensor c = matmul(a, b);  // an empty sum: zeros
  CHECK(c.to_vector() == V(12, 0.0f));
  sum(c).backward();
  CHECK(a.grad().shape() == Shape{2, 3, 0});
  REQUIRE_THROWS_WITH(transpose(Tensor::scalar(1.0f), 0, 0),
                      Contains("transpose: axis 0 is out of range for a tensor of rank 0"));
  REQUIRE_THROWS_WITH(Tensor::scalar(1.0f).dim(0), Contains("axis 0 is out of range"));
  REQUIRE_THROWS_WITH(embedding(Tensor::ones({3, 2}), IndexTensor{}),
                      Contains("embedding: the ids are undefined"));
  REQUIRE_THROWS_WITH(cross_entropy(Tensor::ones({3}), IndexTensor{}),
                      Contains("cross_entropy: the targets are undefined"));
  REQUIRE_THROWS_WITH(Tensor() + Tensor::ones({2}),
                      Contains("undefined (default-constructed) Tensor"));
  REQUIRE_THROWS_WITH(mean(Tensor::zeros({2, 0}), 1), Contains("mean: axis 1 of [2, 0] is empty"));
  REQUIRE_THROWS_WITH(mean(Tensor::scalar(1.0f), 0), Contains("mean: cannot reduce a scalar"));
  REQUIRE_THROWS_WITH(where(Tensor::ones({2}), Tensor::ones({3}), Tensor::ones({1})),
                      Contains("where: condition [2], a [3] and b [1] do not broadcast together"));
  REQUIRE_THROWS_WITH(Tensor::ones({2}).view({-2, -1}), Contains("view: negative dimension"));
}
