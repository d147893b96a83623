// Conv1d: known kernels on known inputs, 'same' against causal padding, dilation, gradients
// against finite differences, shape errors.
#include <catch2/catch.hpp>

#include "autograd/errors.h"
#include "autograd/gradcheck.h"
#include "autograd/ops.h"
#include "nn/conv.h"

using namespace gf;
using namespace gf::nn;
using Catch::Matchers::Contains;

namespace {

// A one-channel convolution with the given taps and no bias.
Tensor conv_taps(const std::vector<float>& taps, Padding padding, int64_t dilation,
                 const Tensor& x) {
  Rng rng(1);
  Conv1d conv({.in_channels = 1,
               .out_channels = 1,
               .kernel_size = static_cast<int64_t>(taps.size()),
               .dilation = dilation,
               .padding = padding,
               .bias = false},
              rng);
  std::copy(taps.begin(), taps.end(), conv.weight.data());
  return conv.forward(x);
}

}  // namespace

TEST_CASE("Conv1d with a known kernel gives the hand-computed output", "[nn][conv]") {
  const Tensor x = Tensor::from({1, 5, 1}, {1, 2, 3, 4, 5});
  // 'same', taps (1, 10, 100) on (x[t-1], x[t], x[t+1]), zeros outside.
  CHECK(conv_taps({1, 10, 100}, Padding::Same, 1, x).to_vector() ==
        std::vector<float>{210, 321, 432, 543, 54});
  // causal: taps on (x[t-2], x[t-1], x[t]).
  CHECK(conv_taps({1, 10, 100}, Padding::Causal, 1, x).to_vector() ==
        std::vector<float>{100, 210, 321, 432, 543});
  // causal, dilation 2: taps on (x[t-4], x[t-2], x[t]).
  CHECK(conv_taps({1, 10, 100}, Padding::Causal, 2, x).to_vector() ==
        std::vector<float>{100, 200, 310, 420, 531});
}

TEST_CASE("Conv1d mixes channels through its O x kC weight and adds the bias", "[nn][conv]") {
  Rng rng(2);
  Conv1d conv({.in_channels = 2, .out_channels = 1, .kernel_size = 2, .padding = Padding::Causal},
              rng);
  REQUIRE(conv.weight.shape() == Shape{1, 4});
  // Tap 0 (previous position): channel 0 times 1, channel 1 times 2;
  // tap 1 (this position): channel 0 times 3, channel 1 times 4.
  std::vector<float> w = {1, 2, 3, 4};
  std::copy(w.begin(), w.end(), conv.weight.data());
  conv.bias.data()[0] = 0.5f;
  const Tensor x = Tensor::from({1, 2, 2}, {1, -1, 2, 5});
  // t=0: 3*1 + 4*(-1) + 0.5 = -0.5;  t=1: 1*1 + 2*(-1) + 3*2 + 4*5 + 0.5 = 25.5
  CHECK(conv.forward(x).to_vector() == std::vector<float>{-0.5f, 25.5f});
  CHECK(conv.named_parameters()[1].first == "bias");
}

TEST_CASE("Conv1d passes gradcheck", "[nn][conv][gradcheck]") {
  Rng rng(3);
  for (const Padding padding : {Padding::Same, Padding::Causal}) {
    Conv1d conv({.in_channels = 3,
                 .out_channels = 2,
                 .kernel_size = 3,
                 .dilation = padding == Padding::Same ? 1 : 2,
                 .padding = padding},
                rng);
    const auto f = [&](const Tensors& v) {
      conv.weight = v[1];
      conv.bias = v[2];
      return conv.forward(v[0]);
    };
    Rng data(4);
    const GradcheckResult result =
        gradcheck(f, {Tensor::uniform({2, 5, 3}, data, -1, 1), Tensor::uniform({2, 9}, data, -1, 1),
                      Tensor::uniform({2}, data, -1, 1)});
    INFO(result.report);
    CHECK(result.checked == 30 + 18 + 2);
    CHECK(result.ok);
  }
}

TEST_CASE("Conv1d names the shapes it rejects", "[nn][conv]") {
  Rng rng(1);
  Conv1d conv({.in_channels = 4, .out_channels = 2}, rng);
  CHECK_THROWS_AS(conv.forward(Tensor::zeros({2, 7, 3})), ShapeError);
  CHECK_THROWS_WITH(conv.forward(Tensor::zeros({2, 7, 3})),
                    Contains("Conv1d: expects x [B, N, 4] with N >= 1, got [2, 7, 3]"));
  CHECK_THROWS_WITH(Conv1d({.in_channels = 4, .out_channels = 2, .kernel_size = 0}, rng),
                    Contains("Conv1d: kernel_size must be positive, got 0"));
}
