// The tape: recording, accumulation, release, NoGrad, and the engine's own checks.
#include <catch2/catch.hpp>

#include "autograd/errors.h"
#include "autograd/graph.h"
#include "autograd/ops.h"

using namespace gf;
using Catch::Matchers::Contains;

TEST_CASE("backward applies the chain rule through a small expression", "[autograd][graph]") {
  // f(a, b) = (a * b + a)^2 at a = 2, b = 3: f = 64, df/da = 2 (ab + a)(b + 1) = 64,
  // df/db = 2 (ab + a) a = 32.
  Tensor a = Tensor::scalar(2.0f).set_requires_grad();
  Tensor b = Tensor::scalar(3.0f).set_requires_grad();
  Tensor f = pow(a * b + a, 2.0f);
  CHECK(f.item() == 64.0f);
  f.backward();
  CHECK(a.grad().item() == Approx(64.0f));
  CHECK(b.grad().item() == Approx(32.0f));
}

TEST_CASE("a tensor used twice receives the sum of both gradients", "[autograd][graph]") {
  Tensor x = Tensor::from({2}, {1.0f, -2.0f}).set_requires_grad();
  Tensor y = sum(x * x + x);  // dy/dx = 2x + 1
  y.backward();
  CHECK(x.grad().to_vector() == std::vector<float>{3.0f, -3.0f});
}

TEST_CASE("gradients accumulate across backward calls until zero_grad", "[autograd][graph]") {
  Tensor x = Tensor::scalar(3.0f).set_requires_grad();
  (x * 2.0f).backward();
  (x * 2.0f).backward();
  CHECK(x.grad().item() == 4.0f);
  x.zero_grad();
  CHECK_FALSE(x.grad().defined());
}

TEST_CASE("broadcast inputs get gradients of their own shape", "[autograd][graph]") {
  Tensor a = Tensor::ones({2, 3}).set_requires_grad();
  Tensor bias = Tensor::from({3}, {1, 2, 3}).set_requires_grad();
  sum(a * bias).backward();
  CHECK(bias.grad().shape() == Shape{3});
  CHECK(bias.grad().to_vector() == std::vector<float>{2, 2, 2});
  CHECK(a.grad().to_vector() == std::vector<float>{1, 2, 3, 1, 2, 3});
}

TEST_CASE("NoGrad records nothing", "[autograd][graph]") {
  Tensor x = Tensor::ones({2}).set_requires_grad();
  Tensor y;
  {
    NoGrad guard;
    CHECK_FALSE(grad_enabled());
    y = x * 3.0f;
  }
  CHECK(grad_enabled());
  CHECK(y.is_leaf());
  CHECK_FALSE(y.requires_grad());
  REQUIRE_THROWS_WITH(y.backward(Tensor::ones({2})), Contains("does not require grad"));
}

TEST_CASE("ops on tensors that need no grad record nothing", "[autograd][graph]") {
  Tensor y = exp(Tensor::ones({3}));
  CHECK(y.is_leaf());
  CHECK(count_nodes(y) == 0);
}

TEST_CASE("the graph is released after backward", "[autograd][graph]") {
  Tensor x = Tensor::ones({2}).set_requires_grad();
  Tensor loss = sum(exp(x));
  CHECK(count_nodes(loss) == 2);
  CHECK(recorded_ops(loss) == std::vector<std::string>{"exp", "sum"});
  CHECK(loss.op_name() == "sum");
  loss.backward();
  REQUIRE_THROWS_WITH(loss.backward(), Contains("already been released"));
}

TEST_CASE("backward checks its seed", "[autograd][graph]") {
  Tensor x = Tensor::ones({2, 3}).set_requires_grad();
  Tensor y = x * 2.0f;
  REQUIRE_THROWS_WITH(y.backward(), Contains("output has shape [2, 3]; pass a gradient"));
  REQUIRE_THROWS_WITH(y.backward(Tensor::ones({3})),
                      Contains("gradient has shape [3] but the output has shape [2, 3]"));
  y.backward(Tensor::full({2, 3}, 0.5f));  // still usable after the refused calls
  CHECK(x.grad().at({1, 2}) == 1.0f);
}

