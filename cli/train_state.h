// The training state that `transformer train` keeps beside each checkpoint, so that
// `transformer train --resume M` continues a run exactly where it stopped: the resumed run
// draws the same batches and dropout masks and takes the same optimizer steps, so its losses
// equal those of a run that never stopped, bit for bit.
//
// The checkpoint M stays a plain state dict that other tools can read
// (docs/checkpoint-format.md), so this state lives in a second file, M with its extension
// replaced by ".train-state.safetensors" ("runs/copy.safetensors" ->
// "runs/copy.train-state.safetensors"). It is a safetensors file too, written atomically in
// the same way, after M. It holds a copy of the weights, so that it is complete on its own: a
// run killed between writing M and writing it leaves M one save ahead, and the resumed run
// continues, exactly, from the state's (earlier) step.
//
//   tensors   "model.<parameter>"                          the weights, as saved in M
//             "adam.m.<parameter>", "adam.v.<parameter>"   Adam's moments   (optimizer adam)
//             "sgd.velocity.<parameter>"                   SGD's momentum   (optimizer sgd)
//             "history.loss", "history.lr"                 [steps], the curves so far
//   metadata  "format"               "gradformer-train-state/1"
//             "step"                 steps completed
//             "optimizer_step"       Adam's t, the step of its bias corrections
//             "weights"              a digest of the weights, to check the copy and to tell
//                                    whether M still holds the same ones
//             "rng.batches"          the training-batch stream
//             "rng.eval"             the stream of fresh evaluation sequences
//             "rng.epoch_start"      text: the batch stream before the current epoch was drawn
//             "rng.dropout.<module>" each dropout layer's mask stream ("encoder.layers.0.dropout")
//             "batches.next"         the index of the next batch in the epoch or the id file
//             "batches.in_epoch"     text: "true" once an epoch has been drawn
//             "option.<flag>"        the options that fix the data, the optimizer and the
//                                    schedule ("option.lr" = "0.5"); a resumed run keeps them
// Every generator state is four 64-bit words in hexadecimal, separated by spaces.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "autograd/random.h"
#include "cli/commands.h"
#include "nn/module.h"
#include "nn/safetensors.h"

namespace gf::cli {

// Where the training batches stand: enough to draw the same next batch again.
struct BatchPosition {
  Rng::State batches{}, eval{}, epoch_start{};
  int64_t next = 0;       // the next batch of the epoch (text) or of the id file, by index
  bool in_epoch = false;  // text: an epoch has been drawn (from epoch_start)
};

struct TrainState {
  int64_t step = 0;  // steps completed
  BatchPosition batches;
  std::vector<std::pair<std::string, Rng::State>> dropout;  // by module path
  int64_t optimizer_step = 0;
  nn::NamedTensors model;            // the weights, by parameter name (stored as "model.NAME")
  nn::NamedTensors optimizer;        // "adam.m.NAME", "adam.v.NAME" or "sgd.velocity.NAME"
  std::vector<float> losses, rates;  // one per completed step
  std::string weights;               // weights_digest() of model
  nn::Metadata options;              // flag name (no dashes) -> value
};

// "runs/copy.safetensors" -> "runs/copy.train-state.safetensors".
std::string train_state_path(const std::string& checkpoint);

// 64-bit FNV-1a over every parameter's name, shape and bytes, in hexadecimal.
std::string weights_digest(const nn::Module& model);

// Removes the temporary files ("PATH.tmp-<pid>-<k>", see nn::save_safetensors) that writes of
// path killed half-way left behind, those of processes no longer running, so that a run
// killed again and again does not fill the folder. Returns how many it removed.
int remove_stale_temporaries(const std::string& path);

// Writes state atomically (see nn::save_safetensors).
void save_train_state(const std::string& path, const TrainState& state);
// Reads and checks a file written by save_train_state. Throws FormatError
// "training state: PATH: ..." for a missing or damaged one.
TrainState load_train_state(const std::string& path);

// The options that fix the data, the optimizer and the schedule, by flag name without dashes
// ("lr" -> "0.5"). A resumed run keeps them: changing one would not continue the same run.
nn::Metadata kept_options(const TrainOptions& options);
// Puts the saved values into options. Throws std::invalid_argument when a flag given on the
// command line (options.given) asks for another value, FormatError when one is missing.
void apply_kept_options(const nn::Metadata& saved, TrainOptions& options, const std::string& path);

// The dropout layers' mask generators, by module path, read from or written into model.
std::vector<std::pair<std::string, Rng::State>> dropout_states(nn::Module& model);
// Throws FormatError when the layers differ from the saved ones.
void restore_dropout_states(nn::Module& model,
                            const std::vector<std::pair<std::string, Rng::State>>& states,
                            const std::string& path);

}  // namespace gf::cli
