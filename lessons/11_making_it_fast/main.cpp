// Lesson 11: making it fast.
//
// Almost all the arithmetic of a Transformer is matrix multiplication (§3.2's Q K^T and the
// weighted sum of V, every projection, the feed-forward layers of §3.3, the output layer).
// This program takes one product C = A B from the textbook triple loop to the library's
// blocked, vectorised, threaded kernel, one idea at a time, and measures each step in GFLOP/s
// against the machine's peak, which it also measures. Then it profiles whole training steps,
// op by op, from the tape, and shows why a small model runs far below that speed: its work
// comes in pieces too small for the machine (attention's per-head products, passes over
// memory, hand-offs to a second thread), while the tape's own bookkeeping costs almost
// nothing. Section 5, in bfloat16.cpp, multiplies in bfloat16 and trains with it. README.md
// is the text that walks through these files. Every claim is checked; a failed check makes
// the program exit with 1. Timings depend on the machine and on what else runs on it; the
// checks claim only what survives a busy machine.
//
// main(), at the end, is the table of contents: it calls the sections in the order of
// README.md, and they are defined above it in the same order.
//
// Shape legend: n matrix size (square, row-major), B batch, S source length, T target
// length, D d_model, F d_ff, V vocabulary.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "autograd/graph.h"
#include "autograd/kernels/cpu.h"
#include "autograd/kernels/gemm.h"
#include "autograd/kernels/parallel.h"
#include "autograd/kernels/roofline.h"
#include "autograd/kernels/simd.h"
#include "autograd/ops.h"
#include "autograd/profile.h"
#include "autograd/random.h"
#include "autograd/tensor.h"
#include "data/batch.h"
#include "data/tasks.h"
#include "lessons/11_making_it_fast/bfloat16.h"
#include "lessons/lesson.h"
#include "models/flops.h"
#include "models/transformer.h"
#include "nn/optim.h"
#include "viz/bar_chart.h"
#include "viz/line_plot.h"
#include "viz/png.h"

#if defined(__x86_64__)
#include <immintrin.h>  // _mm_getcsr, _mm_setcsr
#endif

using namespace gf;
using namespace gf::lessons;

