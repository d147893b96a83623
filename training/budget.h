// Training for a time budget (`transformer train --minutes M`), planned before the run: a few
// steps' forward and backward passes are timed, and the budget becomes a number of steps.
// The run itself is then the same as one given that number of steps, bit for bit, so that a
// schedule fitted to the run's length (cosine_lr) knows it from the start, and the run can be
// repeated exactly with --steps on any machine.
#pragma once

#include <cstdint>
#include <functional>

#include "autograd/tensor.h"
#include "data/batch_source.h"
#include "models/transformer.h"

namespace gf::training {

struct StepTiming {
  double seconds_per_step = 0.0;  // forward and backward pass; the update is left out
  int64_t timed = 0;              // passes timed, after `warm` untimed ones
};

// Times forward and backward passes of loss_of on the next batches, then puts the batches
// and every dropout stream back where they were and forgets the gradients: the run that
// follows draws what it would have drawn. The first `warm` passes, which allocate the
// buffers later steps reuse, are not timed.
StepTiming time_steps(Transformer& model, data::BatchSource& batches,
                      const std::function<Tensor(const data::Batch&)>& loss_of, int64_t warm = 3,
                      int64_t timed = 10);

// The steps that fit minutes at this speed, at least min_steps.
int64_t steps_for_minutes(double minutes, const StepTiming& timing, int64_t min_steps);

}  // namespace gf::training
