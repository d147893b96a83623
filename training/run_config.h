// What a training run is asked to do (RunConfig) and every setting it then uses (RunSettings).
//
// A RunConfig holds what its author chose: an empty std::optional is a setting not given.
// settle() fills each one in a single place, in this order: a resumed run's saved settings,
// then the recipe for real text (training/recipe.h), then the defaults below. A resumed run
// keeps the settings that fix its data, optimizer and schedule, and the training state stores
// them under readable keys ("option.lr" = "0.5", docs/checkpoint-format.md): to_metadata and
// settings_from_metadata write and read them.
//
// Messages name a setting by its `transformer train` flag (--lr), which is also its key.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "models/transformer.h"
#include "nn/safetensors.h"
#include "training/choices.h"
#include "training/recipe.h"

namespace gf::training {

struct RunConfig {
  // The data.
  std::optional<Task> task;                // copy
  std::string pairs;                       // a file of SRC<TAB>TGT id lines; "": none
  std::string data, dev;                   // translate: TRAIN.tsv and DEV.tsv; "": none
  std::optional<data::ToySplit> split;     // toy-translation's split: random
  std::optional<TokenizerKind> tokenizer;  // text: bpe
  std::optional<int64_t> vocab_size;       // 11 for ids; text: the tokenizer's, at most 8000
  std::optional<int64_t> batch_tokens;     // text: padded tokens per batch (§5.1), 2000
  std::optional<int64_t> length;           // generated content length, 10
  std::optional<int64_t> min_length;       // shortest generated content: length
  std::optional<int64_t> batch;            // sequences per step of ids, 64
  // The model: a new one of this shape, or the checkpoint's (init, resume), which fixes it.
  std::optional<int64_t> d_model, d_ff, heads, layers, max_len;  // 64, 256, 4, 2, 128
  std::optional<bool> tied;                                      // true (§3.4)
  std::optional<NormPlacement> norm;                             // post-norm
  std::optional<PositionKind> positions;                         // sinusoidal
  std::optional<float> dropout;                                  // 0; §5.4 uses 0.1
  std::string init;    // start from this checkpoint's weights; "": a new model
  std::string resume;  // continue the run saved in this checkpoint and its training state
  // The optimisation.
  std::optional<OptimizerKind> optimizer;  // adam
  std::optional<ScheduleKind> schedule;    // noam
  std::optional<float> lr;                 // 0: the schedule's own (schedule_rate)
  std::optional<int64_t> warmup;           // 200
  std::optional<int64_t> schedule_steps;   // cosine: where its rate reaches 0; the planned steps
  std::optional<float> label_smoothing;    // 0.1 (§5.4)
  std::optional<float> clip;               // the largest gradient norm; 0: none
  std::optional<int64_t> steps;            // 600; resuming: the total to reach
  double minutes = 0.0;                    // > 0: as many steps as fit, timed first
  std::optional<int64_t> average;          // average the last N checkpoints at the end; 0
  std::optional<uint64_t> seed;            // 1: every random draw follows from it
  // The batches' stream starts from this seed instead of from a draw of `seed` after the
  // model's (run.h), so that runs of models that draw different initial weights (a learned
  // position table, say) still train on the same batches in the same order. Not kept in the
  // training state: a resumed run restores the batches' position itself.
  std::optional<uint64_t> batch_seed;
  // Checks, snapshots and files.
  std::optional<int64_t> eval_every;  // 0: check only at the end
  int64_t eval_count = 100;           // sequences decoded by each check
  int64_t snapshots = 25;             // attention snapshots for the run's page; 0: none
  int threads = 0;                    // 0: kernels::num_threads()
  // The large matrix products in bfloat16 (kernels/gemm.h). The precision is process-wide: a
  // Run sets it from this when it starts and before each step, so two Runs of a program may
  // differ in it. Not kept in the training state: a resumed run takes it from its own config.
  bool bfloat16 = false;
  std::optional<std::string> save;  // out/model.safetensors; resuming: the file resumed
  int64_t save_every = 0;           // also save every N steps; 0: at the end only
  std::string log_losses;           // "step<TAB>loss" lines of every step; "": none
};

// Every setting of a run, none missing.
struct RunSettings {
  Task task = Task::Copy;
  std::string pairs, data, dev;
  data::ToySplit split = data::ToySplit::Random;
  TokenizerKind tokenizer = TokenizerKind::Bpe;
  int64_t vocab_size = 0;  // 0: 11 for ids, 8000 for text (BPE stops early: vocab_size_for)
  int64_t batch_tokens = 2000, length = 10;
  int64_t min_length = 0;  // 0: length
  int64_t batch = 64;
  TransformerConfig model = {.vocab_size = 11,
                             .d_model = 64,
                             .d_ff = 256,
                             .heads = 4,
                             .encoder_layers = 2,
                             .decoder_layers = 2,
                             .max_len = 128,
                             .dropout = 0.0f};
  std::string init, resume;
  OptimizerKind optimizer = OptimizerKind::Adam;
  ScheduleKind schedule = ScheduleKind::Noam;
  float lr = 0.0f;  // 0: schedule_rate's default
  int64_t warmup = 200;
  int64_t schedule_steps = 0;  // cosine: the planned last step, where its rate reaches zero
  float label_smoothing = 0.1f, clip = 0.0f;
  int64_t steps = 600;
  double minutes = 0.0;
  int64_t average = 0, eval_every = 0, eval_count = 100, snapshots = 25;
  uint64_t seed = 1;
  std::optional<uint64_t> batch_seed;  // none: drawn from seed after the model
  int threads = 0;
  bool bfloat16 = false;
  std::string save = "out/model.safetensors";
  int64_t save_every = 0;
  std::string log_losses;
  std::optional<TextRecipe> recipe;  // real text: the recipe the settings started from
};

// The settings that fix a run's data, optimizer and schedule, which a resumed run keeps, as
// "flag" -> text (fmt's shortest text for numbers, the flag value for an enum).
nn::Metadata to_metadata(const RunSettings& settings);
// A RunConfig holding the settings that metadata (to_metadata's, read from path) saved. Throws
// FormatError "training state: PATH: ..." for a missing or unreadable value; the settings added
// to the format later may be missing, and are then left not given.
RunConfig settings_from_metadata(const nn::Metadata& metadata, const std::string& path);

// What settle() used besides the config: the saved run's settings (resuming) and the corpus
// facts of real text (for the recipe).
struct SettleContext {
  std::optional<RunConfig> saved;  // settings_from_metadata of the run resumed
  std::optional<TextRecipe> recipe;
};

struct Settled {
  RunSettings settings;
  std::string recipe_choices;  // "BPE vocabulary 3100, d_model 128, ..."; "" without a recipe
};

// Every setting, from asked, the context and the defaults. Throws std::invalid_argument when a
// setting asked for differs from the saved run's ("--lr 0.5 differs from the run being
// resumed, which used 0.3 ...") or cannot be used (validate).
Settled settle(const RunConfig& asked, const SettleContext& context);

// Once the steps are known (given, or planned from --minutes): the recipe's warm-up takes at
// most a tenth of the run, and its checks of the dev set are spread evenly over it, where asked
// gave neither. Sets schedule_steps, the cosine's end, to the planned steps when unset.
void fit_to_steps(RunSettings& settings, const RunConfig& asked);

// Throws std::invalid_argument naming the first flag whose value cannot be used.
void validate(const RunSettings& settings);

// The learning rate the schedule is given: lr, or when it is 0 the schedule's own, a factor of
// 0.3 for noam and a peak or constant rate of 1e-3.
float schedule_rate(const RunSettings& settings);

}  // namespace gf::training
