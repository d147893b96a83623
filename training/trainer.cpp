#include "training/trainer.h"

#include <fmt/format.h>

#include <cmath>
#include <optional>
#include <utility>

#include "autograd/ops.h"

namespace gf::training {

Schedule noam(int64_t d_model, int64_t warmup, float factor) {
  return [=](int64_t step) {
    return nn::noam_lr(step, d_model, warmup, factor);
  };
}

Schedule cosine(int64_t warmup, int64_t total, float peak) {
  return [=](int64_t step) {
    return nn::cosine_lr(step, warmup, total, peak);
  };
}

Schedule constant(float lr) {
  return [=](int64_t) {
    return lr;
  };
}

NonFiniteError::NonFiniteError(int64_t step_, std::string problem_, bool after_update_)
    : std::runtime_error(
          fmt::format("step {}: {}{}", step_, problem_, after_update_ ? " after the update" : "")),
      step(step_),
      problem(std::move(problem_)),
      after_update(after_update_) {}

Trainer::Trainer(nn::Optimizer optimizer, Schedule schedule, StepOptions options)
    : optimizer_(std::move(optimizer)), schedule_(std::move(schedule)), options_(options) {}

namespace {

std::optional<std::string> non_finite_loss_or_gradient(float loss,
                                                       const nn::NamedTensors& parameters) {
  if (!std::isfinite(loss)) return fmt::format("the loss is {}", std::isnan(loss) ? "nan" : "inf");
  return nn::find_non_finite_gradient(parameters);
}

}  // namespace

// [snippet: trainer-step]
StepResult Trainer::step(const std::function<Tensor()>& loss_of) {
  const int64_t step = steps_ + 1;
  // The last step's gradients go first, so that they do not sit in memory beside this step's
  // activations.
  optimizer_.zero_grad();
  const Tensor loss = loss_of();
  loss.backward();
  if (options_.check_finite)  // before the update, so the weights stay those of the last step
    if (auto bad = non_finite_loss_or_gradient(loss.item(), optimizer_.named_parameters()))
      throw NonFiniteError(step, std::move(*bad), false);
  if (options_.clip > 0.0f) nn::clip_grad_norm(optimizer_.parameters(), options_.clip);
  const float lr = schedule_(step);
  optimizer_.step(lr);
  steps_ = step;
  if (options_.check_finite)
    if (auto bad = nn::find_non_finite_value(optimizer_.named_parameters()))
      throw NonFiniteError(step, std::move(*bad), true);
  return {.step = step, .loss = loss.item(), .lr = lr};
}
// [/snippet]

Tensor teacher_forced_loss(Transformer& model, const data::Batch& batch, float label_smoothing) {
  const Tensor logits = model.forward(batch.src, batch.tgt_in);
  return cross_entropy(logits, batch.tgt_out,
                       {.ignore_index = model.config.pad_id, .label_smoothing = label_smoothing});
}

}  // namespace gf::training
