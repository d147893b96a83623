// Lesson 11, section 5: products in bfloat16, as an opt-in (kernels::set_gemm_precision).
//
// bfloat16 keeps float32's 8 exponent bits and 8 of its 24 significant bits. A CPU with
// AVX512-BF16 multiplies pairs of them twice as many to an instruction as float32 and sums the
// products in float32; whether that is faster depends on how often the CPU can issue the
// instruction, which the section measures. It measures what bfloat16 costs in accuracy and
// buys (or costs) in speed: on one number, on one product, on a training step, and on the
// training of the copy task and the toy translation, float32 beside bfloat16 on the same seeds
// and batches.
#include "lessons/11_making_it_fast/bfloat16.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#if defined(__AVX512BF16__) && defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "autograd/kernels/gemm.h"
#include "autograd/kernels/parallel.h"
#include "autograd/kernels/roofline.h"
#include "data/tasks.h"
#include "training/evaluate.h"
#include "training/run.h"
#include "viz/line_plot.h"

namespace gf::lessons {
namespace {

using kernels::GemmPrecision;

constexpr GemmPrecision kPrecisions[] = {GemmPrecision::Float32, GemmPrecision::BFloat16};
// The seconds f takes, once.
template <typename F>
double seconds_of(F&& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return seconds_since(start);
}

constexpr viz::Rgb kFloat32Colour{31, 119, 180}, kBfloat16Colour{255, 127, 14};

// ---- What bfloat16 keeps of a number -------------------------------------------------

void what_it_keeps(uint64_t seed, Checks& check) {
  fmt::print("  {:>14} {:>16} {:>12}\n", "x", "as bfloat16", "rel. error");
  for (const float x : {3.14159265f, 0.1f, 1000.5f, 1e-30f, 3e38f}) {
    const float b = kernels::round_to_bfloat16(x);
    fmt::print("  {:>14.8g} {:>16.10g} {:>12.2e}\n", x, b, std::abs(b - x) / x);
  }
  // The relative error of rounding to 8 significant bits is at most half a step, 2^-8 of the
  // number (a step is 2^-7 of the power of two below it); float32's is 2^-24.
  std::mt19937 rng(static_cast<uint32_t>(seed));
  std::uniform_real_distribution<float> exponent(-30.0f, 30.0f);
  double worst = 0;
  for (int i = 0; i < 1'000'000; ++i) {
    const float x = std::exp2(exponent(rng));
    worst = std::max(worst, std::abs(double{kernels::round_to_bfloat16(x)} - x) / x);
  }
  fmt::print(
      "\n  largest relative error of 10^6 numbers from 2^-30 to 2^30: {:.3e} (2^-8 = {:.3e})\n",
      worst, std::exp2(-8.0));
  check(worst <= std::exp2(-8.0) && worst > std::exp2(-9.0),
        "rounding to bfloat16 loses at most 2^-8 of a number, and close to that at worst "
        "(truncating would lose up to 2^-7)");
}

// ---- One product -------------------------------------------------------------------------

#if defined(__AVX512BF16__) && defined(__AVX512F__)
// GFLOP/s of vdpbf16ps on registers alone, as kernels::fma_gflops measures vfmadd231ps's
// (part 1): kernels::kChains independent chains, each instruction 32 multiply-adds of bfloat16
// pairs summed into 16 float32. The best of 40 short trials on `threads` threads.
double bfloat16_dot_peak_gflops(int threads) {
  constexpr int64_t kIterations = 200'000;
  double best = 0;
  for (int trial = 0; trial < 40; ++trial) {
    std::vector<float> sinks(static_cast<size_t>(threads));
    const auto start = std::chrono::steady_clock::now();
    kernels::run_parts(threads, [&](int part) {
      __m512 acc[kernels::kChains];
      for (int c = 0; c < kernels::kChains; ++c) acc[c] = _mm512_set1_ps(static_cast<float>(c));
      // 32 bfloat16 of 0.001: each instruction adds 2e-6 to a sum, which never overflows.
      const __m512bh small = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-3f), _mm512_set1_ps(1e-3f));
      for (int64_t it = 0; it < kIterations; ++it) {
#pragma GCC unroll 16
        for (int c = 0; c < kernels::kChains; ++c) acc[c] = _mm512_dpbf16_ps(acc[c], small, small);
      }
      alignas(64) float lanes[16];
      for (int c = 0; c < kernels::kChains; ++c) {
        _mm512_store_ps(lanes, acc[c]);
        for (const float x : lanes) sinks[static_cast<size_t>(part)] += x;
      }
    });
    const double seconds = seconds_since(start);
    if (!(std::accumulate(sinks.begin(), sinks.end(), 0.0f) > 0.0f)) continue;  // uses the sums
    const double flops = 2.0 * 32 * kernels::kChains * static_cast<double>(kIterations) * threads;
    best = std::max(best, flops / seconds * 1e-9);
  }
  return best;
}
#else
double bfloat16_dot_peak_gflops(int /*threads*/) {
  return 0;  // not called: without AVX512-BF16 the section stops before the products
}
#endif

