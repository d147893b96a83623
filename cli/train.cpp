// `transformer train`: its flags, which fill a training::RunConfig, and the report of the run,
// which training::Run does (training/run.h): teacher-forced training with label smoothing
// (§5.4), Adam and the warm-up schedule (§5.3), checks by greedy decoding, the checkpoint and
// its training state, the curves and the run's page.
//
// Ctrl-C or SIGTERM stops the run after the current step and saves it, so that --resume
// continues exactly; the exit status is then that of a program ended by the signal.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <filesystem>
#include <string>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/flags.h"
#include "training/run.h"

namespace gf::cli {

namespace {

using training::RunConfig;

void add_data_flags(CLI::App& t, RunConfig& c) {
  add_kind(t, "--task", c.task, training::task_named,
           {"copy", "reverse", "translate", "toy-translation", "lm"},
           "copy or reverse (generated ids), translate (sentence pairs from --data), "
           "toy-translation (the generated toy language) or lm (a decoder-only language model "
           "of the text in --data)")
      ->default_str("copy");
  t.add_option("--data", c.data,
               "translate: training pairs, lines SOURCE<TAB>TARGET (UTF-8; more columns ignored); "
               "lm: the training text (UTF-8)")
      ->check(CLI::ExistingFile);
  t.add_option("--dev", c.dev,
               "translate: held-out pairs for BLEU during and after training; lm: held-out text "
               "for the perplexity")
      ->check(CLI::ExistingFile);
  add_kind(t, "--split", c.split, training::toy_split_named, {"random", "compositional", "length"},
           "toy-translation: random, compositional or length")
      ->default_str("random");
  add_kind(t, "--tokenizer", c.tokenizer, training::tokenizer_named, {"bpe", "word", "char"},
           "Text tasks: bpe (one vocabulary shared by both languages, §5.1), word or char")
      ->default_str("bpe");
  add_setting(t, "--batch-tokens", c.batch_tokens,
              "Text tasks: padded tokens per batch; sentences of similar length go together")
      ->default_str("2000");
  t.add_option("--pairs", c.pairs,
               "Train on FILE: lines SRC_IDS<TAB>TGT_IDS, TGT starting with bos 1")
      ->check(CLI::ExistingFile);
  add_setting(t, "--length", c.length, "Content length of generated sequences (the longest)")
      ->default_str("10");
  add_setting(t, "--min-length", c.min_length, "Shortest generated content (default: --length)");
  t.add_option("--init", c.init,
               "Start from this checkpoint (its configuration is used; --dropout still applies)")
      ->check(CLI::ExistingFile);
}

void add_model_flags(CLI::App& t, RunConfig& c) {
  add_setting(t, "--layers", c.layers,
              "Encoder and decoder layers, N (default 2); lm: decoder layers (default 4)");
  add_setting(t, "--d-model", c.d_model, "Model width d_model")->default_str("64");
  add_setting(t, "--d-ff", c.d_ff, "Feed-forward width d_ff")->default_str("256");
  add_setting(t, "--heads", c.heads, "Attention heads h (must divide d_model)")->default_str("4");
  add_setting(t, "--vocab-size", c.vocab_size,
              "Vocabulary size, ids 0-3 special (default: 11 for copy and reverse; for text, the "
              "tokenizer's size, at most 8000)");
  add_setting(t, "--max-len", c.max_len,
              "Longest sequence the model accepts; lm: the context, tokens per window")
      ->default_str("128");
  t.add_flag_function(
       "--tied{true},--no-tied{false}", [&c](int64_t count) { c.tied = count > 0; },
       "One matrix for both embeddings and the output projection (§3.4; the default)")
      ->default_str("true");
  t.add_flag_function(
      "--norm-first", [&c](int64_t) { c.norm = training::NormPlacement::PreNorm; },
      "Pre-norm layers (not in the paper)");
  t.add_option_function<std::string>(
       "--positions",
       [&c](const std::string& kind) {
         c.positions = kind == "learned" ? training::PositionKind::Learned
                                         : training::PositionKind::Sinusoidal;
       },
       "sinusoidal (§3.5) or learned: a trained table of --max-len positions, the paper's "
       "Table 3, row (E)")
      ->default_str("sinusoidal")
      ->check(CLI::IsMember({"sinusoidal", "learned"}));
  add_setting(t, "--dropout", c.dropout, "Dropout rate (§5.4 uses 0.1)")->default_str("0");
}

void add_optimisation_flags(CLI::App& t, RunConfig& c) {
  add_setting(t, "--label-smoothing", c.label_smoothing, "Label smoothing epsilon (§5.4)")
      ->default_str("0.1");
  add_kind(t, "--optimizer", c.optimizer, training::optimizer_named, {"adam", "sgd"}, "adam or sgd")
      ->default_str("adam");
  add_kind(t, "--schedule", c.schedule, training::schedule_named, {"noam", "cosine", "constant"},
           "noam (warm-up then 1/sqrt(step), §5.3), cosine (warm-up then down to zero at the "
           "last step) or constant (translate: cosine)")
      ->default_str("noam");
  add_setting(t, "--lr", c.lr,
              "Factor of the noam schedule (default 0.3), the peak of the cosine or the constant "
              "rate (default 1e-3)");
  add_setting(t, "--warmup", c.warmup, "Warm-up steps of the noam and cosine schedules")
      ->default_str("200");
  add_setting(t, "--clip", c.clip, "Clip the gradient norm to this (0: no clipping)")
      ->default_str("0");
  add_setting(t, "--batch", c.batch, "Sequences per step (lm: windows, default 16)")
      ->default_str("64");
  add_setting(t, "--steps", c.steps,
              "Training steps (with --resume: the total to reach, counting the saved ones)")
      ->default_str("600");
  t.add_option("--minutes", c.minutes,
               "Train for about this many minutes: the speed of the first batches sets --steps, "
               "and the run then equals the one --steps gives (it prints the number)");
  add_setting(t, "--average", c.average,
              "At the end, also try the average of the weights at the last N checkpoints, taken "
              "every 2% of the run, and keep it if it scores better (translate: 5)");
}

void add_run_flags(CLI::App& t, RunConfig& c, const CLI::Validator& seed, const char* threads) {
  add_setting(t, "--eval-every", c.eval_every,
              "Check the model every N steps: exact copies, BLEU on the dev set, or lm's "
              "perplexity, keeping the best weights (0: at the end; translate with --dev and lm: "
              "a tenth of the run)")
      ->default_str("0");
  t.add_option("--eval-count", c.eval_count,
               "Sequences decoded for the checks during training (fresh ones for generated "
               "tasks, dev pairs spread over the file for text)")
      ->capture_default_str();
  t.add_option("--snapshots", c.snapshots,
               "For the run's page (NAME.html): how many times to record the attention of one "
               "dev sentence and the dev metric, evenly spaced from step 0 (0: never)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000));
  add_setting(t, "--seed", c.seed, "Random seed: the same seed gives the same run")
      ->check(seed)
      ->default_str("1");
  t.add_option("--threads", c.threads, threads)->capture_default_str();
  t.add_flag("--bf16", c.bfloat16,
             "Multiply the large matrix products in bfloat16 with float32 sums, up to twice as "
             "fast on a CPU with AVX512-BF16 (lesson 11, part 6); not kept in the training "
             "state: give it again with --resume");
  add_setting(t, "--save", c.save,
              "Checkpoint to write; beside it go the training state (NAME.train-state."
              "safetensors, for --resume), the curves and the run's page NAME.html (default with "
              "--resume: the checkpoint resumed)")
      ->default_str("out/model.safetensors");
  t.add_option("--resume", c.resume,
               "Continue the run saved in this checkpoint and its training state, exactly as if "
               "it had not stopped; --steps is then the total step to reach. Data, optimizer and "
               "schedule flags are taken from the saved run. Ctrl-C (SIGINT) or SIGTERM stops a "
               "run after its current step, saved, with exit status 130 or 143")
      ->check(CLI::ExistingFile);
  t.add_option("--save-every", c.save_every,
               "Also save every N steps, so that a crash loses at most N (0: only at the end, on "
               "Ctrl-C or SIGTERM, and when a loss or gradient is not finite)")
      ->capture_default_str();
  t.add_option("--log-losses", c.log_losses,
               "Write every step's loss to FILE, lines STEP<TAB>LOSS (exact float text)");
}

// What the run starts from: the recipe, the checkpoint, the data and tokenizer, the model.
void describe(const training::Run& run) {
  const training::RunStart& s = run.start();
  if (!s.recipe_line.empty()) fmt::print(stderr, "{}\n", s.recipe_line);
  if (!s.model_origin.empty()) fmt::print(stderr, "{}\n", s.model_origin);
  const training::RunText& text = run.text();
  const auto bytes = [](const data::TextFile& file) {
    return fmt::format("{} ({:.1f} MB)", file.name, static_cast<double>(file.text.size()) / 1e6);
  };
  if (const data::Tokenizer* tokenizer = run.tokenizer()) {
    const std::string data =
        run.settings().task == training::Task::LanguageModel
            ? fmt::format("training text {}{}", bytes(text.train_text),
                          text.dev_text.text.empty() ? "" : ", dev text " + bytes(text.dev_text))
            : fmt::format("{} training pairs{}", text.train.pairs.size(),
                          text.dev.pairs.empty()
                              ? ""
                              : fmt::format(", {} dev pairs", text.dev.pairs.size()));
    fmt::print(stderr, "data: {}, {} tokenizer of {} tokens{}\n", data, tokenizer->kind(),
               tokenizer->size(), s.tokenizer_origin);
  }
  const Transformer& model = run.model();
  const TransformerConfig& c = model.config;
  fmt::print(stderr, "model: {} parameters (d_model {}, d_ff {}, heads {}, {}, vocab {}{})\n",
             model.parameter_count(), c.d_model, c.d_ff, c.heads,
             c.decoder_only() ? fmt::format("{} layers, decoder-only", c.decoder_layers)
                              : fmt::format("layers {}+{}", c.encoder_layers, c.decoder_layers),
             c.vocab_size, c.tied ? ", tied" : "");
  if (s.timing)
    fmt::print(stderr,
               "--minutes {}: {:.3f} s a step ({} steps timed), so {} steps, {} of them warm-up; "
               "--steps {} repeats this run exactly\n",
               run.settings().minutes, s.timing->seconds_per_step, s.timing->timed,
               run.settings().steps, run.settings().warmup, run.settings().steps);
  if (!s.note.empty()) fmt::print(stderr, "{}\n", s.note);
}

// Saves, says how to go on, and returns the shell's exit status for a program ended by the
// signal, so that scripts see the stop.
int stopped(training::Run& run, Progress& progress, int signal_number) {
  run.save();
  run.write_page();
  const training::RunSettings& s = run.settings();
  progress.note(fmt::format(
      "stopped by {} after step {} of {}: saved {} and its training state {}; continue with: "
      "transformer train --resume {} --steps {}{}",
      signal_number == SIGINT ? "SIGINT" : "SIGTERM", run.steps_done(), s.steps, s.save,
      run.state_path(), s.save, s.steps,
      s.save_every > 0 ? fmt::format(" --save-every {}", s.save_every) : ""));
  return 128 + signal_number;
}

void finish(training::Run& run, Progress& progress) {
  const double seconds = run.training_seconds();
  progress.finish(fmt::format("final loss {:.4f}, {:.0f} target tokens/s, {:.0f} {}/s",
                              run.losses().back(),
                              static_cast<double>(run.target_tokens()) / seconds,
                              static_cast<double>(run.sequences()) / seconds,
                              run.settings().task == training::Task::LanguageModel
                                  ? "windows"
                                  : (run.tokenizer() ? "sentence pairs" : "sequences")));
  const training::WeightsChoice chosen = run.choose_weights_and_save();
  if (!chosen.scores.empty()) fmt::print("{}\n", chosen.scores);
  if (!chosen.weights.empty()) fmt::print("the checkpoint holds {}\n", chosen.name);
  fmt::print("{}\n", run.final_scores());
  const auto [loss_png, lr_png] = run.write_curves();
  fmt::print("saved: {} (checkpoint), {} (training state, for --resume), {} and {} (curves)\n",
             run.settings().save, run.state_path(), loss_png, lr_png);
  const std::string page = run.write_page();
  fmt::print("saved: {} (the run's page, {:.0f} kB: open it in a browser)\n", page,
             static_cast<double>(std::filesystem::file_size(page)) / 1000.0);
}

}  // namespace

void add_train_command(CLI::App& app, RunConfig& config, const CLI::Validator& seed,
                       const char* threads_help) {
  CLI::App& t = *app.add_subcommand(
      "train", "Train on a generated task, a file of id pairs, sentence pairs or a text");
  add_data_flags(t, config);
  add_model_flags(t, config);
  add_optimisation_flags(t, config);
  add_run_flags(t, config, seed, threads_help);
}

int run_train(const RunConfig& config) {
  training::Run run(config);
  describe(run);
  stop_after_step_on_signals();
  Progress progress(run.settings().steps);
  while (!run.finished()) {
    const training::StepReport r = run.step();
    progress.update(r.step, fmt::format("loss {:.4f} lr {:.2e} {:.0f} tok/s", r.loss, r.lr,
                                        r.target_tokens_per_second));
    if (r.check) progress.note(*r.check);
    if (!run.finished() && pending_stop_signal() != 0)
      return stopped(run, progress, pending_stop_signal());
  }
  finish(run, progress);
  return 0;
}

}  // namespace gf::cli
