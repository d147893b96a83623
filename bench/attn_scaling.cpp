// bench/attn_scaling: the paper's Table 1 (§4), measured. One layer of each kind, width
// d = 512, batch 1, forward + backward for sequence lengths n = 64 .. 2048:
//
//   layer            complexity per layer   sequential operations
//   self-attention   O(n^2 d)               O(1)       multi-head, h = 8 (nn/attention.h)
//   recurrent        O(n d^2)               O(n)       a GRU, hidden 512 (nn/recurrent.h)
//   convolution      O(k n d^2)             O(1)       kernel k = 3 (nn/conv.h)
//
// Attention's n^2 term overtakes the others' d^2 only once n nears d; the recurrent layer's
// n dependent steps cannot use the second core. The loss is the sum of the outputs, so the
// backward pass starts from a gradient of ones. Each layer and n is first checked (output
// shape, every parameter's gradient present and finite), then timed: the median of repeated
// runs after one warm-up run.
//
// Shape legend: B batch (1), N sequence length, D width (512).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "autograd/ops.h"
#include "autograd/random.h"
#include "bench/bench_util.h"
#include "nn/attention.h"
#include "nn/conv.h"
#include "nn/module.h"
#include "nn/recurrent.h"

namespace {

using namespace gf;

constexpr std::string_view kUsage =
    "usage: attn_scaling [--smoke] [--threads 2] [--seed 1] [--bf16] [--max-n 2048] [--help]\n"
    "  Times one layer's forward + backward (batch 1, width 512) for n = 64, 128, ..., max-n\n"
    "  and prints one JSON object per layer and n:\n"
    "  {\"workload\":\"attn-scaling\",\"layer\":\"self-attention\",\"n\":64,\"ms_per_step\":...}\n"
    "  layers: self-attention (8 heads), recurrent (GRU), convolution (kernel 3)\n"
    "  --smoke    n = 64 and 128, one timed run each (for CI, about a second)\n"
    "  --bf16     the large matrix products in bfloat16 (needs AVX512-BF16; lesson 11)\n"
    "  --max-n    the longest sequence (default 2048)\n";

constexpr int64_t kWidth = 512;

struct Layer {
  std::string name;
  nn::Module* module;
  std::function<Tensor(const Tensor&)> forward;  // [1, N, D] -> [1, N, D]
  // The multiply-adds of its products in one forward pass at length n (backward does twice
  // as many: bench_util.h's add_efficiency counts 3 x 2 FLOPs each).
  std::function<double(double n)> multiply_adds;
};

// One forward + backward from loss = sum(y); returns y for checking.
Tensor forward_backward(const Layer& layer, const Tensor& x) {
  layer.module->zero_grad();
  const Tensor y = layer.forward(x);
  sum(y).backward();
  return y;
}

void check(const Layer& layer, const Tensor& x) {
  const Tensor y = forward_backward(layer, x);
  if (y.shape() != x.shape())
    throw std::runtime_error(
        fmt::format("{}: output {} for input {}", layer.name, y.shape(), x.shape()));
  for (const auto& [name, parameter] : layer.module->named_parameters()) {
    const Tensor grad = parameter.grad();
    if (!grad.defined())
      throw std::runtime_error(fmt::format("{}: no gradient reached {}", layer.name, name));
    for (int64_t i = 0; i < grad.numel(); ++i)
      if (!std::isfinite(grad.data()[i]))
        throw std::runtime_error(fmt::format("{}: gradient of {} is not finite", layer.name, name));
  }
}

// Median seconds of forward + backward after one warm-up run; enough runs for about 0.3 s,
// at least 3 (1 with --smoke).
double median_seconds(const Layer& layer, const Tensor& x, bool smoke) {
  const auto time_once = [&] {
    const auto start = bench::Clock::now();
    forward_backward(layer, x);
    return bench::seconds_since(start);
  };
  const double first = time_once();
  const int runs = smoke ? 1 : std::clamp(static_cast<int>(0.3 / first), 3, 50);
  std::vector<double> seconds;
  for (int i = 0; i < runs; ++i) seconds.push_back(time_once());
  return bench::median(seconds);
}

}  // namespace

int main(int argc, char** argv) {
  int64_t max_n = 2048;
  bench::CommonOptions options;
  try {
    const auto parsed = bench::parse_common(
        argc, argv, "attn_scaling", [&](std::string_view flag, std::string_view value) {
          if (flag != "--max-n") return false;
          max_n = bench::parse_count("attn_scaling", flag, value);
          return true;
        });
    if (!parsed) {
      fmt::print("{}", kUsage);
      return 0;
    }
    options = *parsed;
    if (options.smoke) max_n = 128;
    if (max_n < 64) throw std::invalid_argument("attn_scaling: --max-n must be at least 64");
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}\n{}", e.what(), kUsage);
    return 2;
  }

  try {
    Rng rng(options.seed);
    nn::MultiHeadAttention attention({.d_model = kWidth, .heads = 8}, rng);
    nn::GRU gru(kWidth, kWidth, rng);
    nn::Conv1d conv({.in_channels = kWidth, .out_channels = kWidth, .kernel_size = 3}, rng);
    constexpr double d = kWidth;
    const std::vector<Layer> layers = {
        // q, k, v and the output projected (4 n D^2); Q K^T and the weighted sum (2 n^2 D)
        {"self-attention", &attention, [&](const Tensor& x) { return attention.forward(x, x); },
         [](double n) {
           return 4 * n * d * d + 2 * n * n * d;
         }},
        // three gates, each from the input and from the state (hidden = D): 6 n D^2
        {"recurrent", &gru, [&](const Tensor& x) { return gru.forward(x).outputs; },
         [](double n) {
           return 6 * n * d * d;
         }},
        // three taps, each a D x D product per position: 3 n D^2
        {"convolution", &conv, [&](const Tensor& x) { return conv.forward(x); },
         [](double n) {
           return 3 * n * d * d;
         }},
    };
    const bench::Limits limits = bench::measure_limits(options.smoke, false);

    std::map<int64_t, std::map<std::string, double>> table;  // n -> layer -> ms
    for (int64_t n = 64; n <= max_n; n *= 2) {
      const Tensor x = Tensor::randn({1, n, kWidth}, rng);
      for (const Layer& layer : layers) {
        check(layer, x);
        const double ms = 1e3 * median_seconds(layer, x, options.smoke);
        table[n][layer.name] = ms;
        bench::JsonLine line;
        line.add("workload", bench::JsonLine::str("attn-scaling"))
            .add("layer", bench::JsonLine::str(layer.name))
            .add("n", n)
            .add("ms_per_step", ms, 3);
        const double flops = 3 * 2 * layer.multiply_adds(static_cast<double>(n));
        bench::add_efficiency(line, flops, ms, limits)
            .add("params", layer.module->parameter_count())
            .add("threads", int64_t{options.threads})
            .add("precision", bench::JsonLine::str(to_string(kernels::gemm_precision())))
            .print();
      }
    }
    fmt::print(stderr, "\nms per forward + backward (median), batch 1, d {}\n{:>6}", kWidth, "n");
    for (const Layer& layer : layers) fmt::print(stderr, " {:>15}", layer.name);
    fmt::print(stderr, "\n");
    for (const auto& [n, row] : table) {
      fmt::print(stderr, "{:>6}", n);
      for (const Layer& layer : layers) fmt::print(stderr, " {:>15.2f}", row.at(layer.name));
      fmt::print(stderr, "\n");
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "attn_scaling: {}\n", e.what());
    return 1;
  }
  return 0;
}