struct ProductResult {
  double gflops = 0, worst_error = 0;
};

void one_product(const Bfloat16Setup& s, Checks& check) {
  const int64_t n = s.quick ? 256 : 1024;
  std::mt19937 rng(static_cast<uint32_t>(s.seed));
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  const auto elements = static_cast<size_t>(n * n);
  std::vector<float> a(elements), b(elements), c(elements), rounded_ref(elements);
  for (float& x : a) x = uniform(rng);
  for (float& x : b) x = uniform(rng);
  // The exact product, in double; and float32's naive loop on the operands rounded to bfloat16,
  // which is what the bfloat16 kernel computes up to float32's rounding of the sums.
  std::vector<double> exact(elements, 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t p = 0; p < n; ++p)
      for (int64_t j = 0; j < n; ++j)
        exact[static_cast<size_t>(i * n + j)] +=
            double{a[static_cast<size_t>(i * n + p)]} * b[static_cast<size_t>(p * n + j)];
  std::vector<float> a16(a), b16(b);
  for (float& x : a16) x = kernels::round_to_bfloat16(x);
  for (float& x : b16) x = kernels::round_to_bfloat16(x);
  kernels::gemm_naive(
      {.m = n, .n = n, .k = n, .a = a16.data(), .b = b16.data(), .c = rounded_ref.data()});

  kernels::set_num_threads(s.threads);
  const kernels::GemmArgs args{.m = n, .n = n, .k = n, .a = a.data(), .b = b.data(), .c = c.data()};
  ProductResult results[2];
  float worst_against_rounded = 0;
  for (int v = 0; v < 2; ++v) {  // the errors, after a first run that fills the caches
    kernels::set_gemm_precision(kPrecisions[v]);
    kernels::gemm(args);
    for (size_t i = 0; i < elements; ++i)
      results[v].worst_error = std::max(results[v].worst_error, std::abs(c[i] - exact[i]));
    if (kPrecisions[v] == GemmPrecision::BFloat16)
      worst_against_rounded = max_abs_diff(c, rounded_ref);
  }
  // The fastest of several runs of each, the two in turn, so that a change in the machine's
  // load falls on both alike.
  double fastest[2] = {1e30, 1e30};
  for (int r = 0; r < (s.quick ? 2 : 7); ++r)
    for (int v = 0; v < 2; ++v) {
      kernels::set_gemm_precision(kPrecisions[v]);
      fastest[v] = std::min(fastest[v], seconds_of([&] { kernels::gemm(args); }));
    }
  for (int v = 0; v < 2; ++v)
    results[v].gflops = 2.0 * static_cast<double>(n * n * n) / fastest[v] * 1e-9;
  kernels::set_gemm_precision(GemmPrecision::Float32);
  fmt::print("  C = A B, n = {}, entries of A and B uniform in [-1, 1]\n\n", n);
  fmt::print("  largest |C - exact|: float32 {:.2e}, bfloat16 {:.2e} ({:.0f}x)\n",
             results[0].worst_error, results[1].worst_error,
             results[1].worst_error / results[0].worst_error);
  check(worst_against_rounded <= 2e-6f * static_cast<float>(n),
        "the bfloat16 product equals float32's naive loop on the rounded operands, up to "
        "float32's rounding of the sums: only the operands lose bits");
  check(results[1].worst_error > 30 * results[0].worst_error,
        "the bfloat16 product is more than 30x further from the exact one than float32's");
  const double speedup = results[1].gflops / results[0].gflops;
  const double fma_peak = kernels::peak_gflops(s.threads);
  const double dot_peak = bfloat16_dot_peak_gflops(s.threads);
  const double peak_ratio = dot_peak / fma_peak;
  fmt::print("\n  speed on {} threads:\n", s.threads);
  fmt::print(
      "    peaks on registers: vfmadd231ps {:6.1f} GFLOP/s, vdpbf16ps {:6.1f} GFLOP/s, {:.2f}x\n",
      fma_peak, dot_peak, peak_ratio);
  fmt::print("     float32: {:6.1f} GFLOP/s\n", results[0].gflops);
  fmt::print("    bfloat16: {:6.1f} GFLOP/s, {:.2f}x\n", results[1].gflops, speedup);
  check.timing(speedup > 0.5 * peak_ratio,
               "the bfloat16 product's speed-up over float32's is more than half the ratio of "
               "the two instructions' peaks");
}

// ---- A training step, and training -------------------------------------------------------

