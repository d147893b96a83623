// bench/copy: training speed on the copy task (bench/README.md's copy-tiny and copy-base), the
// Annotated Transformer's first experiment: sequences of 10 ids from [1, 11), the first one
// set to 1 (the start id), and the target equal to the source. There is no end id, so every
// id from 2 to 10 is content (data/tasks.h's copy task differs; bench/README.md fixes this one).
//
// A step is forward + backward + Adam (beta 0.9, 0.98, eps 1e-9) at the warm-up schedule's
// rate (§5.3, eq. 3): training::Trainer::step, as everywhere else. Times cover the step only:
// building the batch and the copy checks are outside the stopwatch, as in
// bench/torch/workloads.py.
//
//   copy-tiny  N=2, d_model 64, d_ff 256, h 4, dropout 0, batch 64: trains until greedy
//              decoding copies 100 fresh sequences exactly (checked every 20 steps) and
//              reports ms/step, target tokens/s, steps_to_100 and seconds_to_100.
//   copy-base  N=2, d_model 512, d_ff 2048, h 8, dropout 0.1, batch 80, warm-up 400: a fixed
//              number of steps; ms/step, tokens/s, peak RSS.
//
// Shape legend: B batch, L sequence length (10), T = L - 1 target positions, V vocabulary.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "autograd/random.h"
#include "bench/bench_util.h"
#include "data/batch.h"
#include "data/pair.h"
#include "data/vocab.h"
#include "models/flops.h"
#include "models/transformer.h"
#include "nn/optim.h"
#include "training/evaluate.h"
#include "training/loop.h"
#include "training/trainer.h"

