// A training run driven from the library (training::Run), as a lesson or a page drives it:
// step by step, stopped and saved part way, resumed. It must write what `transformer train`
// writes, and a resumed run must take the steps of the run that never stopped.
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "autograd/kernels/gemm.h"
#include "autograd/kernels/parallel.h"
#include "tests/support/program.h"
#include "tests/support/temp_dir.h"
#include "training/resume.h"
#include "training/run.h"

using namespace gf;
using namespace gf::training;
using gf::testing::TempDir;

namespace {

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Runs `transformer train FLAGS` in dir (flags without quotes), its output to files there.
void train_with_the_command(const std::string& flags, const TempDir& dir) {
  std::string command = "cd '" + dir.path().string() + "' &&";
  for (const std::string& word : gf::testing::program_command(
           (std::filesystem::path(GRADFORMER_BIN_DIR) / "transformer").string()))
    command += " " + word;
  command += " train " + flags + " >stdout 2>stderr";
  const int raw = std::system(command.c_str());
  INFO(command << "\n" << file_bytes(dir.file("stderr")));
  REQUIRE(WIFEXITED(raw));
  REQUIRE(WEXITSTATUS(raw) == 0);
}

// Takes the run's steps up to `last`, as a driver does.
void steps_until(Run& run, int64_t last) {
  while (run.steps_done() < last) run.step();
}

// Everything in two training states but the page's timings: the same run, continued the same.
void require_same_state(const std::string& a_path, const std::string& b_path) {
  const TrainState a = load_train_state(a_path), b = load_train_state(b_path);
  CHECK(a.step == b.step);
  CHECK(a.batches.batches == b.batches.batches);
  CHECK(a.batches.epoch_start == b.batches.epoch_start);
  CHECK(a.batches.next == b.batches.next);
  CHECK(a.batches.in_epoch == b.batches.in_epoch);
  CHECK(a.eval == b.eval);
  CHECK(a.dropout == b.dropout);
  CHECK(a.optimizer_step == b.optimizer_step);
  CHECK(a.weights == b.weights);
  CHECK(weights_digest(a.optimizer) == weights_digest(b.optimizer));
  CHECK(a.losses == b.losses);
  CHECK(a.rates == b.rates);
  CHECK(a.options == b.options);
}

}  // namespace

TEST_CASE("a text run driven by the library, stopped and resumed, writes the command's bytes",
          "[training][run][program]") {
  // A small model on the generated toy language, with a check at step 8 (keeping the best
  // weights) and the char tokenizer learned from the pairs: every part of a text run.
  const std::string flags =
      "--task toy-translation --tokenizer char --d-model 32 --d-ff 64 --heads 2 --layers 1 "
      "--batch-tokens 300 --warmup 5 --steps 12 --eval-every 8 --eval-count 8 --snapshots 2 "
      "--seed 4 --log-losses losses.tsv";
  TempDir cli("run_cli"), lib("run_lib");
  train_with_the_command(flags, cli);

  RunConfig config;
  config.task = Task::ToyTranslation;
  config.tokenizer = TokenizerKind::Char;
  config.batch_tokens = 300;
  config.d_model = 32;
  config.d_ff = 64;
  config.heads = 2;
  config.layers = 1;
  config.warmup = 5;
  config.steps = 12;
  config.seed = 4;
  config.eval_every = 8;
  config.eval_count = 8;
  config.snapshots = 2;
  config.save = lib.file("model.safetensors");
  config.log_losses = lib.file("losses.tsv");
  {
    Run first(config);
    steps_until(first, 5);  // stopped part way, as Ctrl-C stops the command
    first.save();
  }
  RunConfig resumed;
  resumed.steps = 12;
  resumed.eval_count = 8;
  resumed.snapshots = 2;
  resumed.log_losses = lib.file("losses.tsv");
  resumed.resume = lib.file("model.safetensors");
  Run run(resumed);
  REQUIRE(run.steps_done() == 5);
  steps_until(run, 12);
  REQUIRE(run.finished());
  run.choose_weights_and_save();

  CHECK(file_bytes(lib.file("model.safetensors")) == file_bytes(cli.file("out/model.safetensors")));
  CHECK(file_bytes(lib.file("losses.tsv")) == file_bytes(cli.file("losses.tsv")));
  require_same_state(lib.file("model.train-state.safetensors"),
                     cli.file("out/model.train-state.safetensors"));
}

