// Training for a time budget (`transformer train --minutes M`), planned before the run: a few
// whole training steps are timed, and the budget becomes a number of steps. The run itself is
// then the same as one given that number of steps, bit for bit, so that a schedule fitted to
// the run's length (cosine_lr) knows it from the start, and the run can be repeated exactly
// with --steps on any machine.
#pragma once

#include <cstdint>
#include <functional>

#include "autograd/tensor.h"
#include "data/batch_source.h"
#include "models/transformer.h"
#include "training/trainer.h"

namespace gf::training {

struct StepTiming {
  double seconds_per_step = 0.0;  // forward, backward and update
  int64_t timed = 0;              // steps timed, after `warm` untimed ones
};

// Times training steps of a stand-in: a new model of the given configuration (its weights
// drawn from a generator of its own) with the trainer make_trainer gives it, on the next
// batches, which are then put back. The run's own model, optimizer and random streams are
// never touched, so the run that follows is the one it would have been. The first `warm`
// steps, which allocate the buffers later steps reuse, are not timed.
StepTiming time_steps(const TransformerConfig& config, data::BatchSource& batches,
                      const std::function<Trainer(const Transformer&)>& make_trainer,
                      const std::function<Tensor(Transformer&, const data::Batch&)>& loss_of,
                      int64_t warm = 8, int64_t timed = 24);

// The steps that fit minutes at this speed, at least min_steps.
int64_t steps_for_minutes(double minutes, const StepTiming& timing, int64_t min_steps);

}  // namespace gf::training