training::RunConfig task_config(const Bfloat16Setup& s, training::Task task, uint64_t seed) {
  training::RunConfig c;
  c.task = task;
  c.seed = seed;
  c.steps = s.quick ? 50 : 600;
  if (s.quick) {  // a smaller model, warmed up sooner: enough to see the loss fall
    c.d_model = 32;
    c.d_ff = 128;
    c.layers = 1;
    c.warmup = 10;
  }
  c.eval_every = 0;  // scored once, after the last step
  c.snapshots = 0;
  c.save = s.out_dir + "/bfloat16_model.safetensors";  // never written: nothing is saved
  return c;
}

struct StepTimes {
  double float32_ms = 1e30, bfloat16_ms = 1e30;
};

// The fastest training step of the copy task's model at d_model in each precision, the two
// runs stepped in turn, so that a change in the machine's load falls on both alike. Each Run
// sets the (process-wide) precision of its config before each of its steps.
StepTimes step_times(const Bfloat16Setup& s, int64_t d_model) {
  training::RunConfig c = task_config(s, training::Task::Copy, s.seed);
  c.d_model = d_model;
  c.d_ff = 4 * d_model;
  c.heads = 8;
  training::Run float32(c);
  c.bfloat16 = true;
  training::Run bfloat16(c);
  StepTimes best;
  const int rounds = s.quick ? 2 : d_model <= 64 ? 20 : 3;
  for (int r = -1; r < rounds; ++r) {  // round -1 warms up: caches, allocator, packing buffers
    const double f32 = 1e3 * seconds_of([&] { float32.step(); });
    const double b16 = 1e3 * seconds_of([&] { bfloat16.step(); });
    if (r < 0) continue;
    best.float32_ms = std::min(best.float32_ms, f32);
    best.bfloat16_ms = std::min(best.bfloat16_ms, b16);
  }
  kernels::set_gemm_precision(GemmPrecision::Float32);
  return best;
}

void step_speed(const Bfloat16Setup& s, Checks& check) {
  fmt::print("  one training step of the copy task, batch 64, {} threads\n\n", s.threads);
  fmt::print("  {:>8} {:>14} {:>14} {:>10}\n", "d_model", "float32 ms", "bfloat16 ms", "speedup");
  const std::vector<int64_t> widths =
      s.quick ? std::vector<int64_t>{64} : std::vector<int64_t>{64, 256, 512};
  std::vector<double> speedups;
  for (const int64_t d : widths) {
    const StepTimes t = step_times(s, d);
    speedups.push_back(t.float32_ms / t.bfloat16_ms);
    fmt::print("  {:>8} {:>14.2f} {:>14.2f} {:>9.2f}x\n", d, t.float32_ms, t.bfloat16_ms,
               speedups.back());
  }
  if (widths.size() < 2) return;  // --quick times one model: nothing to compare
  // How far from 1 a speed-up is, the same for a gain and a loss: |log|, so 2x and 0.5x alike.
  const auto distance_from_1 = [](double speedup) {
    return std::abs(std::log(speedup));
  };
  check.timing(distance_from_1(speedups.back()) > distance_from_1(speedups.front()),
               fmt::format("a bfloat16 step's speed-up is further from 1 at d_model {} than at "
                           "{}: a larger model spends more of its step in large products",
                           widths.back(), widths.front()));
}

struct TrainResult {
  std::vector<float> losses;
  double late_loss = 0;  // the mean loss of the last tenth of the steps
  double score = 0;      // copy: % exact of fresh sequences; translation: BLEU on dev
};

TrainResult train(const Bfloat16Setup& s, training::Task task, uint64_t seed,
                  GemmPrecision precision) {
  training::RunConfig c = task_config(s, task, seed);
  c.bfloat16 = precision == GemmPrecision::BFloat16;
  training::Run run(c);
  while (!run.finished()) run.step();
  TrainResult r{.losses = run.losses()};
  const size_t tail = std::max<size_t>(1, r.losses.size() / 10);
  r.late_loss =
      std::accumulate(r.losses.end() - static_cast<std::ptrdiff_t>(tail), r.losses.end(), 0.0) /
      static_cast<double>(tail);
  if (task == training::Task::Copy) {
    Rng rng(seed + 1000);
    r.score = 100 * training::exact_match(
                        run.model(), data::generate(data::Task::Copy, s.quick ? 50 : 200, {}, rng));
  } else {
    // Every dev pair; --quick scores the first 50, since its models have not learned yet.
    std::span<const data::SentencePair> dev = run.text().dev.pairs;
    if (s.quick) dev = dev.first(std::min<size_t>(50, dev.size()));
    r.score = training::score_translations(run.model(), *run.tokenizer(), dev).bleu.score;
  }
  kernels::set_gemm_precision(GemmPrecision::Float32);
  return r;
}

