// The subcommands of `transformer`, each an options struct (filled by main.cpp from the
// command line) and a function that runs it and returns the exit status.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/transformer.h"
#include "training/run_config.h"

namespace gf::cli {

// `transformer train`: its flags fill config (cli/train.cpp); run_train returns 0, or 128 + the
// signal number when SIGINT or SIGTERM stopped the run (after saving).
void add_train_command(CLI::App& app, training::RunConfig& config, const CLI::Validator& seed,
                       const char* threads_help);
int run_train(const training::RunConfig& config);

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

struct SampleOptions {
  std::string ckpt, prompt;
  int64_t length = 200, top_k = 0, count = 1;
  float temperature = 1.0f, top_p = 1.0f;
  uint64_t seed = 1;
};
int run_sample(const SampleOptions& options);

struct GenerateOptions {
  std::string task = "toy-translation";
  std::string split = "random";  // random | compositional | length
  int64_t train = 10000, dev = 500, test = 1000;
  uint64_t seed = 1;
  std::string out = "out/toy";
};
int run_generate(const GenerateOptions& options);

}  // namespace gf::cli
