// bench/gemm: GFLOP/s of the GEMM kernels on square matrices C = A B, with 1 and 2 threads.
// As in llm.c's dev/ kernels, each size is first checked (the fast kernels against the naive
// one, or against BLAS where the naive loop is too slow) and only then timed: the median of
// repeated runs after a warm-up. stdout gets one JSON object per result (see bench/README.md);
// stderr gets a table for people.
//
//   gemm [--smoke] [--sizes 512,1024] [--naive]
#include "autograd/kernels/gemm.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "autograd/kernels/parallel.h"

namespace {

using gf::kernels::GemmArgs;
using Kernel = void (*)(const GemmArgs&);

constexpr std::string_view kUsage =
    "usage: gemm [--smoke] [--sizes 512,1024] [--naive] [--help]\n"
    "  Times C = A B (float32, square) for each size with 1 and 2 threads and prints one\n"
    "  JSON object per line: "
    "{\"workload\":\"gemm\",\"kernel\":...,\"size\":...,\"threads\":...,\"gflops\":...}\n"
    "  --smoke    sizes 128 and 256, one timed run each (for CI, well under a second)\n"
    "  --sizes    comma-separated sizes (default 128,256,512,1024,2048)\n"
    "  --naive    also time the naive kernel up to size 512 (default: up to 256 only)\n"
    "  Where the build can multiply in bfloat16 (AVX512-BF16), the blocked kernel is also\n"
    "  timed so (kernel \"blocked-bf16\"), checked against the reference on rounded operands.\n";

struct Options {
  std::vector<int64_t> sizes{128, 256, 512, 1024, 2048};
  bool smoke = false;
  bool naive = false;
};

std::vector<int64_t> parse_sizes(std::string_view text) {
  std::vector<int64_t> sizes;
  while (!text.empty()) {
    const size_t comma = std::min(text.find(','), text.size());
    const std::string item(text.substr(0, comma));
    char* end = nullptr;
    const long long value = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || value <= 0)
      throw std::invalid_argument(fmt::format("gemm: bad size \"{}\" in --sizes", item));
    sizes.push_back(value);
    text.remove_prefix(std::min(comma + 1, text.size()));
  }
  if (sizes.empty()) throw std::invalid_argument("gemm: --sizes needs at least one size");
  return sizes;
}

// Returns nothing when --help was asked for.
std::optional<Options> parse_options(int argc, char** argv) {
  Options options;
  bool sizes_given = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") return std::nullopt;
    if (arg == "--smoke") {
      options.smoke = true;
    } else if (arg == "--naive") {
      options.naive = true;
    } else if (arg == "--sizes" && i + 1 < argc) {
      options.sizes = parse_sizes(argv[++i]);
      sizes_given = true;
    } else {
      throw std::invalid_argument(fmt::format("gemm: unknown argument \"{}\"", arg));
    }
  }
  if (options.smoke && !sizes_given) options.sizes = {128, 256};
  return options;
}