namespace {

using namespace gf;

constexpr std::string_view kUsage =
    "usage: copy [--workload copy-tiny|copy-base|all] [--smoke] [--threads 2] [--seed 1]\n"
    "            [--bf16] [--max-steps 3000] [--help]\n"
    "  Trains the Transformer on the copy task and prints one JSON object per workload:\n"
    "  {\"workload\":\"copy-tiny\",\"ms_per_step\":...,\"tokens_per_s\":...,\"steps_to_100\":...,\n"
    "   \"seconds_to_100\":...,\"gflop_per_step\":...,\"gflops\":...,\"peak_gflops\":...,\n"
    "   \"fraction_of_peak\":...,\"products_alone_ms\":...,\"products_alone_fraction\":...,\n"
    "   \"peak_rss_mb\":...,\"params\":...,\"threads\":...}\n"
    "  products_alone: one more step's matrix products, each timed on its own, and the fraction\n"
    "  of the peak the step would reach if that were all it did (its ceiling with these kernels)\n"
    "  --workload   which one (default all; run them one per process for a clean peak RSS)\n"
    "  --smoke      a few steps of each, copy-base on batch 8 (for CI, about a second)\n"
    "  --threads    threads (default 2)\n"
    "  --bf16       the large matrix products in bfloat16 (needs AVX512-BF16; lesson 11)\n"
    "  --max-steps  copy-tiny gives up after this many steps (default 3000)\n";

constexpr int64_t kVocab = 11;       // 0 pad, 1 start, 2..10 content
constexpr int64_t kLength = 10;      // ids per sequence, the start id included
constexpr int64_t kCheckEvery = 20;  // steps between two copy checks
constexpr int64_t kCheckSize = 100;  // fresh sequences a check decodes

struct Workload {
  std::string name;
  TransformerConfig config;
  int64_t batch = 0;
  int64_t warmup = 0;         // of the learning-rate schedule (eq. 3)
  bool train_to_100 = false;  // copy-tiny: train until 100 sequences are copied exactly
  int64_t warmup_steps = 0;   // untimed steps before the median (caches, allocator, threads)
  int64_t timed_steps = 0;    // copy-base only; copy-tiny times every step it trains
};

Workload copy_tiny() {
  return {.name = "copy-tiny",
          .config = {.vocab_size = kVocab,
                     .d_model = 64,
                     .d_ff = 256,
                     .heads = 4,
                     .encoder_layers = 2,
                     .decoder_layers = 2,
                     .max_len = 64,
                     .dropout = 0.0f,
                     .tied = false},
          .batch = 64,
          .warmup = 400,
          .train_to_100 = true,
          .warmup_steps = 5};
}

Workload copy_base() {
  return {.name = "copy-base",
          .config = {.vocab_size = kVocab,
                     .d_model = 512,
                     .d_ff = 2048,
                     .heads = 8,
                     .encoder_layers = 2,
                     .decoder_layers = 2,
                     .max_len = 64,
                     .dropout = 0.1f,
                     .tied = false},
          .batch = 80,
          .warmup = 400,
          .warmup_steps = 3,
          .timed_steps = 10};
}

// batch sequences of the Annotated Transformer's copy data: ids from [1, V), position 0 = 1.
std::vector<data::Pair> copy_pairs(int64_t batch, Rng& rng) {
  std::vector<data::Pair> pairs(static_cast<size_t>(batch));
  for (data::Pair& pair : pairs) {
    pair.src.push_back(data::kBos);
    for (int64_t i = 1; i < kLength; ++i)
      pair.src.push_back(static_cast<int32_t>(1 + rng.below(kVocab - 1)));
    pair.tgt = pair.src;
  }
  return pairs;
}

// How many of the pairs greedy decoding copies exactly: from the start id, L - 1 tokens, each
// the most probable one. The task has no end id, so decoding does not stop at id 2.
int64_t exact_copies(Transformer& model, const std::vector<data::Pair>& pairs) {
  std::vector<std::vector<int32_t>> sources;
  for (const data::Pair& p : pairs) sources.push_back(p.src);
  const std::vector<TokenIds> outputs = training::decode_corpus(
      model, sources,
      {.max_len = kLength - 1, .stop_at_eos = false, .batch = kCheckSize, .by_length = false});
  int64_t exact = 0;
  for (size_t i = 0; i < pairs.size(); ++i)
    exact += std::ranges::equal(outputs[i], std::span(pairs[i].tgt).subspan(1));
  return exact;
}

struct Result {
  double ms_per_step = 0, tokens_per_s = 0, seconds_to_100 = 0;
  double flops_per_step = 0;     // of the matrix products (models/flops.h)
  double products_alone_ms = 0;  // their time on their own (bench::products_alone_seconds)
  double peak_rss_mb = 0;
  std::optional<int64_t> steps_to_100;
  int64_t params = 0;
};

Result run(const Workload& workload, const bench::CommonOptions& options, int64_t max_steps) {
  Rng rng(options.seed);
  Transformer model(workload.config, rng);
  // The paper's betas and eps are Adam's defaults here.
  training::Trainer trainer(nn::Optimizer(model.named_parameters(), nn::AdamConfig{}),
                            training::noam(workload.config.d_model, workload.warmup));
  Rng data_rng(options.seed + 1), check_rng(options.seed + 2);

  Result result;
  result.params = model.parameter_count();
  std::vector<double> step_seconds;
  double trained_seconds = 0;
  int64_t tokens = 0;
  training::Hooks hooks;
  // A broken step must never be timed as a fast one.
  hooks.after_step = [&](const training::StepRecord& r) {
    if (!std::isfinite(r.result.loss))
      throw std::runtime_error(
          fmt::format("{}: loss is {} at step {}", workload.name, r.result.loss, r.result.step));
    tokens = r.target_tokens;
    trained_seconds += r.seconds;
    if (r.result.step > workload.warmup_steps) step_seconds.push_back(r.seconds);
  };
  if (workload.train_to_100) {
    hooks.evaluate = [&](int64_t step) {
      if (step % kCheckEvery == 0 &&
          exact_copies(model, copy_pairs(kCheckSize, check_rng)) == kCheckSize) {
        result.steps_to_100 = step;
        result.seconds_to_100 = trained_seconds;
      }
    };
    hooks.stop = [&](int64_t) {
      return result.steps_to_100.has_value();
    };
  }
  const auto next_batch = [&] {
    data::Batch batch = data::make_batch(copy_pairs(workload.batch, data_rng));
    result.flops_per_step = gemm_flops_per_step(workload.config, workload.batch,
                                                batch.src.shape()[1], batch.tgt_in.shape()[1])
                                .total();
    return batch;
  };
  training::run(
      trainer, next_batch,
      [&](const data::Batch& batch) { return training::teacher_forced_loss(model, batch); },
      workload.train_to_100 ? max_steps : workload.warmup_steps + workload.timed_steps, hooks);
  result.ms_per_step = 1e3 * bench::median(step_seconds);
  result.tokens_per_s = static_cast<double>(tokens) / (result.ms_per_step * 1e-3);
  result.peak_rss_mb = bench::peak_rss_mb();  // of training, before the replay's own operands
  // The step's ceiling: one more step, its products logged and then timed on their own.
  const data::Batch batch = next_batch();
  result.products_alone_ms =
      1e3 * bench::products_alone_seconds(
                [&] { trainer.step([&] { return training::teacher_forced_loss(model, batch); }); },
                result.flops_per_step);
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  std::string workload_name = "all";
  int64_t max_steps = 3000;
  bench::CommonOptions options;
  try {
    const auto parsed =
        bench::parse_common(argc, argv, "copy", [&](std::string_view flag, std::string_view value) {
          if (flag == "--workload") {
            workload_name = value;
            return true;
          }
          if (flag == "--max-steps") {
            max_steps = bench::parse_count("copy", flag, value);
            return true;
          }
          return false;
        });
    if (!parsed) {
      fmt::print("{}", kUsage);
      return 0;
    }
    options = *parsed;
    if (workload_name != "all" && workload_name != "copy-tiny" && workload_name != "copy-base")
      throw std::invalid_argument(fmt::format("copy: unknown workload \"{}\"", workload_name));
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}\n{}", e.what(), kUsage);
    return 2;
  }