namespace {

using Clock = std::chrono::steady_clock;

// The fastest of repeated calls of f() (sections 2 and 4; defined below them).
double best_seconds(const std::function<void()>& f, double budget = 0.15);

// ---- 1. The machine's peak ----

// One Vec is one vector register of the CPU this program was compiled for: kLanes floats, 16
// with AVX-512, 4 with ARM's NEON (GCC's vector extension, autograd/kernels/simd.h).
// Arithmetic on a Vec is element-wise.
using kernels::kLanes;
using kernels::Vec;

// The name of one multiply-add instruction: fused (FMA, one rounding) on every 64-bit ARM CPU
// and on x86-64 since AVX2; a multiply, then an add, in a generic x86-64 build.
const char* const kMultiplyAdd = kernels::kFusedMultiplyAdd ? "FMA" : "multiply-add";

Vec load(const float* p) {
  Vec v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// The peak loop is the library's (autograd/kernels/roofline.cpp), which bench/ uses too.
using kernels::fma_gflops;
using kernels::kChains;

struct Peak {
  double one_thread = 0, all_threads = 0;
  bool cores_free = false;  // all_threads > 1.5 one_thread: the other cores were available
};

Peak measure_peak(bool quick, int threads, Checks& check) {
  banner("1. The machine's peak");
  // Many short trials and the best of them: a peak is a maximum, and on a shared machine a
  // short trial has the best chance of finding the cores free.
  const int64_t iterations = 1'000'000;  // a few ms per trial
  const int trials = quick ? 4 : 60;
  Peak peak;
  kernels::set_num_threads(threads);  // run_parts never uses more threads than the pool has
  for (int r = 0; r < trials; ++r) {
    peak.one_thread = std::max(peak.one_thread, fma_gflops(1, iterations));
    peak.all_threads = std::max(peak.all_threads, fma_gflops(threads, iterations));
  }
  fmt::print("  {} loop, {} floats per register ({}), {} chains\n", kMultiplyAdd, kLanes,
             kernels::kVectorUnit, kChains);
  fmt::print("  peak, 1 thread:  {:7.1f} GFLOP/s\n", peak.one_thread);
  fmt::print("  peak, {} threads: {:7.1f} GFLOP/s ({:.2f}x one thread)\n", threads,
             peak.all_threads, peak.all_threads / peak.one_thread);
  check.timing(peak.one_thread > 20.0,
               fmt::format("one core does more than 20 GFLOP/s of vector {}s ({:.0f})",
                           kMultiplyAdd, peak.one_thread));
  // Whether the other cores were free: on a shared machine they may not be (see main).
  peak.cores_free = threads >= 2 && peak.all_threads > 1.5 * peak.one_thread;
  if (threads >= 2 && !peak.cores_free)
    fmt::print("  (the other cores were busy: {} threads did not reach 1.5x one)\n", threads);
  return peak;
}

// Whether the other cores are free now: the best of a few short trials of the peak loop on
// `threads` threads reaches 1.5x one thread's. Load on a shared machine comes and goes, so
// the program asks again before each part that uses several threads.
bool cores_free_now(int threads) {
  if (threads < 2) return false;
  double one = 0, all = 0;
  for (int r = 0; r < 10; ++r) {
    one = std::max(one, fma_gflops(1, 300'000));
    all = std::max(all, fma_gflops(threads, 300'000));
  }
  return all > 1.5 * one;
}

// ---- 2. From the triple loop to the blocked kernel ----

// Every version computes C[n, n] = A[n, n] B[n, n], all row-major.

// [snippet: naive]
// The definition: C[i][j] = sum_k A[i][k] B[k][j]. The k loop walks down a column of B,
// n floats apart, so every step touches a new cache line, and each multiply-add needs two
// loads from memory that is mostly not in cache.
void matmul_ijk(const float* a, const float* b, float* c, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float sum = 0.0f;
      for (int64_t k = 0; k < n; ++k) sum += a[i * n + k] * b[k * n + j];
      c[i * n + j] = sum;
    }
}
// [/snippet]

// [snippet: ikj]
// The same sums with the loops swapped: for each A[i][k], add A[i][k] times row k of B into
// row i of C. The inner loop now reads and writes consecutive floats, which the compiler
// turns into vector instructions, kLanes floats at a time. Each C[i][j] still receives the
// same multiply-adds in the same order of k, only kept in memory between them, not in a
// register.
void matmul_ikj(const float* a, const float* __restrict b, float* __restrict c, int64_t n) {
  std::fill(c, c + n * n, 0.0f);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < n; ++k) {
      const float a_ik = a[i * n + k];
      for (int64_t j = 0; j < n; ++j) c[i * n + j] += a_ik * b[k * n + j];
    }
}
// [/snippet]

// [snippet: tiled]
// i-k-j on tiles of kTile x kTile: the tile of B (16 KiB) stays in the 48 KiB L1 cache
// while all kTile rows of the A tile use it, instead of the whole of B (1 MiB at n = 512)
// streaming through the cache once per row of A. n must be a multiple of kTile.
constexpr int64_t kTile = 64;
void matmul_tiled(const float* a, const float* __restrict b, float* __restrict c, int64_t n) {
  std::fill(c, c + n * n, 0.0f);
  for (int64_t i0 = 0; i0 < n; i0 += kTile)
    for (int64_t k0 = 0; k0 < n; k0 += kTile)
      for (int64_t j0 = 0; j0 < n; j0 += kTile)
        for (int64_t i = i0; i < i0 + kTile; ++i)
          for (int64_t k = k0; k < k0 + kTile; ++k) {
            const float a_ik = a[i * n + k];
            for (int64_t j = j0; j < j0 + kTile; ++j) c[i * n + j] += a_ik * b[k * n + j];
          }
}
// [/snippet]

// [snippet: register-tile]
// The inner loops above load and store C for every multiply-add: the load and store units,
// not the FMA units, set the pace. Here a 4 x 2 kLanes tile of C (4 x 32 with AVX-512) lives
// in 8 vector registers for the whole k loop and is stored once. Each step in k loads 2
// vectors of B and 4 floats of A (broadcast) for 8 FMAs. n must be a multiple of 2 kLanes.
void matmul_register_tile(const float* a, const float* b, float* c, int64_t n) {
  constexpr int64_t kRows = 4, kVecs = 2;
  for (int64_t i = 0; i < n; i += kRows)
    for (int64_t j = 0; j < n; j += kVecs * kLanes) {
      Vec acc[kRows][kVecs] = {};
      for (int64_t k = 0; k < n; ++k) {
        const Vec b0 = load(b + k * n + j), b1 = load(b + k * n + j + kLanes);
        for (int64_t r = 0; r < kRows; ++r) {
          const float a_rk = a[(i + r) * n + k];
          acc[r][0] += a_rk * b0;
          acc[r][1] += a_rk * b1;
        }
      }
      for (int64_t r = 0; r < kRows; ++r)
        for (int64_t v = 0; v < kVecs; ++v)
          std::memcpy(c + (i + r) * n + j + v * kLanes, &acc[r][v], sizeof(Vec));
    }
}
// [/snippet]

// [snippet: library]
// The library's kernels take a GemmArgs (the shapes, the pointers, the transposes).
void library_gemm(void (*kernel)(const kernels::GemmArgs&), int threads, const float* a,
                  const float* b, float* c, int64_t n) {
  kernels::set_num_threads(threads);
  kernel({.m = n, .n = n, .k = n, .a = a, .b = b, .c = c});
}
// [/snippet]

struct Version {
  std::string name;
  std::function<void(const float*, const float*, float*, int64_t)> run;
  bool lesson_loop;  // written out in this file (one thread)
  int threads = 1;
  int64_t largest_n = 1024;  // the slow loops stop at 512, where they take a second already
};

std::vector<Version> versions(int threads) {
  std::vector<Version> v = {
      {"naive i-j-k", matmul_ijk, true, 1, 512},
      {"loop order i-k-j", matmul_ikj, true, 1, 512},
      {"tiles 64 x 64", matmul_tiled, true, 1, 512},
      {fmt::format("register tile 4 x {}", 2 * kLanes), matmul_register_tile, true, 1},
      {"library blocked, 1 thread",
       [](const float* a, const float* b, float* c, int64_t n) {
         library_gemm(kernels::gemm_blocked, 1, a, b, c, n);
       },
       false, 1},
      {fmt::format("library blocked, {} threads", threads),
       [threads](const float* a, const float* b, float* c, int64_t n) {
         library_gemm(kernels::gemm_blocked, threads, a, b, c, n);
       },
       false, threads},
  };
  if (kernels::have_blas())
    v.push_back({fmt::format("OpenBLAS, {} threads", threads),
                 [threads](const float* a, const float* b, float* c, int64_t n) {
                   library_gemm(kernels::gemm_blas, threads, a, b, c, n);
                 },
                 false, threads});
  return v;
}

struct GemmResults {
  int64_t size = 0;                       // the size of the version-by-version comparison
  std::map<std::string, double> at_size;  // GFLOP/s at `size`
  std::vector<std::string> order;         // the versions in the lesson's order
  std::map<std::string, std::vector<double>> sweep_sizes, sweep_gflops;
};

// What timing every version at every size gives besides the rates in GemmResults.
struct Sweep {
  float worst_error = 0.0f;  // of any product against the reference
  double worst_vs_peak = 0;  // the largest GFLOP/s / (threads x one core's peak)
  std::map<std::string, std::vector<float>> products_at_size{};  // C of the lesson's loops
};

// Times every version at every size on random A and B, after checking its product, and prints
// the table of GFLOP/s; the rates go to results.
Sweep time_versions(const std::vector<Version>& all, const std::vector<int64_t>& sizes,
                    const Peak& peak, int threads, Rng& rng, GemmResults& results, Checks& check) {
  fmt::print("  GFLOP/s (2 n^3 / fastest time), C = A B, A and B uniform in [-1, 1]\n");
  fmt::print("  {:>28}", "n");
  for (int64_t n : sizes) fmt::print(" {:>8}", n);
  fmt::print("\n");
  std::map<std::string, std::vector<std::string>> cells;
  Sweep sweep;
  for (int64_t n : sizes) {
    const auto count = static_cast<size_t>(n * n);
    std::vector<float> a(count), b(count), c(count), reference(count);
    for (float& x : a) x = rng.uniform(-1.0f, 1.0f);
    for (float& x : b) x = rng.uniform(-1.0f, 1.0f);
    // The naive loop is the reference up to 512; beyond it takes seconds, and the library's
    // blocked kernel (itself tested against the naive one) stands in.
    const bool naive_runs = n <= 512;
    if (naive_runs)
      matmul_ijk(a.data(), b.data(), reference.data(), n);
    else
      library_gemm(kernels::gemm_blocked, threads, a.data(), b.data(), reference.data(), n);
    for (const Version& v : all) {
      if (n > v.largest_n) {
        cells[v.name].push_back("-");
        continue;
      }
      std::fill(c.begin(), c.end(), 0.0f);
      v.run(a.data(), b.data(), c.data(), n);
      const float error = max_abs_diff(c, reference);
      sweep.worst_error = std::max(sweep.worst_error, error);
      if (n == results.size && v.lesson_loop) sweep.products_at_size[v.name] = c;
      if (!(error <= 1e-5f * static_cast<float>(n))) {
        check(false, fmt::format("{} matches the reference at n = {} (max diff {:.1e})", v.name, n,
                                 error));
        continue;
      }
      const double seconds = best_seconds([&] { v.run(a.data(), b.data(), c.data(), n); });
      const double gflops = 2.0 * std::pow(static_cast<double>(n), 3) / seconds * 1e-9;
      results.sweep_sizes[v.name].push_back(static_cast<double>(n));
      results.sweep_gflops[v.name].push_back(gflops);
      if (n == results.size) results.at_size[v.name] = gflops;
      sweep.worst_vs_peak = std::max(sweep.worst_vs_peak, gflops / (v.threads * peak.one_thread));
      cells[v.name].push_back(fmt::format("{:.1f}", gflops));
    }
  }
  kernels::set_num_threads(threads);
  for (const Version& v : all) {
    fmt::print("  {:>28}", v.name);
    for (const std::string& cell : cells[v.name]) fmt::print(" {:>8}", cell);
    fmt::print("\n");
  }
  return sweep;
}

// The pictures: each version's GFLOP/s at the comparison size against the peak, as bars, and
// the rates of the main versions against the size.
void draw_versions(const std::vector<Version>& all, GemmResults results,
                   const std::vector<int64_t>& sizes, const Peak& peak, int threads,
                   const std::string& out_dir) {
  const auto& g = results.at_size;
  const std::string blocked_n = all[5].name;
  viz::BarChart chart{
      .title = fmt::format("C = A B at n = {}: GFLOP/s of each version", results.size),
      .x_label = "GFLOP/s (fastest of repeats)",
      .segment_names = {"GFLOP/s"},
      .lines = {{"peak of 1 core", peak.one_thread},
                {fmt::format("{} cores", threads), threads * peak.one_thread}},
      .value_format = "{:.1f}"};
  for (const Version& v : all) chart.rows.push_back({v.name, {g.at(v.name)}});
  viz::write_png(viz::bar_chart(chart), out_dir + "/gemm_versions.png");

  // (name in the table, shorter name for the legend)
  std::vector<std::pair<std::string, std::string>> plotted = {
      {all[0].name, "naive"},
      {all[1].name, "i-k-j"},
      {all[3].name, "register tile"},
      {all[4].name, "blocked, 1 thread"},
      {blocked_n, fmt::format("blocked, {} thr.", threads)}};
  if (kernels::have_blas()) plotted.push_back({all.back().name, "OpenBLAS"});
  std::vector<viz::Series> series;
  for (const auto& [name, short_name] : plotted) {
    std::vector<float> xs, ys;
    for (size_t i = 0; i < results.sweep_sizes[name].size(); ++i) {
      xs.push_back(static_cast<float>(results.sweep_sizes[name][i]));
      ys.push_back(static_cast<float>(results.sweep_gflops[name][i]));
    }
    series.push_back({.name = short_name, .xs = xs, .ys = ys});
  }
  series.push_back({.name = fmt::format("{} x peak of 1 core", threads),
                    .xs = {static_cast<float>(sizes.front()), static_cast<float>(sizes.back())},
                    .ys = {static_cast<float>(threads * peak.one_thread),
                           static_cast<float>(threads * peak.one_thread)},
                    .colour = viz::Rgb{60, 60, 60}});
  viz::write_png(viz::line_plot(series, {.title = "GFLOP/s against matrix size",
                                         .x_label = "n (C = A B, all n x n)",
                                         .y_label = "GFLOP/s",
                                         .log_y = true,
                                         .width = 760,
                                         .height = 460}),
                 out_dir + "/gemm_sizes.png");
}

GemmResults from_loop_to_kernel(bool quick, uint64_t seed, const Peak& peak, int threads,
                                const std::string& out_dir, Checks& check) {
  banner("2. From the triple loop to the blocked kernel");
  GemmResults results;
  results.size = quick ? 128 : 512;
  const std::vector<int64_t> sizes =
      quick ? std::vector<int64_t>{64, 128} : std::vector<int64_t>{64, 128, 256, 512, 1024};
  const std::vector<Version> all = versions(threads);
  for (const Version& v : all) results.order.push_back(v.name);
  Rng rng(seed);
  const Sweep sweep = time_versions(all, sizes, peak, threads, rng, results, check);
  fmt::print("  peak: {:.1f} GFLOP/s on 1 core, at most {:.1f} on {}\n", peak.one_thread,
             threads * peak.one_thread, threads);
  // Two cores cannot do more than twice what one does at its best. But the peak is measured
  // at one moment and the GEMMs at another: if another program held the core while the peak
  // was measured (and --quick takes the best of only 4 trials), the peak comes out low and a
  // GEMM run on a free core can beat it. So this is a claim about timings, like the others.
  // Not under an emulator, whose time goes to translating instructions, not to the CPU's units.
  const std::string bound =
      fmt::format("no version beats its thread count times one core's peak (the closest: {:.0f}%)",
                  100 * sweep.worst_vs_peak);
  if (running_under_emulator())
    fmt::print("  [--] {} (not checked: the program runs under an emulator)\n", bound);
  else
    check.timing(sweep.worst_vs_peak <= 1.05, bound);
  check(sweep.worst_error <= 1e-5f * static_cast<float>(sizes.back()),
        fmt::format("every version computes the same product (max |diff| {:.1e} against the "
                    "naive loop, or the blocked kernel at n > 512)",
                    sweep.worst_error));

  // The three reorderings do the same fused multiply-adds in the same order of k, so they
  // agree to the bit; the naive loop's compiled code rounds each product before adding it.
  const auto& ikj = sweep.products_at_size.at(all[1].name);
  check(ikj == sweep.products_at_size.at(all[2].name) &&
            ikj == sweep.products_at_size.at(all[3].name),
        fmt::format("at n = {}, i-k-j, tiles and the register tile give the same bits ({:.1e} "
                    "from the naive loop)",
                    results.size, max_abs_diff(ikj, sweep.products_at_size.at(all[0].name))));
  const auto& g = results.at_size;
  const std::string blocked1 = all[4].name, blocked_n = all[5].name;
  const double speedup = g.at(blocked1) / g.at("naive i-j-k");
  check.timing(speedup >= 10.0,
               fmt::format("at n = {} the blocked kernel on one thread is {:.0f}x the "
                           "naive loop (at least 10x)",
                           results.size, speedup));
  check.timing(g.at("loop order i-k-j") > g.at("naive i-j-k"),
               fmt::format("swapping the loops alone is faster: {:.1f} against {:.1f} GFLOP/s",
                           g.at("loop order i-k-j"), g.at("naive i-j-k")));
  fmt::print("  blocked on one thread reaches {:.0f}% of the one-thread peak\n",
             100.0 * g.at(blocked1) / peak.one_thread);
  // Not a check: whether a second thread pays depends on the size and on whether another
  // program needs that core at that moment, which no run controls on a shared machine.
  if (threads >= 2)
    fmt::print("  {} threads against one at n = {}: {:.2f}x{}\n", threads, results.size,
               g.at(blocked_n) / g.at(blocked1),
               peak.cores_free ? "" : " (the other cores were busy)");

  draw_versions(all, results, sizes, peak, threads, out_dir);
  return results;
}

// The floating-point control register of this thread, and its flush-to-zero bits. x86-64 has
// two in MXCSR: FTZ (bit 15) flushes subnormal results, DAZ (bit 6, denormals-are-zero) reads
// subnormal inputs as 0. On 64-bit ARM one bit of FPCR, FZ (bit 24), does both.
#if defined(__x86_64__)
constexpr bool kCanFlush = true;
constexpr const char* kFlushBits = "FTZ/DAZ";
constexpr uint64_t kFlushMask = 0x8040;
uint64_t float_control() {
  return _mm_getcsr();
}
void set_float_control(uint64_t bits) {
  _mm_setcsr(static_cast<unsigned>(bits));
}
#elif defined(__aarch64__)
constexpr bool kCanFlush = true;
constexpr const char* kFlushBits = "FZ";
constexpr uint64_t kFlushMask = uint64_t{1} << 24;
uint64_t float_control() {
  uint64_t bits = 0;
  __asm__ volatile("mrs %0, fpcr" : "=r"(bits));
  return bits;
}
void set_float_control(uint64_t bits) {
  __asm__ volatile("msr fpcr, %0" : : "r"(bits));
}
#else
constexpr bool kCanFlush = false;  // the lesson knows the bits of these two CPUs only
constexpr const char* kFlushBits = "flush";
constexpr uint64_t kFlushMask = 0;
uint64_t float_control() {
  return 0;
}
void set_float_control(uint64_t) {}
#endif

// [snippet: subnormals]
// Floats below 2^-126 (about 1.2e-38) are subnormal; many CPUs handle them in slow microcode.
// The flush-to-zero bits of the CPU's control register (kFlushMask above) make it treat them
// as 0 instead; the library sets them on every thread that computes.
double ikj_seconds_with_flush(bool flush, const std::vector<float>& a, const std::vector<float>& b,
                              std::vector<float>& c, int64_t n) {
  const uint64_t saved = float_control();
  set_float_control(flush ? saved | kFlushMask : saved & ~kFlushMask);
  const double seconds = best_seconds([&] { matmul_ikj(a.data(), b.data(), c.data(), n); });
  set_float_control(saved);
  return seconds;
}
// [/snippet]

void subnormals(bool quick, uint64_t seed, Checks& check) {
  const int64_t n = quick ? 64 : 128;
  Rng rng(seed + 1);
  const auto count = static_cast<size_t>(n * n);
  std::vector<float> a(count), b(count), c(count);
  // Subnormal by construction (exponent bits 0), since arithmetic on this thread flushes.
  for (float& x : a)
    x = std::bit_cast<float>(static_cast<uint32_t>(0x400000 + rng.below(0x300000)));
  for (float& x : b) x = rng.uniform(-1.0f, 1.0f);
  // Counted on the bits: a comparison with 0 would itself treat subnormals as 0 here.
  const auto nonzero = [&c] {
    return std::count_if(c.begin(), c.end(),
                         [](float x) { return (std::bit_cast<uint32_t>(x) & 0x7fffffffu) != 0; });
  };
  const double slow = ikj_seconds_with_flush(false, a, b, c, n);
  const auto kept = nonzero();
  const double fast = ikj_seconds_with_flush(true, a, b, c, n);
  const auto flushed = nonzero();
  fmt::print("\n  i-k-j at n = {} with every A[i][k] subnormal (6e-39 to 1e-38):\n", n);
  const std::string off = fmt::format("{} off:", kFlushBits),
                    on = fmt::format("{} on:", kFlushBits);
  fmt::print("    {:<12} {:8.3f} ms  ({} of {} entries of C are not 0)\n", off, slow * 1e3, kept,
             c.size());
  fmt::print("    {:<12} {:8.3f} ms  ({} are not 0: the tiny values became 0)\n", on, fast * 1e3,
             flushed);
  if (kCanFlush)
    check(kept > 0 && flushed == 0,
          "without the flush the subnormal products survive; with it they are 0");
  else
    fmt::print("  [--] (this program does not know how to set flush-to-zero on this CPU)\n");
  fmt::print("    time with the flush off / on: {:.2f}\n", slow / fast);
}

// ---- 3. Where a training step's time goes ----

struct ModelSize {
  int64_t d_model = 64, d_ff = 256, heads = 4, steps = 10;
};

struct StepProfile {
  ModelSize size{};
  double step_seconds = 0;              // the fastest step, profiler off
  double profiled_seconds = 0;          // mean, profiler on
  int64_t nodes = 0;                    // nodes on the tape per step
  GemmFlops gemm_flops{};               // per step, forward and backward
  std::vector<profile::OpStats> ops{};  // per step (totals divided by the step count)
  uint64_t weight_bits = 0;             // a fingerprint of the weights' bits after every step
};

// FNV-1a over the bits of every float: two runs that end with the same fingerprint ended,
// in all likelihood, with the same bits in every weight.
uint64_t fingerprint(const std::vector<Tensor>& tensors) {
  uint64_t hash = 14695981039346656037ull;
  for (const Tensor& t : tensors)
    for (int64_t i = 0; i < t.numel(); ++i) {
      hash ^= std::bit_cast<uint32_t>(t.data()[i]);
      hash *= 1099511628211ull;
    }
  return hash;
}

// [snippet: profile-step]
// Steps of the copy task: forward, loss, backward, Adam. The batch is drawn before mark(),
// so only the step itself is charged to the ops.
StepProfile profile_steps(const ModelSize& size, uint64_t seed) {
  Rng rng(seed);
  const TransformerConfig config{.vocab_size = 11,
                                 .d_model = size.d_model,
                                 .d_ff = size.d_ff,
                                 .heads = size.heads,
                                 .encoder_layers = 2,
                                 .decoder_layers = 2,
                                 .max_len = 64,
                                 .dropout = 0.0f};
  Transformer model(config, rng);
  nn::Adam adam(model.parameters());
  StepProfile result{.size = size};
  const auto step = [&](bool count_nodes_too) {
    const data::Batch batch = data::make_batch(data::generate(data::Task::Copy, 64, {}, rng));
    profile::mark();
    const auto start = Clock::now();
    const Tensor loss = cross_entropy(model.forward(batch.src, batch.tgt_in), batch.tgt_out,
                                      {.ignore_index = data::kPad});
    adam.zero_grad();
    if (count_nodes_too) result.nodes = count_nodes(loss);
    loss.backward();
    adam.step();
    result.gemm_flops =
        gemm_flops_per_step(config, 64, batch.src.shape()[1], batch.tgt_in.shape()[1]);
    return seconds_since(start);
  };
  step(true);  // warm-up: the first step allocates Adam's moments and the packing buffers
  std::vector<double> times;
  for (int64_t i = 0; i < size.steps; ++i) times.push_back(step(false));
  result.step_seconds = *std::min_element(times.begin(), times.end());

  profile::reset();
  profile::start();
  double profiled = 0;
  for (int64_t i = 0; i < size.steps; ++i) profiled += step(false);
  profile::stop();
  result.profiled_seconds = profiled / static_cast<double>(size.steps);
  for (profile::OpStats s : profile::report()) {
    const double per_step = 1.0 / static_cast<double>(size.steps);
    s.calls = s.calls / size.steps;
    s.backward_calls = s.backward_calls / size.steps;
    s.forward_seconds *= per_step;
    s.backward_seconds *= per_step;
    result.ops.push_back(s);
  }
  profile::reset();
  result.weight_bits = fingerprint(model.parameters());
  return result;
}
// [/snippet]

// The bigger model of sections 3 and 4: d_model 256 (or the largest below it in a quick
// run). d_model 512 is measured too, but its long steps are the ones a busy machine
// disturbs most, so the checks do not rest on it.
size_t bigger_model(const std::vector<StepProfile>& profiles) {
  size_t big = 0;
  for (size_t i = 0; i < profiles.size(); ++i)
    if (profiles[i].size.d_model <= 256) big = i;
  return big;
}

double tape_seconds(const StepProfile& p) {
  double total = 0;
  for (const profile::OpStats& s : p.ops) total += s.total_seconds();
  return total;
}

double op_seconds(const StepProfile& p, const std::string& op) {
  for (const profile::OpStats& s : p.ops)
    if (s.op == op) return s.total_seconds();
  return 0.0;
}

void print_profile(const StepProfile& p) {
  fmt::print(
      "  d_model {}, d_ff {}, {} heads, 2 + 2 layers, batch 64: {:.2f} ms per step "
      "(fastest of {}), {:.2f} ms with the profiler on (mean)\n",
      p.size.d_model, p.size.d_ff, p.size.heads, p.step_seconds * 1e3, p.size.steps,
      p.profiled_seconds * 1e3);
  fmt::print("  {:>16} {:>7} {:>12} {:>12} {:>7}\n", "op", "nodes", "forward ms", "backward ms",
             "share");
  for (const profile::OpStats& s : p.ops)
    fmt::print("  {:>16} {:>7} {:>12.3f} {:>12.3f} {:>6.1f}%\n", s.op, s.calls,
               s.forward_seconds * 1e3, s.backward_seconds * 1e3,
               100.0 * s.total_seconds() / p.profiled_seconds);
  const double outside = p.profiled_seconds - tape_seconds(p);
  fmt::print("  {:>16} {:>7} {:>12} {:>12.3f} {:>6.1f}%  (Adam, backward's sort, ...)\n",
             "outside the tape", "", "", outside * 1e3, 100.0 * outside / p.profiled_seconds);
}

// The profile as bars: the largest ops, the rest lumped together, and the time outside the
// tape; ms per step.
viz::BarChart profile_chart(const StepProfile& p, size_t shown) {
  viz::BarChart chart{.title = fmt::format("one training step, d_model {}: {:.1f} ms",
                                           p.size.d_model, p.profiled_seconds * 1e3),
                      .x_label = "ms per step",
                      .segment_names = {"forward", "backward", "outside the tape"},
                      .value_format = "{:.2f}"};
  double rest_f = 0, rest_b = 0;
  for (size_t i = 0; i < p.ops.size(); ++i) {
    const profile::OpStats& s = p.ops[i];
    if (i < shown)
      chart.rows.push_back({s.op, {s.forward_seconds * 1e3, s.backward_seconds * 1e3}});
    else
      rest_f += s.forward_seconds * 1e3, rest_b += s.backward_seconds * 1e3;
  }
  if (p.ops.size() > shown)
    chart.rows.push_back({fmt::format("{} other ops", p.ops.size() - shown), {rest_f, rest_b}});
  chart.rows.push_back(
      {"outside the tape", {0.0, 0.0, (p.profiled_seconds - tape_seconds(p)) * 1e3}});
  return chart;
}

std::vector<StepProfile> where_the_time_goes(bool quick, uint64_t seed, const std::string& out_dir,
                                             Checks& check) {
  banner("3. Where a training step's time goes");
  std::vector<ModelSize> sizes = {
      {32, 128, 4, 10}, {64, 256, 4, 10}, {128, 512, 4, 8}, {256, 1024, 4, 6}, {512, 2048, 8, 3}};
  if (quick) sizes = {{32, 128, 4, 2}, {64, 256, 4, 2}, {128, 512, 4, 2}};
  std::vector<StepProfile> profiles;
  for (const ModelSize& size : sizes) profiles.push_back(profile_steps(size, seed));
  const StepProfile& small = profiles[1];
  const StepProfile& big = profiles[bigger_model(profiles)];
  print_profile(small);
  fmt::print("\n");
  print_profile(big);

  for (const StepProfile* p : {&small, &big}) {
    int64_t calls = 0;
    for (const profile::OpStats& s : p->ops) calls += s.calls;
    check(calls == p->nodes,
          fmt::format("d_model {}: the profiler counted one record per node on the tape ({} "
                      "per step)",
                      p->size.d_model, calls));
    check(tape_seconds(*p) <= p->profiled_seconds,
          fmt::format("d_model {}: the time charged to ops ({:.2f} ms) fits inside the step "
                      "({:.2f} ms)",
                      p->size.d_model, tape_seconds(*p) * 1e3, p->profiled_seconds * 1e3));
  }
  viz::Image left = viz::bar_chart(profile_chart(small, 12), 640);
  viz::Image right = viz::bar_chart(profile_chart(big, 12), 640);
  viz::Image both(left.width() + right.width(), std::max(left.height(), right.height()));
  both.blit(left, 0, 0);
  both.blit(right, left.width(), 0);
  viz::write_png(both, out_dir + "/profile.png");
  return profiles;
}

// ---- 4. Why small models run below the GEMM's speed ----

// "1 thread", "2 threads".
std::string threads_label(int threads) {
  return fmt::format("{} thread{}", threads, threads == 1 ? "" : "s");
}

// [snippet: fixed-cost]
// The cost of an op that does no arithmetic worth the name: 1000 adds of one-element
// tensors, recorded on the tape and differentiated. What remains is the fixed cost of an op
// (allocating the output, the node and its closure, and backward's bookkeeping).
double fixed_seconds_per_op() {
  Tensor w = Tensor::scalar(1.0f).set_requires_grad();
  return best_seconds([&] {
           Tensor y = w;
           for (int i = 0; i < 1000; ++i) y = y + w;
           y.backward();
         }) /
         1000.0;
}
// [/snippet]

// [snippet: small-gemm]
// GFLOP/s of one library GEMM of op(A) [m, k] times B [k, n], as an op would call it.
double gemm_gflops(int64_t m, int64_t n, int64_t k, Rng& rng) {
  std::vector<float> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(k * n)),
      c(static_cast<size_t>(m * n));
  for (float& x : a) x = rng.uniform(-1.0f, 1.0f);
  for (float& x : b) x = rng.uniform(-1.0f, 1.0f);
  const kernels::GemmArgs args{.m = m, .n = n, .k = k, .a = a.data(), .b = b.data(), .c = c.data()};
  const double seconds = best_seconds([&] { kernels::gemm(args); }, 0.05);
  return 2.0 * static_cast<double>(m * n * k) / seconds * 1e-9;
}
// [/snippet]

// What each profiled model's step achieves, per model (rows in d_model order): GFLOP/s of the
// whole step and of its linear and attention ops, and the shares of the step's time.
struct StepRates {
  std::vector<float> ds{};                                                             // d_model
  std::vector<float> step_rate{}, linear_rate{}, attention_rate{}, bench_line{};       // GFLOP/s
  std::vector<float> linear_share{}, attention_share{}, other_share{}, fixed_share{};  // %
};

// Prints them as a table; per_op is the fixed cost of one op on the tape, and the large GEMM's
// rate is drawn beside them.
StepRates step_rates(const std::vector<StepProfile>& profiles, double per_op,
                     double gemm_gflops_large) {
  // Every column comes from the profiled steps (their mean), so that the rates and shares
  // of one row are measured on the same steps.
  fmt::print("  the profiled steps of each model (mean):\n");
  fmt::print("  {:>7} {:>8} {:>6} {:>7} {:>8} {:>8} {:>8} {:>7} {:>7} {:>7}\n", "d_model",
             "ms/step", "nodes", "GFLOP", "step", "linear", "attn", "%linear", "%attn", "%fixed");
  fmt::print("  {:>7} {:>8} {:>6} {:>7} {:>8} {:>8} {:>8}\n", "", "", "", "", "GFLOP/s", "GFLOP/s",
             "GFLOP/s");
  std::vector<float> ds, step_rate, linear_rate, attention_rate, bench_line;
  std::vector<float> linear_share, attention_share, other_share, fixed_share;
  for (const StepProfile& p : profiles) {
    const double linear_s = op_seconds(p, "linear"), attention_s = op_seconds(p, "attention");
    const double fixed = static_cast<double>(p.nodes) * per_op / p.profiled_seconds;
    ds.push_back(static_cast<float>(p.size.d_model));
    step_rate.push_back(static_cast<float>(p.gemm_flops.total() / p.profiled_seconds * 1e-9));
    linear_rate.push_back(static_cast<float>(p.gemm_flops.linear / linear_s * 1e-9));
    attention_rate.push_back(static_cast<float>(p.gemm_flops.attention / attention_s * 1e-9));
    bench_line.push_back(static_cast<float>(gemm_gflops_large));
    linear_share.push_back(static_cast<float>(100 * linear_s / p.profiled_seconds));
    attention_share.push_back(static_cast<float>(100 * attention_s / p.profiled_seconds));
    other_share.push_back(100.0f - linear_share.back() - attention_share.back());
    fixed_share.push_back(static_cast<float>(100 * fixed));
    fmt::print(
        "  {:>7} {:>8.2f} {:>6} {:>7.3f} {:>8.1f} {:>8.1f} {:>8.1f} {:>6.0f}% {:>6.0f}% "
        "{:>6.1f}%\n",
        p.size.d_model, p.profiled_seconds * 1e3, p.nodes, p.gemm_flops.total() * 1e-9,
        step_rate.back(), linear_rate.back(), attention_rate.back(), linear_share.back(),
        attention_share.back(), fixed_share.back());
  }
  return {.ds = ds,
          .step_rate = step_rate,
          .linear_rate = linear_rate,
          .attention_rate = attention_rate,
          .bench_line = bench_line,
          .linear_share = linear_share,
          .attention_share = attention_share,
          .other_share = other_share,
          .fixed_share = fixed_share};
}

// The pictures: the GFLOP/s of each model's step against the GEMM's and the peak, and where
// the time of a step goes.
void draw_step_rates(const StepRates& r, int64_t gemm_size, double peak, int model_threads,
                     const std::string& out_dir) {
  viz::write_png(
      viz::line_plot(
          {{.name = "whole training step", .xs = r.ds, .ys = r.step_rate},
           {.name = "linear ops", .xs = r.ds, .ys = r.linear_rate},
           {.name = "attention ops", .xs = r.ds, .ys = r.attention_rate},
           {.name = fmt::format("one {0} x {0} GEMM", gemm_size),
            .xs = r.ds,
            .ys = r.bench_line,
            .colour = viz::Rgb{120, 120, 120}},
           {.name = fmt::format("{} peak, {}", kMultiplyAdd, threads_label(model_threads)),
            .xs = {r.ds.front(), r.ds.back()},
            .ys = {static_cast<float>(peak), static_cast<float>(peak)},
            .colour = viz::Rgb{60, 60, 60}}},
          {.title = "GEMM GFLOP/s achieved inside a training step",
           .x_label = "d_model (d_ff = 4 d_model)",
           .y_label = "GFLOP/s",
           .log_y = true,
           .width = 760,
           .height = 460}),
      out_dir + "/step_gflops.png");
  viz::write_png(viz::line_plot({{.name = "linear", .xs = r.ds, .ys = r.linear_share},
                                 {.name = "attention", .xs = r.ds, .ys = r.attention_share},
                                 {.name = "the rest", .xs = r.ds, .ys = r.other_share},
                                 {.name = "tape bookkeeping", .xs = r.ds, .ys = r.fixed_share}},
                                {.title = "Where the time of a training step goes",
                                 .x_label = "d_model",
                                 .y_label = "% of step time",
                                 .log_y = false,
                                 .width = 760,
                                 .height = 460}),
                 out_dir + "/time_shares.png");
}

// `peak` is the multiply-add peak of the threads the models ran on (model_threads x one core's).
void below_gemm_speed(uint64_t seed, const std::vector<StepProfile>& profiles,
                      double gemm_gflops_large, int64_t gemm_size, double peak, int model_threads,
                      const std::string& out_dir, Checks& check) {
  banner("4. Why small models run below the GEMM's speed");
  const double per_op = fixed_seconds_per_op();
  fmt::print(
      "  fixed cost of one op on the tape, forward and backward, on a 1-element tensor: "
      "{:.2f} us\n",
      per_op * 1e6);
  Rng rng(seed + 2);
  const double projection = gemm_gflops(704, 64, 64, rng);
  const double ffn = gemm_gflops(704, 256, 64, rng);
  const double head = gemm_gflops(11, 11, 16, rng);
  fmt::print("  one GEMM at the d_model 64 model's shapes (704 = 64 sequences x 11 tokens):\n");
  fmt::print("    [704, 64] x [64, 64]   (q, k, v, o projections) {:7.1f} GFLOP/s\n", projection);
  fmt::print("    [704, 64] x [64, 256]  (FFN, first layer)       {:7.1f} GFLOP/s\n", ffn);
  fmt::print("    [11, 16] x [16, 11]    (Q K^T of one head)      {:7.1f} GFLOP/s\n", head);
  fmt::print("    [{0}, {0}] x [{0}, {0}] (the benchmark of section 2) {1:7.1f} GFLOP/s\n\n",
             gemm_size, gemm_gflops_large);

  const StepRates r = step_rates(profiles, per_op, gemm_gflops_large);
  const size_t small = 1, big = bigger_model(profiles);
  // Against the peak, not against one large GEMM: the large GEMM's rate on two threads is the
  // number a shared machine moves most, while a busy machine only makes the step slower.
  check.timing(r.step_rate[small] < 0.5 * peak,
               fmt::format("a d_model 64 training step computes at {:.1f} GFLOP/s, {:.0f}% of the "
                           "peak of {}: under half",
                           r.step_rate[small], 100 * r.step_rate[small] / peak,
                           threads_label(model_threads)));
  check.timing(
      head < 0.25 * gemm_gflops_large && r.attention_rate[small] < 0.25 * gemm_gflops_large,
      fmt::format("attention's products are tiny and slow: one head's Q K^T runs at {:.0f}% of "
                  "the large GEMM's rate, the step's attention ops at {:.0f}%",
                  100 * head / gemm_gflops_large,
                  100 * r.attention_rate[small] / gemm_gflops_large));
  const double fixed_max = *std::max_element(r.fixed_share.begin(), r.fixed_share.end());
  check.timing(
      fixed_max < 10.0,
      fmt::format("the tape's own bookkeeping (nodes x fixed cost per op) is under 10% of a "
                  "step at every size (at most {:.1f}%)",
                  fixed_max));
  // Shares are measured within the same steps, so a busy machine, which slows every op,
  // moves them much less than it moves the rates. Attention's products grow as d_model, the
  // projections and the FFN as d_model^2: from 64 to 256 attention's FLOPs grow 4x, the
  // linear ops' 16x.
  const float shrink = profiles[big].size.d_model >= 256 ? 0.75f : 1.0f;  // quick: d 128
  check.timing(
      r.attention_share[big] < shrink * r.attention_share[small],
      fmt::format("the small products' share shrinks as the model grows: attention is "
                  "{:.0f}% of a step at d_model 64 and {:.0f}% at {}",
                  r.attention_share[small], r.attention_share[big], profiles[big].size.d_model));
  check.timing(r.step_rate[big] > r.step_rate[small],
               fmt::format("and the step's GFLOP/s grows: {:.1f}x from d_model 64 to {}",
                           r.step_rate[big] / r.step_rate[small], profiles[big].size.d_model));

  draw_step_rates(r, gemm_size, peak, model_threads, out_dir);
}

// [snippet: hand-off]
// The fixed cost of a parallel loop: how long until a second thread has joined in. Both parts
// wait until both have started, so a job cannot end before a worker has taken a part. Jobs
// back to back find the worker still polling (for kernels::kSpinMicroseconds after its last
// part); a pause longer than that finds it asleep, and the job has to wake it up.
double handoff_seconds(bool pause_between_jobs, int jobs) {
  std::vector<double> times;
  for (int job = 0; job < jobs; ++job) {
    if (pause_between_jobs)
      std::this_thread::sleep_for(std::chrono::microseconds(5 * kernels::kSpinMicroseconds));
    std::atomic<int> started{0};
    const auto start = Clock::now();
    kernels::run_parts(2, [&](int) {
      started.fetch_add(1);
      while (started.load() < 2 && seconds_since(start) < 0.1)
        kernels::cpu_relax();  // never forever
    });
    times.push_back(seconds_since(start));
  }
  std::nth_element(times.begin(), times.begin() + jobs / 2, times.end());
  return times[static_cast<size_t>(jobs / 2)];  // the median: a typical job, not the luckiest
}
// [/snippet]

// The threads subsection of section 4: what handing a loop to a second thread costs, what
// the second thread buys a small model's step, and that the bits do not depend on it.
void parallel_loops(bool quick, uint64_t seed, int threads, Checks& check) {
  fmt::print("\n  threads:\n");
  // Timings with a second thread mean something only while the other core is free, and on a
  // shared machine even that can change within a second: so the hand-off, measured within
  // milliseconds of asking, is checked, and the training steps are only printed.
  const bool free = cores_free_now(threads);
  if (threads >= 2) {
    kernels::set_num_threads(threads);
    // Fewer jobs on a busy machine, where one can take a scheduler tick (4 ms).
    const bool many = free && !quick;
    const double polling = handoff_seconds(false, many ? 2000 : 20);
    const double asleep = handoff_seconds(true, many ? 200 : 10);
    fmt::print("    a parallel loop reaches a second thread in {:7.2f} us (the worker polls)\n",
               polling * 1e6);
    fmt::print("                                               {:7.2f} us (the worker sleeps)\n",
               asleep * 1e6);
    const std::string claim = fmt::format(
        "handing a loop to a polling worker is more than 10x faster than waking a sleeping one "
        "({:.0f}x)",
        asleep / polling);
    if (free || !check.timings_checked)
      check.timing(10 * polling < asleep, claim);
    else
      fmt::print("  [--] {} (not checked: another program held a core)\n", claim);
  }
  const ModelSize size{64, 256, 4, quick ? 2 : 10};
  kernels::set_num_threads(1);
  const StepProfile one = profile_steps(size, seed);
  kernels::set_num_threads(threads);
  const StepProfile first = profile_steps(size, seed), second = profile_steps(size, seed);
  fmt::print("    d_model 64 step, fastest of {}: {:.2f} ms on 1 thread", size.steps,
             one.step_seconds * 1e3);
  if (threads >= 2)
    fmt::print(", {:.2f} ms on {} ({:.2f}x){}", first.step_seconds * 1e3, threads,
               first.step_seconds / one.step_seconds, free ? "" : " (the other cores are busy)");
  fmt::print("\n    fingerprint of the weights after {} steps: {:016x} on 1 thread\n",
             2 * size.steps + 1, one.weight_bits);
  fmt::print("      on {}, two runs: {:016x} and {:016x}\n", threads_label(threads),
             first.weight_bits, second.weight_bits);
  check(
      first.weight_bits == second.weight_bits,
      fmt::format("two runs on {} end with the same bits in every weight", threads_label(threads)));
  check(first.weight_bits == one.weight_bits,
        fmt::format("{} and 1 thread end with the same bits in every weight",
                    threads_label(threads)));
}

// ---- Timing, for sections 2 and 4 ----

// The fastest time of f() over enough calls for about `budget` seconds (at least 3), after
// one warm-up call that fills the caches and the kernels' packing buffers. The fastest, not
// the median: on a machine shared with other programs it is the run they disturbed least.
double best_seconds(const std::function<void()>& f, double budget) {
  auto start = Clock::now();
  f();
  const double first = seconds_since(start);
  const int reps = std::clamp(static_cast<int>(budget / std::max(first, 1e-9)), 3, 200);
  double best = first;
  for (int r = 0; r < reps; ++r) {
    start = Clock::now();
    f();
    best = std::min(best, seconds_since(start));
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Lesson 11: making it fast"};
  LessonFlags flags(app, "11_making_it_fast", "a smaller run in a few seconds",
                    "seed for the matrices, weights and data", 11);
  int threads = 2;
  app.add_option("--threads", threads, "threads for the library kernels and the models")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  Checks check;
  check.timings_checked = timings_checkable(flags.quick);
  try {
    const auto start = Clock::now();
    kernels::set_num_threads(threads);
    const Peak peak = measure_peak(flags.quick, threads, check);
    const GemmResults gemm =
        from_loop_to_kernel(flags.quick, flags.seed, peak, threads, flags.out(), check);
    subnormals(flags.quick, flags.seed, check);
    // A parallel loop ends when its last part does. A worker that is late to arrive costs
    // nothing (the caller takes its part), but one that has claimed a part and then loses its
    // core to another program holds the loop up until it runs again, and a training step
    // has more than a hundred loops. So when the other cores are busy, the models run on one
    // thread.
    const int model_threads = cores_free_now(threads) ? threads : 1;
    if (model_threads != threads)
      fmt::print("\n  (the other cores are busy: sections 3 and 4 run the models on 1 thread)\n");
    kernels::set_num_threads(model_threads);
    kernels::set_gemm_backend(kernels::GemmBackend::Blocked);
    const std::vector<StepProfile> profiles =
        where_the_time_goes(flags.quick, flags.seed, flags.out(), check);
    // The large GEMM's rate: the blocked kernel at the comparison size, the better of one
    // thread and all (a busy machine can make either the slower).
    const double large_gemm =
        std::max(gemm.at_size.at(gemm.order[4]), gemm.at_size.at(gemm.order[5]));
    below_gemm_speed(flags.seed, profiles, large_gemm, gemm.size, model_threads * peak.one_thread,
                     model_threads, flags.out(), check);
    parallel_loops(flags.quick, flags.seed, threads, check);
    kernels::set_num_threads(model_threads);
    bfloat16_products({.quick = flags.quick,
                       .seed = flags.seed,
                       .threads = model_threads,
                       .out_dir = flags.out()},
                      check);
    fmt::print("\n  total time {:.1f} s\n", seconds_since(start));
  } catch (const std::exception& e) {
    fmt::print("\nlesson 11: stopped by an exception: {}\n", e.what());
    return 1;
  }
  return check.summary("lesson 11");
}
