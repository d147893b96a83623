// The training loop: a batch, a step, then what the run wants to do after each step (print,
// evaluate, stop early, save), each a small hook. The CLI's `train`, the lessons and the
// benchmarks run their steps through it.
#pragma once

#include <cstdint>
#include <functional>

#include "data/batch.h"
#include "training/trainer.h"

namespace gf::training {

struct StepRecord {
  StepResult result;
  int64_t target_tokens = 0;  // in the step's batch, the loss's positions
  int64_t sequences = 0;      // pairs in the batch
  double seconds = 0.0;       // the step alone (forward, backward, update), not the batch
};

// Each hook is optional; after every step they are called in this order. stop is not asked
// after the last step, which ends the run anyway.
struct Hooks {
  std::function<void(const StepRecord&)> after_step = nullptr;  // curves, progress
  std::function<void(int64_t step)> evaluate = nullptr;         // checks during training
  std::function<bool(int64_t step)> stop = nullptr;             // true: end after this step
  std::function<void(int64_t step)> save = nullptr;
};

struct RunEnd {
  int64_t step = 0;      // the last step taken
  bool stopped = false;  // hooks.stop ended the run before last_step
};

// Takes steps trainer.steps() + 1 .. last_step, each on next_batch() with the loss that
// loss_of computes from the batch.
RunEnd run(Trainer& trainer, const std::function<data::Batch()>& next_batch,
           const std::function<Tensor(const data::Batch&)>& loss_of, int64_t last_step,
           const Hooks& hooks = {});

}  // namespace gf::training
