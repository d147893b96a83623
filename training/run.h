// A training run: everything `transformer train` does, as an object that a command, a lesson,
// a test or a page drives step by step and reports on in its own way.
//
//   Run run(config);                  // data, tokenizer, model, batches, optimizer, schedule
//   while (!run.finished()) {
//     const StepReport r = run.step(); // one step, then its check, snapshot and save, if due
//     ...                              // print r.loss, r.check; stop early with run.save()
//   }
//   run.choose_weights_and_save();     // the checkpoint and the training state
//   run.final_scores(); run.write_curves(); run.write_page();
//
// Random streams. Every draw follows from the seed, in this order: the model's initial
// weights and its dropout layers' mask streams, then the batches' stream, and from it the
// stream of fresh evaluation sequences. Checking draws only from that last one, so a run that
// checks trains on the same batches as one that does not. With batch_seed, the batches' stream
// starts from it instead, so that two models train on the same batches.
//
// When things happen, after step s of a run of N steps:
//   - a check (BLEU, fresh exact copies, or a language model's perplexity) when eval_every
//     divides s and s < N;
//   - the weights go into the average at the last `average` of every N/50th step;
//   - a snapshot of the attention for the page at snapshot_steps(N, snapshots), and one of the
//     initial weights before the first step;
//   - a save when save_every divides s and s < N.
// A save writes the checkpoint, then the training state beside it (training/resume.h), then
// the loss log. A resumed run continues from the state exactly: its losses are those of the
// run that never stopped, bit for bit.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "data/batch_source.h"
#include "models/transformer.h"
#include "training/averaging.h"
#include "training/budget.h"
#include "training/model_file.h"
#include "training/resume.h"
#include "training/run_checks.h"
#include "training/run_config.h"
#include "training/run_page.h"
#include "training/trainer.h"

namespace gf::training {

// What a run started from, for its driver to report.
struct RunStart {
  std::string recipe_line;           // "recipe for N pairs of ...: ..."; "" without a recipe
  std::string model_origin;          // "resuming M at step 20 of 40 ..."; "" for a new model
  std::string tokenizer_origin;      // " (learned in 0.12s)", " (from M)"; "" for ids
  std::optional<StepTiming> timing;  // --minutes: the timing that planned the steps
  std::string note;                  // a warning worth printing; "" when none
};

// What one step did.
struct StepReport {
  int64_t step = 0;  // the step taken, counting from 1
  float loss = 0.0f, lr = 0.0f;
  double target_tokens_per_second = 0.0;  // over the run's steps so far, checks left out
  std::optional<std::string> check;       // "step 100: BLEU 21.3 on 100 dev pairs (greedy)"
  bool snapshot = false;                  // an attention snapshot was taken for the page
  bool saved = false;                     // the checkpoint and training state were written
};

// Where a run stands between steps: enough, with the weights and the optimizer, to continue.
struct RunPosition {
  data::BatchPosition batches;
  Rng::State fresh{};
  nn::RandomStates dropout;
};

// The weights the checkpoint holds at the end, and why.
struct WeightsChoice {
  std::string name = "the last step's weights";
  nn::NamedTensors weights;  // empty: the last step's
  std::string scores;        // "the last step's weights (600) 20.31, ..."; "" when not chosen
};

class Run {
 public:
  // Reads the data; learns the tokenizer and makes a new model, or loads the model of init or
  // resume; makes the batches, optimizer and schedule; with minutes, times a few steps of a
  // stand-in to plan the steps; a resumed run is put back where it stopped. Sets the kernels'
  // thread count when threads > 0, makes the checkpoint's folder (so that a path that cannot be
  // written fails now, not after training) and removes temporary files that killed saves left.
  // Throws std::invalid_argument or FormatError naming what cannot be used.
  explicit Run(const RunConfig& config);
  Run(const Run&) = delete;
  Run& operator=(const Run&) = delete;

  const RunSettings& settings() const { return settings_; }
  const RunStart& start() const { return start_; }
  const RunText& text() const { return text_; }
  Transformer& model() { return *model_.model; }
  const Transformer& model() const { return *model_.model; }
  const data::Tokenizer* tokenizer() const { return model_.tokenizer.get(); }
  int64_t steps_done() const { return trainer_->steps(); }
  bool finished() const { return steps_done() >= settings_.steps; }
  const std::vector<float>& losses() const { return losses_; }
  const std::vector<float>& rates() const { return rates_; }
  std::string state_path() const { return train_state_path(settings_.save); }

