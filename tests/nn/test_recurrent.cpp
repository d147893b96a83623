// The recurrent layers: a GRU step against the equations written as loops, the layer against
// its cell stepped by hand, padded rows, gradients against finite differences, shape errors.
#include <catch2/catch.hpp>
#include <cmath>

#include "autograd/errors.h"
#include "autograd/gradcheck.h"
#include "autograd/kernels/parallel.h"
#include "autograd/ops.h"
#include "nn/recurrent.h"

using namespace gf;
using namespace gf::nn;
using Catch::Matchers::Contains;

namespace {

float sigmoid_of(float v) {
  return 1.0f / (1.0f + std::exp(-v));
}

// W [rows, cols] row-major times v, plus b, for output rows [first, first + count).
std::vector<float> affine(const Tensor& w, const Tensor& b, const std::vector<float>& v,
                          int64_t first, int64_t count) {
  const int64_t cols = w.shape()[1];
  std::vector<float> out(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    double acc = b.data()[first + i];
    for (int64_t c = 0; c < cols; ++c) acc += w.data()[(first + i) * cols + c] * v[size_t(c)];
    out[size_t(i)] = static_cast<float>(acc);
  }
  return out;
}

void randomize(const Module& m, uint64_t seed) {  // non-zero biases, so they are tested too
  Rng rng(seed);
  for (Tensor p : m.parameters()) {
    const Tensor r = Tensor::uniform(p.shape(), rng, -0.8f, 0.8f);
    std::copy(r.data(), r.data() + r.numel(), p.data());
  }
}

}  // namespace

TEST_CASE("GRUCell computes the GRU equations of one step", "[nn][recurrent]") {
  Rng rng(3);
  GRUCell cell(3, 2, rng);
  randomize(cell, 4);
  const Tensor x = Tensor::from({1, 3}, {0.5f, -1.0f, 2.0f});
  const Tensor h = Tensor::from({1, 2}, {0.3f, -0.7f});
  const std::vector<float> xv = x.to_vector(), hv = h.to_vector();
  const int64_t H = 2;
  const auto xr = affine(cell.weight_ih, cell.bias_ih, xv, 0, H);
  const auto xz = affine(cell.weight_ih, cell.bias_ih, xv, H, H);
  const auto xn = affine(cell.weight_ih, cell.bias_ih, xv, 2 * H, H);
  const auto hr = affine(cell.weight_hh, cell.bias_hh, hv, 0, H);
  const auto hz = affine(cell.weight_hh, cell.bias_hh, hv, H, H);
  const auto hn = affine(cell.weight_hh, cell.bias_hh, hv, 2 * H, H);
  const Tensor y = cell.forward(x, h);
  REQUIRE(y.shape() == Shape{1, 2});
  for (size_t i = 0; i < 2; ++i) {
    const float r = sigmoid_of(xr[i] + hr[i]);
    const float z = sigmoid_of(xz[i] + hz[i]);
    const float n = std::tanh(xn[i] + r * hn[i]);
    CHECK(y.data()[i] == Approx((1 - z) * n + z * hv[i]).margin(1e-6));
  }
  CHECK(cell.named_parameters()[0].first == "weight_ih");
  CHECK(cell.weight_ih.shape() == Shape{6, 3});
  CHECK(cell.weight_hh.shape() == Shape{6, 2});
  CHECK(cell.parameter_count() == 6 * 3 + 6 * 2 + 6 + 6);
}

TEST_CASE("RNNCell computes tanh(W_ih x + b_ih + W_hh h + b_hh)", "[nn][recurrent]") {
  Rng rng(3);
  RNNCell cell(2, 2, rng);
  randomize(cell, 5);
  const Tensor x = Tensor::from({1, 2}, {1.0f, -2.0f});
  const Tensor h = Tensor::from({1, 2}, {0.5f, 0.25f});
  const auto a = affine(cell.weight_ih, cell.bias_ih, x.to_vector(), 0, 2);
  const auto b = affine(cell.weight_hh, cell.bias_hh, h.to_vector(), 0, 2);
  const Tensor y = cell.forward(x, h);
  for (size_t i = 0; i < 2; ++i) CHECK(y.data()[i] == Approx(std::tanh(a[i] + b[i])).margin(1e-6));
}

