// bench/decode: greedy decoding speed of the base-size model (Table 3 with a tied vocabulary
// of 8000, as bench/base_step), batch 16, 32 generated tokens per row from 32 random source
// ids (bench/README.md's decode). The model is untrained: speed does not depend on the weights.
//
// Ours decodes with the key/value cache (models/decode.h), so step t computes one new
// position; without it step t recomputes all t + 1. Before timing, both are run once on the
// same sources and must give the same tokens, 32 per row: the cache is an optimisation and
// must not change a single id. That uncached run is reported too (one run, no median), for
// scale; PyTorch's reference (bench/torch/workloads.py) recomputes, as plain
// implementations do.
#include "models/decode.h"

#include <fmt/format.h>

#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

#include "autograd/random.h"
#include "bench/bench_util.h"
#include "data/vocab.h"
#include "models/flops.h"
#include "models/transformer.h"

namespace {

using namespace gf;

constexpr std::string_view kUsage =
    "usage: decode [--smoke] [--threads 2] [--seed 1] [--help]\n"
    "  Times greedy decoding of 32 tokens for 16 sources with the base-size model and prints\n"
    "  one JSON object per variant:\n"
    "  {\"workload\":\"decode\",\"cache\":true,\"ms_per_step\":...,\"tokens_per_s\":...,...}\n"
    "  (ms_per_step: one decoding of the whole batch; tokens_per_s: generated tokens;\n"
    "  floor_ms: the least time the cached decoding could take here, its products at the\n"
    "  measured FMA peak and its reads of weights and cache at the measured memory bandwidth;\n"
    "  times_floor: ms_per_step over floor_ms)\n"
    "  --smoke    batch 2, 4 tokens, one timed run (for CI, about a second)\n";

struct Run {
  bool cache = false;
  double seconds = 0;
  int64_t runs = 0;
};

// `floor_seconds`: the least time the cached decoding could take on this machine
// (models/flops.h), the same for both runs so that each shows its distance from it.
void print_result(const Run& run, int64_t tokens, double floor_seconds, const bench::Limits& limits,
                  double peak_rss_mb, int64_t params, int threads) {
  bench::JsonLine()
      .add("workload", bench::JsonLine::str("decode"))
      .add("cache", run.cache ? "true" : "false")
      .add("ms_per_step", 1e3 * run.seconds, 1)
      .add("tokens_per_s", static_cast<double>(tokens) / run.seconds, 0)
      .add("runs", run.runs)
      .add("floor_ms", 1e3 * floor_seconds, 2)
      .add("times_floor", run.seconds / floor_seconds, 2)
      .add("peak_gflops", limits.peak_gflops, 1)
      .add("bandwidth_gbs", limits.bandwidth_gbs, 1)
      .add("peak_rss_mb", peak_rss_mb, 1)
      .add("params", params)
      .add("threads", int64_t{threads})
      .print();
  fmt::print(stderr,
             "decode {:<8} {:>9.1f} ms per batch {:>8.0f} tokens/s, {:.2f}x the floor of "
             "{:.1f} ms ({} run{})\n",
             run.cache ? "cache" : "no cache", 1e3 * run.seconds,
             static_cast<double>(tokens) / run.seconds, run.seconds / floor_seconds,
             1e3 * floor_seconds, run.runs, run.runs == 1 ? "" : "s, median");
}

}  // namespace

int main(int argc, char** argv) {
  bench::CommonOptions options;
  try {
    // Cached decoding multiplies a few rows at a time, which stay float32, while the full
    // recomputation's large products would not: the two would no longer give the same tokens.
    const auto parsed = bench::parse_common(
        argc, argv, "decode", [](std::string_view, std::string_view) { return false; },
        "cached decoding's few-row products stay float32, so it could not be checked against "
        "the full recomputation");
    if (!parsed) {
      fmt::print("{}", kUsage);
      return 0;
    }
    options = *parsed;
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}\n{}", e.what(), kUsage);
    return 2;
  }
  const int64_t batch = options.smoke ? 2 : 16, length = options.smoke ? 4 : 32;
  const int64_t warmup_runs = options.smoke ? 0 : 1, timed_runs = options.smoke ? 1 : 5;

  try {
    const TransformerConfig config{.vocab_size = 8000, .max_len = 64, .tied = true};
    Rng rng(options.seed);
    Transformer model(config, rng);
    Rng data_rng(options.seed + 1);
    const IndexTensor src = bench::random_ids(batch, length, config.vocab_size, data_rng);
    const auto decode = [&](bool cache) {
      return greedy_decode(model, src, {.max_len = length, .use_cache = cache});
    };

    const std::vector<TokenIds> cached = decode(true);  // also warms up the allocator
    auto start = bench::Clock::now();
    const std::vector<TokenIds> recomputed = decode(false);
    const double recompute_seconds = bench::seconds_since(start);
    if (cached != recomputed)
      throw std::runtime_error("decoding with the cache gives other tokens than without it");
    for (const TokenIds& row : cached)
      if (static_cast<int64_t>(row.size()) != length)
        throw std::runtime_error(fmt::format(
            "a row stopped at eos after {} of {} tokens; try another --seed", row.size(), length));

    std::vector<double> seconds;
    for (int64_t run = 0; run < warmup_runs + timed_runs; ++run) {
      start = bench::Clock::now();
      decode(true);
      if (run >= warmup_runs) seconds.push_back(bench::seconds_since(start));
    }
    const int64_t tokens = batch * length;
    const double peak_rss_mb = bench::peak_rss_mb();  // before the bandwidth's buffer
    const bench::Limits limits = bench::measure_limits(options.smoke, true);
    const double floor_seconds = greedy_decode_floor_seconds(
        config, batch, length, length, limits.peak_gflops, limits.bandwidth_gbs);
    for (const Run& run :
         {Run{.cache = true, .seconds = bench::median(seconds), .runs = timed_runs},
          Run{.cache = false, .seconds = recompute_seconds, .runs = 1}})
      print_result(run, tokens, floor_seconds, limits, peak_rss_mb, model.parameter_count(),
                   options.threads);
  } catch (const std::exception& e) {
    fmt::print(stderr, "decode: {}\n", e.what());
    return 1;
  }
  return 0;
}
