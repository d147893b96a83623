// The subcommands of `transformer`, each an options struct (filled by main.cpp from the
// command line) and a function that runs it and returns the exit status.
#pragma once

#include <cstdint>
#include <string>

#include "models/transformer.h"

namespace gf::cli {

struct TrainOptions {
  std::string task = "copy";  // copy | reverse; ignored with pairs
  std::string pairs;          // a file of SRC<TAB>TGT id lines instead of a generated task
  int64_t min_length = 0, length = 10;  // content length of generated sequences
  TransformerConfig model = {.vocab_size = 11,
                             .d_model = 64,
                             .d_ff = 256,
                             .heads = 4,
                             .encoder_layers = 2,
                             .decoder_layers = 2,
                             .max_len = 128,
                             .dropout = 0.0f};
  std::string init;  // start from this checkpoint (its configuration wins)
  std::string optimizer = "adam";
  std::string schedule = "noam";
  float lr = 0.0f;       // the noam factor or the constant rate; 0: 0.5 for noam, 1e-3 constant
  int64_t warmup = 200;  // noam warm-up steps
  float clip = 0.0f;     // gradient-norm limit; 0: none
  int64_t batch = 64;
  float label_smoothing = 0.1f;
  int64_t steps = 600;
  int64_t eval_every = 0;  // 0: only at the end
  int64_t eval_count = 100;
  uint64_t seed = 1;
  int threads = 0;  // 0: OpenMP's default
  std::string save = "out/model.safetensors";
};
int run_train(const TrainOptions& options);

struct ScoreOptions {
  std::string ckpt, pairs;
};
int run_score(const ScoreOptions& options);

struct DecodeOptions {
  std::string ckpt;
  int64_t beam = 1;  // 1: greedy
  float length_penalty = 0.6f;
  int64_t max_len = 0;
};
int run_decode(const DecodeOptions& options);

struct AttentionOptions {
  std::string ckpt, src, tgt, out = "out/attention";
};
int run_attention(const AttentionOptions& options);

}  // namespace gf::cli
