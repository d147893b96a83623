// The training state kept beside a checkpoint, so that a run (`transformer train --resume M`)
// continues a run exactly where it stopped: the resumed run
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
//             "checkpoint_weights"   present when M holds other weights on purpose (the best
//                                    check's, or an average, chosen at the end): their digest
//             "rng.batches"          the training-batch stream
//             "rng.eval"             the stream of fresh evaluation sequences
//             "rng.page_sequences"   a generated task: the stream the page's fixed sequences
//                                    were drawn from, so that a resumed run shows the same ones
//             "rng.epoch_start"      text: the batch stream before the current epoch was drawn
//             "rng.dropout.<module>" each dropout layer's mask stream ("encoder.layers.0.dropout")
//             "batches.next"         the index of the next batch in the epoch or the id file
//             "batches.in_epoch"     text: "true" once an epoch has been drawn
//             "history.page"         what the run's page shows of its past (training/run_page.h:
//                                    attention snapshots, the dev metric, timings), as JSON
//             "option.<flag>"        the options that fix the data, the optimizer and the
//                                    schedule ("option.lr" = "0.5"); a resumed run keeps them
// Every generator state is four 64-bit words in hexadecimal, separated by spaces.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "autograd/random.h"
#include "data/batch_source.h"
#include "nn/module.h"
#include "nn/safetensors.h"
#include "training/trainer.h"

namespace gf::training {

struct TrainState {
  int64_t step = 0;  // steps completed
  data::BatchPosition batches;
  Rng::State eval{};                           // the run's stream of fresh evaluation sequences
  std::optional<Rng::State> page_sequences{};  // a generated task: where the page's were drawn
  nn::RandomStates dropout;                    // by module path
  int64_t optimizer_step = 0;
  nn::NamedTensors model;            // the weights, by parameter name (stored as "model.NAME")
  nn::NamedTensors optimizer;        // "adam.m.NAME", "adam.v.NAME" or "sgd.velocity.NAME"
  std::vector<float> losses, rates;  // one per completed step
  std::string weights;               // weights_digest() of model
  std::string checkpoint_weights{};  // the digest of M's weights when they are not these
  nn::Metadata options;              // the run's settings, by flag name without dashes
  std::string page{};                // PageHistory::to_json(); empty when not recorded
};

// "runs/copy.safetensors" -> "runs/copy.train-state.safetensors".
std::string train_state_path(const std::string& checkpoint);

// 64-bit FNV-1a over every parameter's name, shape and bytes, in hexadecimal.
std::string weights_digest(const nn::Module& model);
std::string weights_digest(const nn::NamedTensors& weights);  // the same, of weights by name

// The state of a run at this point, with the losses and rates so far and its settings.
TrainState capture(const nn::Module& model, const Trainer& trainer,
                   const data::BatchPosition& batches, const Rng::State& eval,
                   nn::RandomStates dropout, std::vector<float> losses, std::vector<float> rates,
                   nn::Metadata options);

// Writes state atomically (see nn::save_safetensors).
void save_train_state(const std::string& path, const TrainState& state);
// Reads and checks a file written by save_train_state. Throws FormatError
// "training state: PATH: ..." for a missing or damaged one.
TrainState load_train_state(const std::string& path);

// Puts a run back where state (read from path) left it: the weights, checked against their
// digest, the optimizer's buffers and step count, every dropout layer's mask stream, the
// batches and the evaluation stream. Throws FormatError "training state: PATH: ..." when the
// state does not fit the model, optimizer or data.
void restore(const TrainState& state, const std::string& path, nn::Module& model, Trainer& trainer,
             data::BatchSource& batches, Rng& eval);

}  // namespace gf::training