TEST_CASE("GRU runs its cell over time and holds padded rows", "[nn][recurrent]") {
  Rng rng(7);
  GRU gru(3, 4, rng);
  randomize(gru, 8);
  Rng data(9);
  const Tensor x = Tensor::uniform({2, 5, 3}, data, -1.0f, 1.0f);
  const RecurrentOutput out = gru.forward(x, {}, {5, 2});
  REQUIRE(out.outputs.shape() == Shape{2, 5, 4});
  REQUIRE(out.final_state.shape() == Shape{2, 4});
  CHECK(gru.named_parameters()[0].first == "cell.weight_ih");
  // Stepping the cell by hand gives the same states.
  for (int64_t b = 0; b < 2; ++b) {
    const int64_t len = b == 0 ? 5 : 2;
    Tensor h = Tensor::zeros({1, 4});
    for (int64_t t = 0; t < 5; ++t) {
      if (t < len)
        h = gru.cell.forward(reshape(slice(slice(x, 0, b, b + 1), 1, t, t + 1), {1, 3}), h);
      for (int64_t i = 0; i < 4; ++i)
        CHECK(out.outputs.data()[(b * 5 + t) * 4 + i] == Approx(h.data()[i]).margin(1e-6));
    }
    for (int64_t i = 0; i < 4; ++i)
      CHECK(out.final_state.data()[b * 4 + i] == Approx(h.data()[i]).margin(1e-6));
  }
}

TEST_CASE("recurrent layers pass gradcheck", "[nn][recurrent][gradcheck]") {
  Rng rng(11);
  GRU gru(3, 2, rng);
  RNN rnn(3, 2, rng);
  Rng data(12);
  const Tensors gru_inputs = {
      Tensor::uniform({2, 3, 3}, data, -1, 1), Tensor::uniform({2, 2}, data, -1, 1),
      Tensor::uniform({6, 3}, data, -1, 1),    Tensor::uniform({6, 2}, data, -1, 1),
      Tensor::uniform({6}, data, -0.5, 0.5),   Tensor::uniform({6}, data, -0.5, 0.5)};
  SECTION("GRU, x, h0 and every parameter, with a padded row") {
    const auto f = [&](const Tensors& v) {
      gru.cell.weight_ih = v[2];
      gru.cell.weight_hh = v[3];
      gru.cell.bias_ih = v[4];
      gru.cell.bias_hh = v[5];
      const RecurrentOutput out = gru.forward(v[0], v[1], {3, 2});
      return concat({reshape(out.outputs, {2, 6}), out.final_state}, 1);
    };
    const GradcheckResult result = gradcheck(f, gru_inputs);
    INFO(result.report);
    CHECK(result.checked == 18 + 4 + 18 + 12 + 6 + 6);
    CHECK(result.ok);
  }
  SECTION("RNN") {
    const auto f = [&](const Tensors& v) {
      rnn.cell.weight_ih = v[2];
      rnn.cell.weight_hh = v[3];
      return rnn.forward(v[0], v[1]).outputs;
    };
    const GradcheckResult result =
        gradcheck(f, {gru_inputs[0], gru_inputs[1], Tensor::uniform({2, 3}, data, -1, 1),
                      Tensor::uniform({2, 2}, data, -1, 1)});
    INFO(result.report);
    CHECK(result.ok);
  }
}

TEST_CASE("GRU's one op gives forward_step_by_step's states and gradients", "[nn][recurrent]") {
  Rng rng(3);
  GRU gru(8, 16, rng);
  randomize(gru, 4);
  Rng data(5);
  const Tensor x = Tensor::uniform({3, 17, 8}, data, -1.0f, 1.0f);
  const Tensor h0 = Tensor::uniform({3, 16}, data, -1.0f, 1.0f);
  const Tensor seed = Tensor::uniform({3, 17, 16}, data, -1.0f, 1.0f);
  const Tensor final_seed = Tensor::uniform({3, 16}, data, -1.0f, 1.0f);
  const std::vector<int64_t> lengths = {17, 5, 1};
  // The gradients of x, h0 and the four parameters, from a loss that weights every output and
  // the final state.
  const auto run = [&](bool one_op) {
    const Tensor xg = x.clone().set_requires_grad(), hg = h0.clone().set_requires_grad();
    gru.zero_grad();
    const RecurrentOutput out =
        one_op ? gru.forward(xg, hg, lengths) : gru.forward_step_by_step(xg, hg, lengths);
    (sum(out.outputs * seed) + sum(out.final_state * final_seed)).backward();
    std::vector<Tensor> results = {out.outputs.detach(), out.final_state.detach(), xg.grad(),
                                   hg.grad()};
    for (const Tensor& p : gru.parameters()) results.push_back(p.grad());
    return results;
  };
  const std::vector<Tensor> fused = run(true), reference = run(false);
  CHECK(gru.forward(x).outputs.op_name() == "gru");
  const char* names[] = {"outputs",   "final state", "x",       "h0",
                         "weight_ih", "weight_hh",   "bias_ih", "bias_hh"};
  REQUIRE(fused.size() == 8);
  for (size_t i = 0; i < fused.size(); ++i) {
    INFO(names[i]);
    REQUIRE(fused[i].shape() == reference[i].shape());
    float worst = 0.0f;
    for (int64_t e = 0; e < fused[i].numel(); ++e)
      worst = std::max(worst, std::abs(fused[i].data()[e] - reference[i].data()[e]));
    CHECK(worst < 2e-5f);
  }
  // Row 2 ended after one step: its later states are its first.
  for (int64_t t = 1; t < 17; ++t)
    for (int64_t i = 0; i < 16; ++i)
      CHECK(fused[0].data()[(2 * 17 + t) * 16 + i] == fused[0].data()[(2 * 17) * 16 + i]);
}

