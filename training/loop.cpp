#include "training/loop.h"

#include <chrono>

namespace gf::training {

RunEnd run(Trainer& trainer, const std::function<data::Batch()>& next_batch,
           const std::function<Tensor(const data::Batch&)>& loss_of, int64_t last_step,
           const Hooks& hooks) {
  using Clock = std::chrono::steady_clock;
  while (trainer.steps() < last_step) {
    const data::Batch batch = next_batch();
    const auto start = Clock::now();
    const StepResult result = trainer.step([&] { return loss_of(batch); });
    const StepRecord record{.result = result,
                            .target_tokens = batch.target_tokens,
                            .sequences = batch.src.shape()[0],
                            .seconds = std::chrono::duration<double>(Clock::now() - start).count()};
    if (hooks.after_step) hooks.after_step(record);
    if (hooks.evaluate) hooks.evaluate(result.step);
    if (hooks.stop && result.step < last_step && hooks.stop(result.step))
      return {.step = result.step, .stopped = true};
    if (hooks.save) hooks.save(result.step);
  }
  return {.step = trainer.steps(), .stopped = false};
}

}  // namespace gf::training
