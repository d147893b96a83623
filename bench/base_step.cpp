// bench/base_step: one training step of the paper's base model (Table 3: N=6, d_model 512,
// d_ff 2048, h 8, dropout 0.1) with a tied vocabulary of 8000 (§3.4), on random ids: source
// and target length 32, batch 16 (bench/README.md's base-step). A step is forward + backward +
// Adam at the warm-up schedule's rate (§5.3); its time excludes drawing the ids.
//
// Before timing, the first step's loss is checked against log V: an untrained model guesses
// about uniformly, so a loss far from it means the model or the loss is broken.
//
// Shape legend: B batch, S source length, T target length, V vocabulary.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

#include "autograd/random.h"
#include "bench/bench_util.h"
#include "data/batch.h"
#include "models/flops.h"
#include "models/transformer.h"
#include "nn/optim.h"
#include "training/loop.h"
#include "training/trainer.h"

namespace {

using namespace gf;

constexpr std::string_view kUsage =
    "usage: base_step [--smoke] [--threads 2] [--seed 1] [--bf16] [--steps 5] [--help]\n"
    "  Times training steps of the base-size Transformer (Table 3 with a tied vocabulary of\n"
    "  8000) on random ids and prints one JSON object:\n"
    "  {\"workload\":\"base-step\",\"ms_per_step\":...,\"tokens_per_s\":...,\"peak_rss_mb\":...,\n"
    "   \"gflop_per_step\":...,\"gflops\":...,\"peak_gflops\":...,\"fraction_of_peak\":...,\n"
    "   \"products_alone_ms\":...,\"products_alone_fraction\":...,\"params\":...,\"threads\":...}\n"
    "  products_alone: one more step's matrix products, each timed on its own, and the fraction\n"
    "  of the peak the step would reach if that were all it did (its ceiling with these kernels)\n"
    "  --smoke    one step on batch 2, length 8 (for CI, about a second)\n"
    "  --bf16     the large matrix products in bfloat16 (needs AVX512-BF16; lesson 11)\n"
    "  --steps    timed steps after 2 warm-up steps (default 5)\n";

struct Shapes {
  int64_t batch = 16, length = 32;
};

}  // namespace

int main(int argc, char** argv) {
  int64_t timed_steps = 5, warmup_steps = 2;
  bench::CommonOptions options;
  try {
    const auto parsed = bench::parse_common(
        argc, argv, "base_step", [&](std::string_view flag, std::string_view value) {
          if (flag != "--steps") return false;
          timed_steps = std::max<int64_t>(1, bench::parse_count("base_step", flag, value));
          return true;
        });
    if (!parsed) {
      fmt::print("{}", kUsage);
      return 0;
    }
    options = *parsed;
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}\n{}", e.what(), kUsage);
    return 2;
  }
  Shapes shapes;
  if (options.smoke) {
    shapes = {.batch = 2, .length = 8};
    timed_steps = 1;
    warmup_steps = 0;
  }

  try {
    const TransformerConfig config{.vocab_size = 8000, .max_len = 64, .tied = true};
    Rng rng(options.seed);
    Transformer model(config, rng);
    Rng data_rng(options.seed + 1);
    constexpr int64_t kWarmup = 4000;  // §5.3's warm-up; only the rate's size depends on it
    // The paper's betas and eps are Adam's defaults here.
    training::Trainer trainer(nn::Optimizer(model.named_parameters(), nn::AdamConfig{}),
                              training::noam(config.d_model, kWarmup));

    // Random ids of one length: no padding, so every position is a target.
    const auto next_batch = [&] {
      data::Batch batch;
      batch.src = bench::random_ids(shapes.batch, shapes.length, config.vocab_size, data_rng);
      batch.tgt_in = bench::random_ids(shapes.batch, shapes.length, config.vocab_size, data_rng);
      batch.tgt_out = bench::random_ids(shapes.batch, shapes.length, config.vocab_size, data_rng);
      batch.target_tokens = shapes.batch * shapes.length;
      return batch;
    };
    std::vector<double> step_seconds;
    const auto after_step = [&](const training::StepRecord& r) {
      const float loss = r.result.loss;
      if (r.result.step == 1) {
        // Untrained, the generator's Xavier-sized rows give small logits, so the first loss
        // sits near log V; a factor of 1.5 either way separates that from a broken model.
        const double uniform_loss = std::log(static_cast<double>(config.vocab_size));
        if (!(loss > uniform_loss / 1.5 && loss < uniform_loss * 1.5))
          throw std::runtime_error(
              fmt::format("first loss {:.3f} is far from log V = {:.3f}", loss, uniform_loss));
      }
      if (!std::isfinite(loss))
        throw std::runtime_error(fmt::format("loss is {} at step {}", loss, r.result.step));
      if (r.result.step > warmup_steps) step_seconds.push_back(r.seconds);
    };
    training::run(
        trainer, next_batch,
        [&](const data::Batch& batch) { return training::teacher_forced_loss(model, batch); },
        warmup_steps + timed_steps, {.after_step = after_step});

    const double ms_per_step = 1e3 * bench::median(step_seconds);
    const double tokens_per_s =
        static_cast<double>(shapes.batch * shapes.length) / (ms_per_step * 1e-3);
    const double flops =
        gemm_flops_per_step(config, shapes.batch, shapes.length, shapes.length).total();
    const double peak_rss_mb = bench::peak_rss_mb();  // of training, before the replay's operands
    // The step's ceiling: one more step, its products logged and then timed on their own.
    const double products_alone_ms =
        1e3 * bench::products_alone_seconds(
                  [&] {
                    const data::Batch batch = next_batch();
                    trainer.step([&] { return training::teacher_forced_loss(model, batch); });
                  },
                  flops);
    const bench::Limits limits = bench::measure_limits(options.smoke, false);
    bench::JsonLine line;
    line.add("workload", bench::JsonLine::str("base-step"))
        .add("ms_per_step", ms_per_step, 1)
        .add("tokens_per_s", tokens_per_s, 0);
    bench::add_efficiency(line, flops, ms_per_step, limits, products_alone_ms)
        .add("peak_rss_mb", peak_rss_mb, 1)
        .add("params", model.parameter_count())
        .add("threads", int64_t{options.threads})
        .add("precision", bench::JsonLine::str(to_string(kernels::gemm_precision())))
        .print();
    fmt::print(stderr,
               "base-step  {:.1f} ms/step  {:.0f} tokens/s  {:.0f}% of the peak ({:.0f} GFLOP/s; "
               "its products alone: {:.0f}%)  peak RSS {:.0f} MB  {} params\n",
               ms_per_step, tokens_per_s, 100 * bench::fraction_of_peak(flops, ms_per_step, limits),
               limits.peak_gflops, 100 * bench::fraction_of_peak(flops, products_alone_ms, limits),
               peak_rss_mb, model.parameter_count());
  } catch (const std::exception& e) {
    fmt::print(stderr, "base_step: {}\n", e.what());
    return 1;
  }
  return 0;
}