TEST_CASE("the gru op gives the same bits at 1, 2, 3, 4 and 8 threads",
          "[nn][recurrent][threads]") {
  // H = 512: each step's products are large enough to be cut into parts across threads.
  Rng rng(6);
  const Tensor x = Tensor::uniform({2, 4, 1536}, rng, -1.0f, 1.0f);
  const Tensor h0 = Tensor::uniform({2, 512}, rng, -1.0f, 1.0f);
  const Tensor w = Tensor::uniform({1536, 512}, rng, -0.05f, 0.05f);
  const Tensor b = Tensor::uniform({1536}, rng, -0.1f, 0.1f);
  const Tensor seed = Tensor::uniform({2, 4, 512}, rng, -1.0f, 1.0f);
  const auto run = [&](int threads) {
    kernels::set_num_threads(threads);
    const Tensors inputs = {x.clone().set_requires_grad(), h0.clone().set_requires_grad(),
                            w.clone().set_requires_grad(), b.clone().set_requires_grad()};
    const Tensor y = gru(inputs[0], inputs[1], inputs[2], inputs[3], {4, 3});
    y.backward(seed);
    std::vector<float> bits = y.to_vector();
    for (const Tensor& input : inputs) {
      const std::vector<float> grad = input.grad().to_vector();
      bits.insert(bits.end(), grad.begin(), grad.end());
    }
    return bits;
  };
  const std::vector<float> one = run(1);
  for (const int threads : {2, 3, 4, 8}) {
    INFO(threads << " threads");
    CHECK(run(threads) == one);
  }
  kernels::set_num_threads(0);
}

TEST_CASE("the gru op names the shapes it rejects", "[nn][recurrent]") {
  const Tensor w = Tensor::zeros({12, 4}), b = Tensor::zeros({12});
  CHECK_THROWS_WITH(
      gru(Tensor::zeros({2, 12}), Tensor::zeros({2, 4}), w, b),
      Contains("gru: expects projected inputs [B, T, 3H] and h0 [B, H], got [2, 12] and [2, 4]"));
  CHECK_THROWS_WITH(gru(Tensor::zeros({2, 5, 11}), Tensor::zeros({2, 4}), w, b),
                    Contains("gru: projected inputs [2, 5, 11] do not fit h0 [2, 4]"));
  CHECK_THROWS_WITH(
      gru(Tensor::zeros({2, 5, 12}), Tensor::zeros({2, 4}), Tensor::zeros({4, 12}), b),
      Contains("gru: weight_hh [4, 12] and bias_hh [12] must be [12, 4] and [12]"));
  CHECK_THROWS_AS(gru(Tensor::zeros({2, 5, 12}), Tensor::zeros({2, 4}), w, b, {5}),
                  std::invalid_argument);
  CHECK_THROWS_WITH(gru(Tensor::zeros({2, 5, 12}), Tensor::zeros({2, 4}), w, b, {5}),
                    Contains("gru: 1 lengths for a batch of 2"));
  CHECK_THROWS_WITH(gru(Tensor::zeros({2, 5, 12}), Tensor::zeros({2, 4}), w, b, {5, 0}),
                    Contains("gru: length 0 is outside [1, 5]"));
}

TEST_CASE("recurrent layers name the shapes they reject", "[nn][recurrent]") {
  Rng rng(1);
  GRU gru(3, 4, rng);
  CHECK_THROWS_AS(gru.forward(Tensor::zeros({2, 5, 2})), ShapeError);
  CHECK_THROWS_WITH(gru.forward(Tensor::zeros({2, 5, 2})),
                    Contains("GRU: expects x [B, T, 3] with T >= 1, got [2, 5, 2]"));
  CHECK_THROWS_WITH(gru.forward(Tensor::zeros({2, 5, 3}), Tensor::zeros({2, 3})),
                    Contains("GRU: the initial state must be [2, 4] for x [2, 5, 3], got [2, 3]"));
  CHECK_THROWS_WITH(gru.forward(Tensor::zeros({2, 5, 3}), {}, {5, 6}),
                    Contains("GRU: length 6 is outside [1, 5]"));
  CHECK_THROWS_WITH(gru.cell.forward(Tensor::zeros({2, 3}), Tensor::zeros({3, 4})),
                    Contains("GRUCell: expects x [B, 3] and h [B, 4], got x [2, 3] and h [3, 4]"));
  RNNCell cell(2, 2, rng);
  CHECK_THROWS_AS(cell.forward(Tensor::zeros({1, 3}), Tensor::zeros({1, 2})), ShapeError);
  CHECK_THROWS_AS(GRU(0, 4, rng), std::invalid_argument);
}
