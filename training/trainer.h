// One training step, the same everywhere a model is trained: forward pass and loss, backward
// pass, gradient clipping, and the optimizer's update at the rate the schedule gives for the
// step (§5.3). The CLI, the lessons and the benchmarks all train through Trainer::step.
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>

#include "autograd/tensor.h"
#include "data/batch.h"
#include "models/transformer.h"
#include "nn/optim.h"

namespace gf::training {

// The learning rate of each step, counting from 1.
using Schedule = std::function<float(int64_t step)>;
// §5.3's warm-up then inverse square root (nn::noam_lr), times factor.
Schedule noam(int64_t d_model, int64_t warmup, float factor = 1.0f);
// Warm-up to peak, then half a cosine to zero at step total (nn::cosine_lr).
Schedule cosine(int64_t warmup, int64_t total, float peak);
Schedule constant(float lr);

struct StepOptions {
  float clip = 0.0f;  // the largest gradient norm (nn::clip_grad_norm); 0: no clipping
  // Scan the loss and gradients before the update and the weights after it (about the cost of
  // one update): a run that must not lose its weights to one bad batch turns it on.
  bool check_finite = false;
};

struct StepResult {
  int64_t step = 0;  // the step just taken, counting from 1
  float loss = 0.0f, lr = 0.0f;
};

// A loss or gradient (before the update: the weights are still the last good step's) or a
// weight (after it) that is not finite.
class NonFiniteError : public std::runtime_error {
 public:
  NonFiniteError(int64_t step, std::string problem, bool after_update);
  int64_t step;
  std::string problem;  // "the loss is nan", "the gradient of encoder.norm.weight has inf"
  bool after_update;
};

class Trainer {
 public:
  Trainer(nn::Optimizer optimizer, Schedule schedule, StepOptions options = {});

  // One step on the loss that loss_of computes (the forward pass). Throws NonFiniteError when
  // options.check_finite finds a value that is not finite.
  StepResult step(const std::function<Tensor()>& loss_of);

  int64_t steps() const { return steps_; }
  void set_steps(int64_t done) { steps_ = done; }  // a resumed run's count
  nn::Optimizer& optimizer() { return optimizer_; }
  const nn::Optimizer& optimizer() const { return optimizer_; }

 private:
  nn::Optimizer optimizer_;
  Schedule schedule_;
  StepOptions options_;
  int64_t steps_ = 0;
};

// The loss of §5.4: teacher forcing (the decoder reads the reference shifted right), then
// cross-entropy with label smoothing over the target tokens that are not padding.
Tensor teacher_forced_loss(Transformer& model, const data::Batch& batch,
                           float label_smoothing = 0.0f);

}  // namespace gf::training