TEST_CASE("a cosine run resumed with fewer steps than planned keeps the planned rates",
          "[training][run]") {
  // Planned for 60 steps: the rate falls to zero at step 60. Stopped at step 25 and resumed
  // to step 40, the run must take the planned run's first 40 steps, not a schedule that ends
  // at 40 (its rate would be 0 at step 40, and lower at every step after the stop).
  TempDir dir("run_cosine");
  RunConfig planned;
  planned.task = Task::Copy;
  planned.length = 6;
  planned.batch = 16;
  planned.d_model = 32;
  planned.d_ff = 64;
  planned.heads = 2;
  planned.layers = 1;
  planned.schedule = ScheduleKind::Cosine;
  planned.warmup = 10;
  planned.steps = 60;
  planned.eval_count = 10;
  planned.snapshots = 0;
  RunConfig whole_config = planned;
  whole_config.save = dir.file("whole.safetensors");
  Run whole(whole_config);
  steps_until(whole, 60);

  RunConfig first_config = planned;
  first_config.save = dir.file("stopped.safetensors");
  {
    Run first(first_config);
    steps_until(first, 25);
    first.save();
  }
  RunConfig resumed;
  resumed.steps = 40;
  resumed.eval_count = 10;
  resumed.snapshots = 0;
  resumed.resume = dir.file("stopped.safetensors");
  Run run(resumed);
  steps_until(run, 40);

  const std::vector<float> planned_rates(whole.rates().begin(), whole.rates().begin() + 40);
  const std::vector<float> planned_losses(whole.losses().begin(), whole.losses().begin() + 40);
  CHECK(run.rates() == planned_rates);
  CHECK(run.losses() == planned_losses);
  CHECK(run.rates().back() > 0.0f);
}

TEST_CASE("a resumed run of a generated task shows the page sequences its first part showed",
          "[training][run]") {
  // The page's attention snapshots and its exact-copy curve are of fixed fresh sequences. A
  // resumed run makes its model by loading, not by drawing weights, so its fresh stream starts
  // elsewhere: the sequences come from the state's rng.page_sequences, not from that start.
  TempDir dir("run_page_sequences");
  RunConfig planned;
  planned.task = Task::Reverse;
  planned.length = 6;
  planned.batch = 16;
  planned.d_model = 32;
  planned.d_ff = 64;
  planned.heads = 2;
  planned.layers = 1;
  planned.warmup = 10;
  planned.steps = 40;
  planned.eval_count = 10;
  planned.snapshots = 2;  // at steps 0 and 40
  RunConfig whole_config = planned;
  whole_config.save = dir.file("whole.safetensors");
  {
    Run whole(whole_config);
    steps_until(whole, 40);
    whole.save();
  }
  RunConfig first_config = planned;
  first_config.save = dir.file("stopped.safetensors");
  {
    Run first(first_config);
    steps_until(first, 10);
    first.save();
  }
  RunConfig resumed;
  resumed.steps = 40;
  resumed.eval_count = 10;
  resumed.snapshots = 2;
  resumed.resume = dir.file("stopped.safetensors");
  {
    Run run(resumed);
    steps_until(run, 40);
    run.save();
  }
  const TrainState a = load_train_state(dir.file("whole.train-state.safetensors")),
                   b = load_train_state(dir.file("stopped.train-state.safetensors"));
  REQUIRE(a.page_sequences.has_value());
  CHECK(a.page_sequences == b.page_sequences);
  const PageHistory whole_page = PageHistory::from_json(a.page, "whole"),
                    resumed_page = PageHistory::from_json(b.page, "resumed");
  REQUIRE(whole_page.snapshots.size() == 2);
  REQUIRE(resumed_page.snapshots.size() == 2);
  for (size_t i = 0; i < 2; ++i) {
    INFO("snapshot at step " << whole_page.snapshots[i].step);
    CHECK(resumed_page.snapshots[i].maps.source_tokens ==
          whole_page.snapshots[i].maps.source_tokens);
    CHECK(resumed_page.snapshots[i].maps.encoder == whole_page.snapshots[i].maps.encoder);
  }
  CHECK(resumed_page.metric_values == whole_page.metric_values);
}

TEST_CASE("with batch_seed, models that draw different weights train on the same batches",
          "[training][run]") {
  // A learned position table draws more initial values than the sinusoids, so the batches'
  // stream, drawn from the seed after the model, starts elsewhere; batch_seed gives it a start
  // of its own. The batches are told apart by what they hold: sentences of another length
  // give other counts of target tokens.
  TempDir dir("run_batch_seed");
  const auto tokens_after_steps = [&](PositionKind positions, std::optional<uint64_t> batches) {
    RunConfig config;
    config.task = Task::ToyTranslation;
    config.tokenizer = TokenizerKind::Char;
    config.batch_tokens = 300;
    config.d_model = 16;
    config.d_ff = 32;
    config.heads = 2;
    config.layers = 1;
    config.positions = positions;
    config.warmup = 2;
    config.steps = 6;
    config.seed = 3;
    config.batch_seed = batches;
    config.snapshots = 0;
    config.save = dir.file("model.safetensors");
    Run run(config);
    steps_until(run, 6);
    return std::pair(run.sequences(), run.target_tokens());
  };
  CHECK(tokens_after_steps(PositionKind::Sinusoidal, 7) ==
        tokens_after_steps(PositionKind::Learned, 7));
  CHECK(tokens_after_steps(PositionKind::Sinusoidal, std::nullopt) !=
        tokens_after_steps(PositionKind::Learned, std::nullopt));
}

