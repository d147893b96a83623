// What the model benchmarks share: their command line, a stopwatch, medians, peak memory and
// the JSON line each result is printed as (bench/README.md lists the keys). bench/torch/ prints
// the same lines for PyTorch, and bench/compare.py puts the two side by side.
#pragma once

#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "autograd/kernels/gemm.h"
#include "autograd/kernels/gemm_log.h"
#include "autograd/kernels/parallel.h"
#include "autograd/kernels/roofline.h"
#include "autograd/random.h"
#include "autograd/tensor.h"
#include "data/vocab.h"

namespace gf::bench {

struct CommonOptions {
  bool smoke = false;  // tiny step counts, for CI: the program runs in a second or two
  int threads = 2;     // bench/README.md: every workload on two threads
  uint64_t seed = 1;
  bool bfloat16 = false;  // --bf16: large products in bfloat16 (autograd/kernels/gemm.h)
};

// ids [rows, cols], uniform over the content ids [kNumSpecial, vocab), so no pad appears.
inline IndexTensor random_ids(int64_t rows, int64_t cols, int64_t vocab, Rng& rng) {
  std::vector<int32_t> ids(static_cast<size_t>(rows * cols));
  for (int32_t& id : ids)
    id = static_cast<int32_t>(data::kNumSpecial + rng.below(vocab - data::kNumSpecial));
  return IndexTensor::from({rows, cols}, std::move(ids));
}

// A non-negative integer flag value. Throws std::invalid_argument naming the flag.
inline int64_t parse_count(std::string_view program, std::string_view flag, std::string_view text) {
  const std::string digits(text);
  char* end = nullptr;
  const long long value = std::strtoll(digits.c_str(), &end, 10);
  if (digits.empty() || *end != '\0' || value < 0)
    throw std::invalid_argument(fmt::format("{}: bad value \"{}\" for {}", program, text, flag));
  return value;
}

// Parses --smoke, --threads N, --seed N, --bf16 and --help; any other "--name value" pair is handed
// to extra(name, value), which returns false when it does not know the name. A program that
// cannot honour --bf16 says why in no_bf16_because, and --bf16 is then refused on any CPU.
// Returns nothing when --help was asked for. Throws std::invalid_argument naming a bad argument.
template <typename Extra>
std::optional<CommonOptions> parse_common(int argc, char** argv, std::string_view program,
                                          Extra&& extra, std::string_view no_bf16_because = {}) {
  CommonOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--help" || arg == "-h") return std::nullopt;
    if (arg == "--smoke") {
      options.smoke = true;
    } else if (arg == "--bf16") {
      if (!no_bf16_because.empty())
        throw std::invalid_argument(
            fmt::format("{}: --bf16 is not offered ({})", program, no_bf16_because));
      options.bfloat16 = true;
    } else if (arg == "--threads" && has_value) {
      options.threads = static_cast<int>(parse_count(program, arg, argv[++i]));
      if (options.threads < 1)
        throw std::invalid_argument(fmt::format("{}: --threads must be at least 1", program));
    } else if (arg == "--seed" && has_value) {
      options.seed = static_cast<uint64_t>(parse_count(program, arg, argv[++i]));
    } else if (has_value && extra(arg, std::string_view(argv[i + 1]))) {
      ++i;
    } else {
      throw std::invalid_argument(fmt::format("{}: unknown argument \"{}\"", program, arg));
    }
  }
  gf::kernels::set_num_threads(options.threads);
  if (options.bfloat16) gf::kernels::set_gemm_precision(gf::kernels::GemmPrecision::BFloat16);
  return options;
}

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

