// The subcommands of `transformer`, each an options struct (filled by main.cpp from the
// command line) and a function that runs it and returns the exit status.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "models/transformer.h"
#include "training/recipe.h"

namespace gf::cli {

struct TrainOptions {
  std::string task = "copy";  // copy | reverse | translate | toy-translation; ignored with pairs
  std::string pairs;          // a file of SRC<TAB>TGT id lines instead of a generated task
  int64_t min_length = 0, length = 10;  // content length of generated sequences
  // Text tasks: sentence pairs from files (translate) or generated (toy-translation).
  std::string data, dev;          // TRAIN.tsv, DEV.tsv
  std::string split = "random";   // toy-translation's split
  std::string tokenizer = "bpe";  // bpe | word | char
  int64_t vocab_size = 0;         // 0: 11 for copy and reverse, 8000 for text (BPE stops early
                                  // when every word is one token)
  int64_t batch_tokens = 2000;    // text tasks: padded tokens per batch (§5.1 batches by length)
  TransformerConfig model = {.vocab_size = 11,
                             .d_model = 64,
                             .d_ff = 256,
                             .heads = 4,
                             .encoder_layers = 2,
                             .decoder_layers = 2,
                             .max_len = 128,
                             .dropout = 0.0f};
  std::string init;    // start from this checkpoint (its configuration wins)
  std::string resume;  // continue the run saved in this checkpoint and its training state
  std::string optimizer = "adam";
  std::string schedule = "noam";
  float lr = 0.0f;       // the noam factor or the constant rate; 0: 0.3 for noam, 1e-3 constant
  int64_t warmup = 200;  // warm-up steps of noam and cosine
  int64_t schedule_steps = 0;  // cosine: the step its rate falls to zero at; 0: --steps
  std::optional<training::TextRecipe> recipe;  // real text: the settings it started from
  float clip = 0.0f;                           // gradient-norm limit; 0: none
  int64_t batch = 64;
  float label_smoothing = 0.1f;
  int64_t steps = 600;
  double minutes = 0.0;    // > 0: set steps to what fits this many minutes, measured
  int64_t average = 0;     // average the weights of the last N checkpoints at the end; 0: none
  int64_t eval_every = 0;  // 0: only at the end
  int64_t eval_count = 100;
  int64_t snapshots = 25;  // attention snapshots (and dev-metric points) for the run's page
  uint64_t seed = 1;
  int threads = 0;  // 0: the default, kernels::num_threads()
  std::string save = "out/model.safetensors";
  int64_t save_every = 0;       // also save every N steps; 0: at the end (and when stopped) only
  std::string log_losses;       // write "step<TAB>loss" lines here, every step of the run
  std::set<std::string> given;  // the flags given on the command line, without dashes
};
// Returns 0, or 128 + the signal number when SIGINT or SIGTERM stopped the run (after saving).
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

struct ReportOptions {
  std::string ckpt;
  std::vector<std::string> sources;  // --src, each shown in the attention explorer
  std::string out;                   // "": the checkpoint's path with .html
};
int run_report(const ReportOptions& options);

struct TranslateOptions {
  std::string ckpt;
  int64_t beam = 1;  // 1: greedy
  float length_penalty = 0.6f;
};
int run_translate(const TranslateOptions& options);

struct EvalOptions {
  std::string ckpt, data;
  int64_t beam = 1;
  float length_penalty = 0.6f;
  int64_t alignment_layer = 0;    // 1-based decoder layer for the alignment score; 0: the last
  std::string hypotheses;         // a file to write the translations to, one per line
  std::string tokenize = "auto";  // BLEU's tokenizer: auto (from the targets) | 13a | zh
};
int run_eval(const EvalOptions& options);

struct GenerateOptions {
  std::string task = "toy-translation";
  std::string split = "random";  // random | compositional | length
  int64_t train = 10000, dev = 500, test = 1000;
  uint64_t seed = 1;
  std::string out = "out/toy";
};
int run_generate(const GenerateOptions& options);

}  // namespace gf::cli
