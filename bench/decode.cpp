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
#include "models/transformer.h"

namespace {

using namespace gf;

constexpr std::string_view kUsage =
    "usage: decode [--smoke] [--threads 2] [--seed 1] [--help]\n"
    "  Times greedy decoding of 32 tokens for 16 sources with the base-size model and prints\n"
    "  one JSON object per variant:\n"
    "  {\"workload\":\"decode\",\"cache\":true,\"ms_per_step\":...,\"tokens_per_s\":...,...}\n"
    "  (ms_per_step: one decoding of the whole batch; tokens_per_s: generated tokens)\n"
    "  --smoke    batch 2, 4 tokens, one timed run (for CI, about a second)\n";

void print_result(bool cache, double seconds, int64_t tokens, int64_t runs, int64_t params,
                  int threads) {
  bench::JsonLine()
      .add("workload", bench::JsonLine::str("decode"))
      .add("cache", cache ? "true" : "false")
      .add("ms_per_step", 1e3 * seconds, 1)
      .add("tokens_per_s", static_cast<double>(tokens) / seconds, 0)
      .add("runs", runs)
      .add("peak_rss_mb", bench::peak_rss_mb(), 1)
      .add("params", params)
      .add("threads", int64_t{threads})
      .print();
  fmt::print(stderr, "decode {:<8} {:>9.1f} ms per batch {:>8.0f} tokens/s ({} run{})\n",
             cache ? "cache" : "no cache", 1e3 * seconds, static_cast<double>(tokens) / seconds,
             runs, runs == 1 ? "" : "s, median");
}

}  // namespace

int main(int argc, char** argv) {
  bench::CommonOptions options;
  try {
    const auto parsed = bench::parse_common(
        argc, argv, "decode", [](std::string_view, std::string_view) { return false; });
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
    print_result(true, bench::median(seconds), tokens, timed_runs, model.parameter_count(),
                 options.threads);
    print_result(false, recompute_seconds, tokens, 1, model.parameter_count(), options.threads);
  } catch (const std::exception& e) {
    fmt::print(stderr, "decode: {}\n", e.what());
    return 1;
  }
  return 0;
}
