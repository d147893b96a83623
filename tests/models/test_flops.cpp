// The work counted from a model's shapes (models/flops.h), against sums done by hand for tiny
// models, against the products a real step computes, and against the figure lesson 11 states
// for the copy task's model.
#include <catch2/catch.hpp>
#include <vector>

#include "autograd/kernels/gemm_log.h"
#include "data/batch.h"
#include "models/flops.h"
#include "training/trainer.h"

using namespace gf;

namespace {

// D 4, F 8, V 10: small enough to count every term by hand.
TransformerConfig tiny(int64_t encoder_layers) {
  TransformerConfig c{.vocab_size = 10, .d_model = 4, .d_ff = 8, .heads = 2};
  c.encoder_layers = encoder_layers;
  c.decoder_layers = 1;
  return c;
}

}  // namespace

TEST_CASE("gemm_flops_per_step counts each product of a step", "[models][flops]") {
  // Batch 2, S 3, T 5. Multiply-adds of one forward pass:
  //   encoder: 3 tokens x (4 D^2 + 2 D F) = 3 x 128 = 384; attention 3 queries x 2 x 3 keys x D = 72
  //   decoder: 5 x (4 D^2 + 2 D^2 + 2 D F) = 800, cross k and v 3 x 2 D^2 = 96; output 5 D V = 200
  //            attention 5 x (2 x 5 x D + 2 x 3 x D) = 320
  // times 2 sequences x 2 FLOPs x 3 (backward twice forward) = 12.
  const GemmFlops both = gemm_flops_per_step(tiny(1), 2, 3, 5);
  CHECK(both.linear == 12.0 * (384 + 800 + 96 + 200));
  CHECK(both.attention == 12.0 * (72 + 320));
  CHECK(both.total() == both.linear + both.attention);
  // The decoder alone: no encoder, no cross-attention, no source.
  //   5 x (4 D^2 + 2 D F) + 5 D V = 640 + 200; attention 5 x 2 x 5 x D = 200
  const GemmFlops alone = gemm_flops_per_step(tiny(0), 2, 0, 5);
  CHECK(alone.linear == 12.0 * (640 + 200));
  CHECK(alone.attention == 12.0 * 200);
}

TEST_CASE("gemm_flops_per_step counts the products a real step computes", "[models][flops]") {
  // Every gemm() call of one forward and backward, logged (autograd/kernels/gemm_log.h), for
  // models that differ in each term of the count; padding is computed, so it counts.
  TransformerConfig both{.vocab_size = 13, .d_model = 16, .d_ff = 24, .heads = 2, .max_len = 16};
  both.encoder_layers = 2;
  both.decoder_layers = 1;
  TransformerConfig untied = both, decoder_alone = both, norm_first = both;
  untied.tied = false;
  decoder_alone.encoder_layers = 0;
  norm_first.norm_first = true;
  const std::vector<data::Pair> pairs = {{.src = {1, 5, 6, 7}, .tgt = {1, 8, 9}},
                                         {.src = {1, 5}, .tgt = {1, 8, 9, 10, 11}},
                                         {.src = {1, 4, 4, 4, 4, 4}, .tgt = {1, 3}}};
  const data::Batch batch = data::make_batch(pairs);
  const int64_t s = batch.src.shape()[1], t = batch.tgt_in.shape()[1];
  for (const TransformerConfig& config : {both, untied, decoder_alone, norm_first}) {
    Rng rng(3);
    Transformer model(config, rng);
    data::Batch input = batch;
    if (config.decoder_only()) input.src = IndexTensor::from({3, 0}, {});  // it reads no source
    double logged = 0;
    {
      kernels::GemmLog log;
      training::teacher_forced_loss(model, input).backward();
      for (const kernels::LoggedGemm& shape : log.shapes()) logged += shape.total_flops();
    }
    CAPTURE(config.tied, config.encoder_layers, config.norm_first);
    CHECK(logged == gemm_flops_per_step(config, 3, config.decoder_only() ? 0 : s, t).total());
  }
}

TEST_CASE("gemm_flops_per_step gives lesson 11's 1.008 GFLOP for a copy step at d_model 64",
          "[models][flops]") {
  // Lesson 11, part 4: batch 64, 11 source and 11 target tokens, 0.0357 GFLOP of attention.
  TransformerConfig c{.vocab_size = 11, .d_model = 64, .d_ff = 256, .heads = 4};
  c.encoder_layers = c.decoder_layers = 2;
  const GemmFlops step = gemm_flops_per_step(c, 64, 11, 11);
  CHECK(step.total() * 1e-9 == Approx(1.008).margin(5e-4));
  CHECK(step.attention * 1e-9 == Approx(0.0357).margin(5e-5));
}

TEST_CASE("greedy decoding's work and floor, step by step", "[models][flops]") {
  // Batch 2, S 3, 2 steps. The encoder once: 2 x 2 x (3 x (4 D^2 + 2 D F + 2 x 3 x D) +
  // 3 x 2 D^2) = 4 x (456 + 96). Each step multiplies by 160 + 40 = 200 weights (the decoder
  // layer's 4 D^2 + 2 D^2 + 2 D F and the output's D V) and reads the cached keys and values:
  // step 1 attends over 1 + 3 keys, step 2 over 2 + 3, each 2 D floats per key and sequence.
  const DecodeWork work = greedy_decode_work(tiny(1), 2, 3, 2);
  CHECK(work.encoder_flops == 4.0 * (456 + 96));
  CHECK(work.step_flops == 2 * 2 * (200 + 4 * 8) + 2 * 2 * (200 + 5 * 8));
  CHECK(work.step_bytes == 4 * (200 + 2 * 4 * 8) + 4 * (200 + 2 * 5 * 8));
  // At 1 GFLOP/s and 1 GB/s both steps are bound by their reads (1056 and 1120 bytes against
  // 928 and 960 FLOPs); at 1 GFLOP/s and 10 GB/s, by their products.
  CHECK(greedy_decode_floor_seconds(tiny(1), 2, 3, 2, 1.0, 1.0) ==
        Approx((2208 + 1056 + 1120) * 1e-9));
  CHECK(greedy_decode_floor_seconds(tiny(1), 2, 3, 2, 1.0, 10.0) ==
        Approx((2208 + 928 + 960) * 1e-9));
}