  // Takes the next step, then what is due after it (above). A loss, gradient or weight that is
  // not finite ends the run: throws std::runtime_error saying so, after saving the weights of
  // the step before when the update has not touched them yet.
  StepReport step();

  // Writes the checkpoint, the training state and the loss log as the run stands now.
  void save();

  // At the end: the checkpoint gets the last step's weights, the best check's or the average
  // of the last checkpoints, whichever scores the highest BLEU on the check pairs (text only;
  // the last on a tie); the state continues from the last step's. Saves both, then puts the
  // chosen weights into the model, for final_scores and the page.
  WeightsChoice choose_weights_and_save();

  // The last line of scores (draws from the fresh stream for a generated task).
  std::string final_scores() { return checks_->final_scores(model()); }
  // What the run scores its model on: the check and page pairs (training/run_checks.h).
  const RunChecks& checks() const { return *checks_; }
  // The loss and learning-rate curves as NAME.loss.png and NAME.lr.png; returns their paths.
  std::pair<std::string, std::string> write_curves() const;
  // The run's page as it stands at this step (viz/run_page.h): its curves, samples decoded now,
  // the attention of the first page pairs and the snapshots so far.
  viz::RunPage page();
  // The run's page NAME.html; returns its path.
  std::string write_page();

  // The seconds of the steps alone, and what they trained on.
  double training_seconds() const { return training_seconds_; }
  int64_t target_tokens() const { return target_tokens_; }
  int64_t sequences() const { return sequences_; }

 private:
  void use_precision() const;  // the kernels' precision, process-wide, from settings_
  void make_model(const std::optional<TrainState>& resumed, Rng& rng);
  void plan_steps_for_minutes();
  void continue_from(const TrainState& state);
  RunPosition current_position();
  StepReport take_step();
  void save_at(const RunPosition& at, const nn::NamedTensors& checkpoint_weights = {});
  std::optional<std::string> check(int64_t step);
  bool averaged_at(int64_t step) const;
  bool take_snapshot(int64_t step);
  PageHistory page_history() const;
  [[noreturn]] void fail(const NonFiniteError& e, const RunPosition& before);

  RunConfig asked_;
  RunSettings settings_;
  RunStart start_;
  RunText text_;
  ModelAndTokenizer model_;
  std::unique_ptr<data::BatchSource> batches_;
  std::unique_ptr<RunChecks> checks_;
  std::unique_ptr<Trainer> trainer_;
  nn::Metadata kept_settings_;
  TokenNames names_;
  std::optional<PageRecorder> recorder_;  // none with snapshots 0
  BestWeights best_;                      // text: of the checks during the run
  WeightAverage average_;                 // average > 0: of the last checkpoints
  std::vector<float> losses_, rates_;
  int64_t target_tokens_ = 0, sequences_ = 0;
  double training_seconds_ = 0.0, checking_seconds_ = 0.0;
};

// The schedule a run's settings ask for: noam, a cosine that reaches zero at schedule_steps
// (the planned last step, also when a resumed run stops sooner), or a constant rate.
Schedule schedule_of(const RunSettings& settings, int64_t d_model);
// Adam or SGD over model's parameters at schedule_rate, with the schedule and clipping.
Trainer trainer_of(const RunSettings& settings, const Transformer& model);

// One vocabulary for both languages, learned from both sides of the training pairs (§5.1: "a
// shared source-target vocabulary"), so that the tied embedding matrix (§3.4) serves both.
std::unique_ptr<data::Tokenizer> learn_tokenizer(TokenizerKind kind, int64_t vocab_size,
                                                 const data::SentencePairsFile& train);
// A vocabulary of kind learned from texts (a language model's: its training text); vocab_size
// 0 means 8000.
std::unique_ptr<data::Tokenizer> learn_tokenizer(TokenizerKind kind, int64_t vocab_size,
                                                 std::span<const std::string> texts);

}  // namespace gf::training