inline double median(std::vector<double> values) {
  if (values.empty()) throw std::invalid_argument("median of no values");
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// The most resident memory the process has held so far, in MB (Linux reports KiB).
inline double peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

// The machine's limits (autograd/kernels/roofline.h) on all its cores, whatever --threads says:
// the peak a workload is read against is the machine's, not that of the threads it chose.
// Measured in the same process, right after the workload (and the replay of its products),
// so both meet the same load.
struct Limits {
  double peak_gflops = 0, bandwidth_gbs = 0;
};
inline Limits measure_limits(bool smoke, bool bandwidth_too) {
  const int threads_before = kernels::num_threads();
  const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  kernels::set_num_threads(cores);
  Limits limits{.peak_gflops = kernels::peak_gflops(cores, smoke ? 3 : 40)};
  if (bandwidth_too) limits.bandwidth_gbs = kernels::read_bandwidth_gbs(cores, smoke ? 1 : 5);
  kernels::set_num_threads(threads_before);
  return limits;
}

// One JSON object on one line: keys in the order given, values already formatted as JSON
// (numbers as text, strings quoted by str()).
class JsonLine {
 public:
  JsonLine& add(std::string_view key, std::string value) {
    fields_.emplace_back(std::string(key), std::move(value));
    return *this;
  }
  JsonLine& add(std::string_view key, double value, int decimals) {
    return add(key, fmt::format("{:.{}f}", value, decimals));
  }
  JsonLine& add(std::string_view key, int64_t value) { return add(key, std::to_string(value)); }
  static std::string str(std::string_view text) { return fmt::format("\"{}\"", text); }

  void print() const {
    std::string line = "{";
    for (size_t i = 0; i < fields_.size(); ++i)
      line += fmt::format("{}\"{}\":{}", i == 0 ? "" : ",", fields_[i].first, fields_[i].second);
    fmt::print("{}}}\n", line);
    std::fflush(stdout);
  }

 private:
  std::vector<std::pair<std::string, std::string>> fields_;
};

// The time one training step's products take on their own (autograd/kernels/gemm_log.h): the
// gemm() calls of `step` (one more training step), logged, then each shape timed alone. Their
// FLOPs must be the ones models/flops.h counts for the step, `counted_flops`: otherwise one of
// the two is wrong, and the bench says so rather than print a fraction of the wrong count.
template <typename Step>
double products_alone_seconds(Step&& step, double counted_flops) {
  std::vector<kernels::LoggedGemm> shapes;
  {
    kernels::GemmLog log;
    step();
    shapes = log.shapes();
  }
  double logged_flops = 0;
  for (const kernels::LoggedGemm& logged : shapes) logged_flops += logged.total_flops();
  if (std::abs(logged_flops - counted_flops) > 1e-9 * counted_flops)
    throw std::logic_error(fmt::format(
        "a step's gemm() calls did {:.6f} GFLOP, models/flops.h counts {:.6f}: one is wrong",
        logged_flops * 1e-9, counted_flops * 1e-9));
  return kernels::products_alone_seconds(shapes);
}

// The fraction of the peak that `flops` done in `ms` milliseconds make.
inline double fraction_of_peak(double flops, double ms, const Limits& limits) {
  return flops * 1e-9 / (ms * 1e-3) / limits.peak_gflops;
}

// The keys of a training workload's efficiency: the GFLOP of a step's matrix products
// (models/flops.h), the rate the step's time makes of them, and that rate over the peak; then
// where it was measured, the step's ceiling with these kernels: the time of its products alone
// (products_alone_seconds) and the fraction of the peak the step would reach in that time.
inline JsonLine& add_efficiency(JsonLine& line, double flops_per_step, double ms_per_step,
                                const Limits& limits,
                                std::optional<double> products_alone_ms = std::nullopt) {
  line.add("gflop_per_step", flops_per_step * 1e-9, 4)
      .add("gflops", flops_per_step * 1e-9 / (ms_per_step * 1e-3), 1)
      .add("peak_gflops", limits.peak_gflops, 1)
      .add("fraction_of_peak", fraction_of_peak(flops_per_step, ms_per_step, limits), 3);
  if (products_alone_ms)
    line.add("products_alone_ms", *products_alone_ms, 2)
        .add("products_alone_fraction",
             fraction_of_peak(flops_per_step, *products_alone_ms, limits), 3);
  return line;
}

}  // namespace gf::bench