TEST_CASE("a language-model run checks perplexity, samples for its page, and resumes exactly",
          "[training][run][lm]") {
  TempDir dir("run_lm");
  {
    std::ofstream text(dir.file("train.txt"));
    for (int i = 0; i < 60; ++i) text << "the cat sat on the mat.\nthe dog sat on the log.\n";
    std::ofstream(dir.file("dev.txt")) << "the dog sat on the mat.\nthe cat sat on the log.\n";
  }
  RunConfig config;
  config.task = Task::LanguageModel;
  config.data = dir.file("train.txt");
  config.dev = dir.file("dev.txt");
  config.tokenizer = TokenizerKind::Char;
  config.d_model = 32;
  config.d_ff = 64;
  config.heads = 2;
  config.layers = 1;
  config.max_len = 16;
  config.batch = 8;
  config.warmup = 5;
  config.steps = 20;
  config.eval_every = 10;
  config.eval_count = 4;
  config.snapshots = 3;
  config.save = dir.file("a/lm.safetensors");
  Run straight(config);
  CHECK(straight.model().config.decoder_only());
  CHECK(straight.tokenizer()->kind() == "char");
  CHECK_THAT(straight.start().recipe_line,
             Catch::Matchers::Contains("recipe for a text of 2880 characters"));
  std::optional<std::string> check;
  while (!straight.finished())
    if (StepReport r = straight.step(); r.check) check = r.check;
  REQUIRE(check);
  CHECK_THAT(*check, Catch::Matchers::StartsWith("step 10: perplexity "));
  CHECK_THAT(*check, Catch::Matchers::EndsWith("on 3 windows of the dev text"));
  CHECK(straight.losses().back() < straight.losses().front());
  const std::string scores = straight.final_scores();
  CHECK_THAT(scores, Catch::Matchers::Contains("bits per character) on the dev text's 48 tokens; "
                                               "the bigram model's"));
  const viz::RunPage page = straight.page();
  REQUIRE(page.samples.size() == 3);  // one per snapshot: steps 20, 10 and 0, newest first
  CHECK(page.samples.front().source == "step 20");
  CHECK_THAT(page.samples.front().output,
             Catch::Matchers::StartsWith("the dog "));  // the prompt: half the context
  REQUIRE_FALSE(page.attention.empty());
  CHECK(page.attention.front().maps.encoder.empty());
  CHECK(page.attention.front().maps.cross.empty());
  CHECK(page.attention.front().maps.decoder.size() == 1);  // one layer

  // Stopped at step 7 and resumed: the losses of the run that never stopped, bit for bit.
  config.save = dir.file("b/lm.safetensors");
  {
    Run first(config);
    steps_until(first, 7);
    first.save();
  }
  RunConfig resumed;
  resumed.steps = 20;
  resumed.eval_count = 4;
  resumed.snapshots = 3;
  resumed.resume = dir.file("b/lm.safetensors");
  Run run(resumed);
  steps_until(run, 20);
  CHECK(run.losses() == straight.losses());
  CHECK(run.page().samples.size() == 3);
}

TEST_CASE("a run with bfloat16 products trains, the same at any thread count, or is refused",
          "[training][run][threads]") {
  TempDir dir("run_bfloat16");
  struct FloatAgain {  // later tests run in float32, even if a Run here throws
    ~FloatAgain() {
      kernels::set_gemm_precision(kernels::GemmPrecision::Float32);
      kernels::set_num_threads(0);
    }
  } float_again;
  const auto losses = [&](bool bfloat16, int threads) {
    RunConfig config;
    config.task = Task::Copy;
    config.d_model = 64;  // products large enough to be packed, so bfloat16 changes them
    config.steps = 4;
    config.warmup = 2;
    config.seed = 5;
    config.snapshots = 0;
    config.threads = threads;
    config.bfloat16 = bfloat16;
    config.save = dir.file("model.safetensors");
    Run run(config);
    steps_until(run, 4);
    return run.losses();
  };
  if (!kernels::have_bfloat16()) {
    REQUIRE_THROWS_WITH(losses(true, 1), Catch::Contains("AVX512-BF16"));
    return;
  }
  const std::vector<float> float32 = losses(false, 1), bfloat16 = losses(true, 1);
  CHECK(bfloat16 != float32);
  CHECK(std::abs(bfloat16.back() - float32.back()) < 0.02f * float32.back());
  CHECK(losses(true, 3) == bfloat16);
  CHECK(kernels::gemm_precision() == kernels::GemmPrecision::BFloat16);  // process-wide
  CHECK(losses(false, 2) == float32);  // and a float32 run sets it back
  CHECK(kernels::gemm_precision() == kernels::GemmPrecision::Float32);
}
