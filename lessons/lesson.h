// What every lesson program shares: the claims it checks, its section banners, a stopwatch,
// and the few small helpers that several lessons would otherwise each define again.
// A lesson prints each claim as "[ok]" or "[FAILED]" and exits with 1 when any failed, so
// that the test suite, which runs every lesson with --quick, fails with it.
#pragma once

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <limits>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "autograd/tensor.h"
#include "viz/png.h"

namespace gf::lessons {

// The flags every lesson takes: --quick (the small run the tests make), --seed, and --out, the
// folder whose NN_name/ holds what the lesson writes, as its README names it.
struct LessonFlags {
  bool quick = false;
  uint64_t seed = 1;
  std::string out_root = "out";
  std::string folder;  // "03_masks"

  // Adds the three flags to app, each with what it means in this lesson.
  LessonFlags(CLI::App& app, std::string lesson_folder, const std::string& quick_help,
              const std::string& seed_help, uint64_t default_seed = 1)
      : seed(default_seed), folder(std::move(lesson_folder)) {
    app.add_flag("--quick", quick, quick_help + " (the tests use it)");
    app.add_option("--seed", seed, seed_help)->capture_default_str();
    app.add_option("--out", out_root,
                   fmt::format("what the lesson writes goes to <out>/{}/", folder))
        ->capture_default_str();
  }
  // CLI11 holds the addresses of the members above until it parses.
  LessonFlags(const LessonFlags&) = delete;
  LessonFlags& operator=(const LessonFlags&) = delete;
  // The lesson's own folder: <out>/NN_name.
  std::string out() const { return out_root + "/" + folder; }
};

// Every claim goes through check(): it prints the claim, and one failure makes main return 1.
struct Checks {
  int passed = 0;
  int failed = 0;
  // Claims about speed hold on an idle machine with an optimised build, not under the
  // sanitizers or on a machine busy with other work: see timings_checkable(). Unchecked, a
  // timing claim is printed as "[--]" and not counted.
  bool timings_checked = true;

  void operator()(bool ok, const std::string& claim) {
    fmt::print("  [{}] {}\n", ok ? "ok" : "FAILED", claim);
    if (ok)
      ++passed;
    else
      ++failed;
  }
  // The last line of every lesson, and its exit status: 0 when every claim held.
  int summary(const char* lesson) const {
    const int total = passed + failed;
    if (failed > 0) {
      fmt::print("\n{}: {} of {} checks FAILED\n", lesson, failed, total);
      return 1;
    }
    fmt::print("\n{}: all {} checks passed\n", lesson, total);
    return 0;
  }
  void timing(bool ok, const std::string& claim) {
    if (timings_checked)
      (*this)(ok, claim);
    else
      fmt::print("  [--] {} (a timing: not checked in this run)\n", claim);
  }
};

// A section heading in the output; its title matches the README heading of the section.
inline void banner(const char* title) {
  fmt::print("\n== {} ==\n\n", title);
}

// The largest |a - b| over all elements: how a lesson shows that its hand-written version and
// the library's agree. Infinity when the sizes differ, so such a check fails loudly.
inline float max_abs_diff(std::span<const float> a, std::span<const float> b) {
  if (a.size() != b.size()) return std::numeric_limits<float>::infinity();
  float worst = 0.0f;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
  return worst;
}

// The same for two tensors, which must also have the same shape.
inline float max_abs_diff(const Tensor& a, const Tensor& b) {
  if (!(a.shape() == b.shape())) return std::numeric_limits<float>::infinity();
  const auto n = static_cast<size_t>(a.numel());
  return max_abs_diff(std::span<const float>(a.data(), n), std::span<const float>(b.data(), n));
}

// The middle of the values: the mean of the two middle ones when their count is even.
inline double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t half = values.size() / 2;
  return values.size() % 2 ? values[half] : 0.5 * (values[half - 1] + values[half]);
}

// Whether the program runs under an emulator: the tests of the cross-compiled ARM build run
// every lesson under qemu-aarch64 and say so in GRADFORMER_EMULATOR (tests/CMakeLists.txt).
// There the time goes to translating instructions, so not even a bound on one speed by
// another holds.
inline bool running_under_emulator() {
  return std::getenv("GRADFORMER_EMULATOR") != nullptr;
}

// Whether a run checks its claims about speed: not with --quick (the tests run every lesson so,
// under the sanitizers too), not under an emulator, and not with GRADFORMER_SKIP_TIMING_CHECKS
// set, as scripts/check_lesson_outputs.py sets it to compare a full run, beside other tests,
// with the lesson's pages.
inline bool timings_checkable(bool quick) {
  return !quick && !running_under_emulator() &&
         std::getenv("GRADFORMER_SKIP_TIMING_CHECKS") == nullptr;
}

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The shortest of several timed runs of f: the one least disturbed by whatever else runs.
inline double fastest_of(int runs, const std::function<void()>& f) {
  double best = 1e30;
  for (int r = 0; r < runs; ++r) {
    const auto start = std::chrono::steady_clock::now();
    f();
    best = std::min(best, seconds_since(start));
  }
  return best;
}

// Writes a lesson's picture and says so, with its size: "  wrote out/01_autodiff/loss.png
// (720 x 440)".
inline void save_png(const viz::Image& image, const std::string& path) {
  viz::write_png(image, path);
  fmt::print("  wrote {} ({} x {})\n", path, image.width(), image.height());
}

}  // namespace gf::lessons