// A moving average over `width` steps, so that two close curves can be told apart.
std::vector<float> smoothed(const std::vector<float>& ys, size_t width) {
  std::vector<float> out(ys.size());
  double sum = 0;
  for (size_t i = 0; i < ys.size(); ++i) {
    sum += ys[i];
    if (i >= width) sum -= ys[i - width];
    out[i] = static_cast<float>(sum / static_cast<double>(std::min(i + 1, width)));
  }
  return out;
}

void training_curves(const Bfloat16Setup& s, Checks& check) {
  struct TaskRow {
    training::Task task;
    const char* name;
    const char* score;
    const char* file;
  };
  const TaskRow tasks[] = {
      {training::Task::Copy, "copy", "% exact", "bfloat16_copy.png"},
      {training::Task::ToyTranslation, "toy translation", "BLEU", "bfloat16_translation.png"}};
  const int seeds = s.quick ? 1 : 3;
  for (const TaskRow& t : tasks) {
    fmt::print("\n  {}: {} steps, the same seed and batches for both\n\n", t.name,
               task_config(s, t.task, 1).steps.value_or(0));
    fmt::print("  {:>6} {:>14} {:>14} {:>12} {:>12}\n", "seed", "f32 late loss", "bf16 late loss",
               fmt::format("f32 {}", t.score), fmt::format("bf16 {}", t.score));
    std::vector<viz::Series> curves;
    const size_t width = s.quick ? 5 : 20;  // steps of the curves' moving average
    bool learned = true;
    int lower_loss = 0, higher_score = 0;  // seeds on which bfloat16 did better
    for (int k = 0; k < seeds; ++k) {
      const uint64_t seed = s.seed + static_cast<uint64_t>(k);
      const TrainResult f32 = train(s, t.task, seed, GemmPrecision::Float32);
      const TrainResult b16 = train(s, t.task, seed, GemmPrecision::BFloat16);
      fmt::print("  {:>6} {:>14.4f} {:>14.4f} {:>12.1f} {:>12.1f}\n", seed, f32.late_loss,
                 b16.late_loss, f32.score, b16.score);
      lower_loss += b16.late_loss < f32.late_loss;
      higher_score += b16.score > f32.score;
      learned = learned && b16.late_loss < (s.quick ? 0.75 : 0.5) * b16.losses.front() &&
                (s.quick || b16.score >= (t.task == training::Task::Copy ? 99.0 : 90.0));
      // Every seed's curves, one colour a precision: is the gap between the precisions
      // larger than the one between seeds?
      curves.push_back({.name = k == 0 ? "float32" : "",
                        .ys = smoothed(f32.losses, width),
                        .colour = kFloat32Colour});
      curves.push_back({.name = k == 0 ? "bfloat16" : "",
                        .ys = smoothed(b16.losses, width),
                        .colour = kBfloat16Colour});
    }
    fmt::print(
        "\n  bfloat16 ended with the lower late loss on {} of {} seeds, the higher {} on {}\n",
        lower_loss, seeds, t.score, higher_score);
    const uint64_t last_seed = s.seed + static_cast<uint64_t>(seeds - 1);
    const std::string seed_range = seeds == 1 ? fmt::format("seed {}", s.seed)
                                              : fmt::format("seeds {} to {}", s.seed, last_seed);
    save_png(viz::line_plot(curves, {.title = fmt::format("{}, {}: loss, mean of {} steps", t.name,
                                                          seed_range, width),
                                     .y_label = "loss",
                                     .log_y = true}),
             s.out_dir + "/" + t.file);
    check(learned, fmt::format("trained with bfloat16 products, the {} loss falls below {} its "
                               "start{} on every seed",
                               t.name, s.quick ? "3/4 of" : "half",
                               s.quick ? ""
                               : t.task == training::Task::Copy
                                   ? " and at least 99% of fresh sequences are copied exactly"
                                   : " and BLEU on the dev set is at least 90"));
  }
}

}  // namespace

void bfloat16_products(const Bfloat16Setup& s, Checks& check) {
  banner("5. Products in bfloat16");
  if (!kernels::have_bfloat16()) {
    bool refused = false;
    try {
      kernels::set_gemm_precision(GemmPrecision::BFloat16);
    } catch (const std::invalid_argument& e) {
      refused = true;
      fmt::print("  this build cannot multiply in bfloat16:\n  {}\n\n", e.what());
    }
    check(refused && kernels::gemm_precision() == GemmPrecision::Float32,
          "without AVX512-BF16 the library refuses bfloat16 products and stays in float32");
    return;
  }
  what_it_keeps(s.seed, check);
  fmt::print("\n");
  one_product(s, check);
  fmt::print("\n");
  step_speed(s, check);
  training_curves(s, check);
  kernels::set_gemm_precision(GemmPrecision::Float32);
}

}  // namespace gf::lessons