// Median wall time of one call, after one warm-up call (which also fills the caches and the
// kernels' packing buffers). Enough repetitions for about 0.2 s in all, at least 3.
double median_seconds(Kernel kernel, const GemmArgs& args, bool smoke) {
  using Clock = std::chrono::steady_clock;
  const auto time_once = [&] {
    const auto start = Clock::now();
    kernel(args);
    return std::chrono::duration<double>(Clock::now() - start).count();
  };
  const double first = time_once();
  const int reps = smoke ? 1 : std::clamp(static_cast<int>(0.2 / first), 3, 1000);
  std::vector<double> times(static_cast<size_t>(reps));
  for (double& t : times) t = time_once();
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

// The largest |x - reference| allowed for sums of k products of numbers in [-1, 1]: rounding
// error grows with k; a wrong or missing term is far larger.
float tolerance(int64_t k) {
  return 1e-5f * static_cast<float>(k) + 1e-5f;
}

float max_abs_difference(const std::vector<float>& x, const std::vector<float>& reference) {
  float worst = 0.0f;
  for (size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::abs(x[i] - reference[i]));
  return worst;
}

struct KernelInfo {
  std::string_view name;
  Kernel kernel;
  bool bfloat16 = false;  // multiplies operands rounded to bfloat16
};

// The blocked kernel with its operands rounded to bfloat16 (gemm.h).
void gemm_blocked_bfloat16(const GemmArgs& args) {
  gf::kernels::set_gemm_precision(gf::kernels::GemmPrecision::BFloat16);
  gf::kernels::gemm_blocked(args);
  gf::kernels::set_gemm_precision(gf::kernels::GemmPrecision::Float32);
}

// The reference for bfloat16 products: the naive loop (or BLAS) on the operands rounded to
// bfloat16, which differs from them only by float32's rounding of the sums.
std::vector<float> rounded_reference(const GemmArgs& args, Kernel reference_kernel) {
  const auto rounded = [](const float* x, int64_t count) {
    std::vector<float> out(x, x + count);
    for (float& v : out) v = gf::kernels::round_to_bfloat16(v);
    return out;
  };
  const std::vector<float> a = rounded(args.a, args.m * args.k),
                           b = rounded(args.b, args.k * args.n);
  std::vector<float> c(static_cast<size_t>(args.m * args.n));
  GemmArgs rounded_args = args;
  rounded_args.a = a.data();
  rounded_args.b = b.data();
  rounded_args.c = c.data();
  reference_kernel(rounded_args);
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  try {
    const std::optional<Options> parsed = parse_options(argc, argv);
    if (!parsed) {
      fmt::print("{}", kUsage);
      return 0;
    }
    options = *parsed;
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}\n{}", e.what(), kUsage);
    return 2;
  }

  const bool blas = gf::kernels::have_blas();
  // table[{size, threads}][kernel] = GFLOP/s, for the summary on stderr.
  std::map<std::pair<int64_t, int>, std::map<std::string_view, double>> table;
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);

  for (const int64_t size : options.sizes) {
    const auto elements = static_cast<size_t>(size * size);
    std::vector<float> a(elements), b(elements), c(elements), reference(elements);
    for (float& x : a) x = uniform(rng);
    for (float& x : b) x = uniform(rng);
    const GemmArgs args{
        .m = size, .n = size, .k = size, .a = a.data(), .b = b.data(), .c = c.data()};
    GemmArgs reference_args = args;
    reference_args.c = reference.data();

    // The naive loop takes ~0.1 s at 512 and minutes at 2048; above 512 BLAS is the reference.
    std::string_view reference_name = "none";
    Kernel reference_kernel = nullptr;
    if (size <= 512) {
      reference_kernel = gf::kernels::gemm_naive;
      reference_name = "naive";
    } else if (blas) {
      reference_kernel = gf::kernels::gemm_blas;
      reference_name = "blas";
    }
    if (reference_kernel) reference_kernel(reference_args);
    std::vector<float> bfloat16_reference;
    if (reference_kernel && gf::kernels::have_bfloat16())
      bfloat16_reference = rounded_reference(args, reference_kernel);

    std::vector<KernelInfo> kernels;
    if (size <= (options.naive ? 512 : 256)) kernels.push_back({"naive", gf::kernels::gemm_naive});
    kernels.push_back({"blocked", gf::kernels::gemm_blocked});
    if (blas) kernels.push_back({"blas", gf::kernels::gemm_blas});
    if (gf::kernels::have_bfloat16())
      kernels.push_back({"blocked-bf16", gemm_blocked_bfloat16, true});

    for (const int threads : {1, 2}) {
      gf::kernels::set_num_threads(threads);
      for (const KernelInfo& kernel : kernels) {
        if (kernel.name != reference_name && reference_name != "none") {
          std::fill(c.begin(), c.end(), 0.0f);
          kernel.kernel(args);
          const float error =
              max_abs_difference(c, kernel.bfloat16 ? bfloat16_reference : reference);
          if (!(error <= tolerance(size))) {
            fmt::print(stderr,
                       "gemm: {} differs from {} at size {} with {} threads (max |diff| {})\n",
                       kernel.name, reference_name, size, threads, error);
            return 1;
          }
        }
        const double seconds = median_seconds(kernel.kernel, args, options.smoke);
        const double gflops = 2.0 * static_cast<double>(size * size * size) / seconds * 1e-9;
        table[{size, threads}][kernel.name] = gflops;
        fmt::print(
            "{{\"workload\":\"gemm\",\"kernel\":\"{}\",\"size\":{},\"threads\":{},\"gflops\":{:.1f}"
            "}}\n",
            kernel.name, size, threads, gflops);
        std::fflush(stdout);
      }
    }
  }

  fmt::print(stderr, "\nGFLOP/s (median)\n{:>6} {:>7} {:>8} {:>8} {:>8} {:>13} {:>13}\n", "size",
             "threads", "naive", "blocked", "blas", "blocked/blas", "blocked-bf16");
  for (const auto& [key, row_of_key] : table) {
    const auto& row = row_of_key;  // a lambda cannot capture a structured binding in clang 14
    const auto cell = [&row](std::string_view name) {
      return row.contains(name) ? fmt::format("{:.1f}", row.at(name)) : std::string("-");
    };
    const std::string ratio =
        row.contains("blas") ? fmt::format("{:.2f}", row.at("blocked") / row.at("blas")) : "-";
    fmt::print(stderr, "{:>6} {:>7} {:>8} {:>8} {:>8} {:>13} {:>13}\n", key.first, key.second,
               cell("naive"), cell("blocked"), cell("blas"), ratio, cell("blocked-bf16"));
  }
  return 0;
}
