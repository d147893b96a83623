// The peak and the bandwidth of roofline.h, each measured with the simplest loop that reaches
// it: multiply-adds on registers for one, a sum over a large buffer for the other.
#include "autograd/kernels/roofline.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "autograd/kernels/parallel.h"
#include "autograd/kernels/simd.h"

namespace gf::kernels {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

// [snippet: peak]
// Multiply-adds on registers and nothing else: kChains independent chains (roofline.h: 16
// with 32 vector registers, 12 with 16), so that the FMA units never wait for a result (each
// FMA takes 4 cycles, and 2 units need 8 in flight), and few enough to stay in registers
// beside `scale` and `shift`.
// run_parts hands out `threads` parts of `iterations` rounds, each round kChains x kLanes
// multiply-adds. A part runs on whichever thread claims it first: when another program holds
// a core, the caller runs both parts one after the other, or the second waits for a core;
// either way the rate shows it.
double fma_gflops(int threads, int64_t iterations) {
  std::vector<float> sinks(static_cast<size_t>(threads));
  const auto start = Clock::now();
  run_parts(threads, [&](int part) {
    Vec acc[kChains];
    for (int c = 0; c < kChains; ++c) acc[c] = Vec{} + static_cast<float>(c);
    const Vec scale = Vec{} + 0.999f, shift = Vec{} + 0.001f;  // acc tends to 1: no overflow
    for (int64_t it = 0; it < iterations; ++it) {
#pragma GCC unroll 16
      for (int c = 0; c < kChains; ++c) acc[c] = acc[c] * scale + shift;  // vfmadd, fmla
    }
    for (int c = 0; c < kChains; ++c)
      for (int lane = 0; lane < kLanes; ++lane) sinks[static_cast<size_t>(part)] += acc[c][lane];
  });
  float sink = 0.0f;
  for (const float s : sinks) sink += s;
  const double seconds = seconds_since(start);
  if (!(sink > 0.0f)) return 0.0;  // uses the sums, so the loop cannot be optimised away
  const double flops = 2.0 * kChains * kLanes * static_cast<double>(iterations) * threads;
  return flops / seconds * 1e-9;
}
// [/snippet]

double peak_gflops(int threads, int trials) {
  double best = 0.0;
  for (int t = 0; t < trials; ++t) best = std::max(best, fma_gflops(threads, 1'000'000));
  return best;
}

// Each part sums its contiguous slice into 8 independent vector accumulators: one would make
// every add wait for the one before, and the loop would measure the adder's latency instead
// of the memory.
double read_gbs(int threads, const float* data, int64_t count) {
  constexpr int kSums = 8;
  const int64_t vectors = count / kLanes;
  std::vector<float> sinks(static_cast<size_t>(threads));
  const auto start = Clock::now();
  run_parts(threads, [&](int part) {
    const int64_t begin = vectors * part / threads, end = vectors * (part + 1) / threads;
    Vec sum[kSums] = {};
    const auto load = [&](int64_t v) {
      Vec x;
      std::memcpy(&x, data + v * kLanes, sizeof x);
      return x;
    };
    int64_t v = begin;
    for (; v + kSums <= end; v += kSums)
      for (int s = 0; s < kSums; ++s) sum[s] += load(v + s);
    for (; v < end; ++v) sum[0] += load(v);
    for (int s = 0; s < kSums; ++s)
      for (int lane = 0; lane < kLanes; ++lane) sinks[static_cast<size_t>(part)] += sum[s][lane];
  });
  const double seconds = seconds_since(start);
  float sink = 0.0f;
  for (const float s : sinks) sink += s;
  if (!(sink >= 0.0f)) return 0.0;  // uses the sums (the buffer holds no negatives)
  return static_cast<double>(vectors * kLanes) * sizeof(float) / seconds * 1e-9;
}

double read_bandwidth_gbs(int threads, int trials) {
  // Ones, written first, so that every page is in memory before the first trial reads it.
  const std::vector<float> buffer(kBandwidthBytes / sizeof(float), 1.0f);
  double best = 0.0;
  for (int t = 0; t < trials; ++t)
    best = std::max(best, read_gbs(threads, buffer.data(), std::ssize(buffer)));
  return best;
}

}  // namespace gf::kernels