TEST_CASE("the engine names an op whose backward returns a wrong shape", "[autograd][graph]") {
  Tensor x = Tensor::ones({2, 3}).set_requires_grad();
  Tensor y = x.detach() * 2.0f;
  record(y, "broken", {x}, [](const Tensor&) { return Grads{Tensor::ones({3})}; });
  REQUIRE_THROWS_WITH(y.backward(Tensor::ones({2, 3})),
                      Contains("broken backward: gradient for input 0 has shape [3] but the input "
                               "has shape [2, 3]"));
}

TEST_CASE("only leaves can be marked as requiring grad", "[autograd][graph]") {
  Tensor x = Tensor::ones({2}).set_requires_grad();
  Tensor y = x * 2.0f;
  REQUIRE_THROWS_WITH(y.set_requires_grad(), Contains("made by mul_scalar"));
}

TEST_CASE("a deep chain does not overflow the stack", "[autograd][graph]") {
  Tensor x = Tensor::scalar(1.0f).set_requires_grad();
  Tensor y = x;
  for (int i = 0; i < 100000; ++i) y = y + 0.0f;
  y.backward();
  CHECK(x.grad().item() == 1.0f);
}

TEST_CASE("a deep graph that is never differentiated is freed without recursion",
          "[autograd][graph]") {
  Tensor x = Tensor::scalar(1.0f).set_requires_grad();
  Tensor y = x;
  for (int i = 0; i < 300000; ++i) y = y * 1.0f;
  CHECK(y.item() == 1.0f);
  y = Tensor();  // drops 300000 nodes
  CHECK(x.requires_grad());
}

TEST_CASE("backward through a graph released by an earlier backward is refused cleanly",
          "[autograd][graph]") {
  Tensor x = Tensor::from({2}, {1, 2}).set_requires_grad();
  Tensor w = Tensor::from({2}, {3, 4}).set_requires_grad();
  const Tensor h = exp(x);
  sum(h).backward();  // releases exp's node
  const Tensor again = sum(h * w);
  REQUIRE_THROWS_WITH(again.backward(), Contains("already been released at \"exp\""));
  CHECK_FALSE(w.grad().defined());  // nothing was written before the refusal
}

TEST_CASE("leaves never share a gradient tensor with each other or with the seed",
          "[autograd][graph]") {
  Tensor a = Tensor::ones({3}).set_requires_grad();
  Tensor b = Tensor::ones({3}).set_requires_grad();
  const Tensor seed = Tensor::full({3}, 2.0f);
  (a + b).backward(seed);
  CHECK(a.grad().data() != b.grad().data());
  CHECK(a.grad().data() != seed.data());
  a.grad().data()[0] = 100.0f;  // as clipping or an optimizer might do
  CHECK(b.grad().at({0}) == 2.0f);
  CHECK(seed.at({0}) == 2.0f);
  Tensor leaf = Tensor::ones({2}).set_requires_grad();
  const Tensor leaf_seed = Tensor::full({2}, 3.0f);
  leaf.backward(leaf_seed);
  CHECK(leaf.grad().data() != leaf_seed.data());
}

TEST_CASE("the tape keeps only what backward functions need", "[autograd][graph]") {
  // a = 3x is an input of a + 1, whose backward needs no numbers, and of nothing else: once
  // the program drops a, its numbers are freed although the graph through it lives on.
  Tensor x = Tensor::from({3}, {1.0f, 2.0f, 3.0f}).set_requires_grad();
  Tensor a = x * 3.0f;
  const std::weak_ptr<detail::TensorImpl> a_alive = a.impl_ptr();
  Tensor loss = sum(a + 1.0f);
  a = Tensor();
  CHECK(a_alive.expired());
  // ... and the gradient still flows through where it was: d/dx sum(3x + 1) = 3.
  loss.backward();
  for (int i = 0; i < 3; ++i) CHECK(x.grad().data()[i] == 3.0f);
  // A tensor a backward function captured (x * y needs x and y) stays until backward is done.
  Tensor y = Tensor::from({3}, {1.0f, 1.0f, 1.0f}).set_requires_grad();
  Tensor b = y * 2.0f;
  const std::weak_ptr<detail::TensorImpl> b_alive = b.impl_ptr();
  Tensor product = sum(x * b);
  b = Tensor();
  CHECK(!b_alive.expired());
  product.backward();
  CHECK(b_alive.expired());
}