  std::vector<Workload> workloads;
  if (workload_name != "copy-base") workloads.push_back(copy_tiny());
  if (workload_name != "copy-tiny") workloads.push_back(copy_base());
  if (options.smoke) {
    max_steps = kCheckEvery + 5;  // one copy check, which an untrained model fails
    for (Workload& w : workloads) {
      w.warmup_steps = w.train_to_100 ? 5 : 0;
      w.timed_steps = 1;
      if (!w.train_to_100) w.batch = 8;  // copy-base's full batch takes a second per step
    }
  }

  bool all_copied = true;
  try {
    for (const Workload& workload : workloads) {
      const Result r = run(workload, options, max_steps);
      bench::JsonLine line;
      line.add("workload", bench::JsonLine::str(workload.name))
          .add("ms_per_step", r.ms_per_step, 2)
          .add("tokens_per_s", r.tokens_per_s, 0);
      if (workload.train_to_100) {
        line.add("steps_to_100", r.steps_to_100 ? std::to_string(*r.steps_to_100) : "null")
            .add("seconds_to_100",
                 r.steps_to_100 ? fmt::format("{:.2f}", r.seconds_to_100) : "null");
        all_copied = all_copied && r.steps_to_100.has_value();
      }
      const bench::Limits limits = bench::measure_limits(options.smoke, false);
      bench::add_efficiency(line, r.flops_per_step, r.ms_per_step, limits, r.products_alone_ms)
          .add("peak_rss_mb", r.peak_rss_mb, 1)
          .add("params", r.params)
          .add("threads", int64_t{options.threads})
          .add("precision", bench::JsonLine::str(to_string(kernels::gemm_precision())))
          .print();
      const auto percent_of_peak = [&](double ms) {
        return 100 * bench::fraction_of_peak(r.flops_per_step, ms, limits);
      };
      fmt::print(stderr,
                 "{:<10} {:>8.2f} ms/step {:>9.0f} tokens/s {:>5.1f}% of the peak (its products "
                 "alone: {:.1f}%)",
                 workload.name, r.ms_per_step, r.tokens_per_s, percent_of_peak(r.ms_per_step),
                 percent_of_peak(r.products_alone_ms));
      if (workload.train_to_100)
        fmt::print(stderr, "   100 copied exactly {}",
                   r.steps_to_100
                       ? fmt::format("after {} steps, {:.2f} s", *r.steps_to_100, r.seconds_to_100)
                       : fmt::format("not within {} steps", max_steps));
      fmt::print(stderr, "   peak RSS {:.0f} MB, {} parameters\n", r.peak_rss_mb, r.params);
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "copy: {}\n", e.what());
    return 1;
  }
  // Not learning to copy within max_steps is a failure, except in --smoke, which stops early.
  return all_copied || options.smoke ? 0 : 1;
}
