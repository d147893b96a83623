#include "training/budget.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "nn/module.h"

namespace gf::training {

StepTiming time_steps(Transformer& model, data::BatchSource& batches,
                      const std::function<Tensor(const data::Batch&)>& loss_of, int64_t warm,
                      int64_t timed) {
  using Clock = std::chrono::steady_clock;
  const data::BatchPosition start = batches.position();
  const nn::RandomStates dropout = nn::random_states(model);
  double seconds = 0.0;
  for (int64_t i = 0; i < warm + timed; ++i) {
    const data::Batch batch = batches.next();
    const auto begin = Clock::now();
    loss_of(batch).backward();
    model.zero_grad();
    if (i >= warm) seconds += std::chrono::duration<double>(Clock::now() - begin).count();
  }
  batches.restore(start);
  nn::restore_random_states(model, dropout);
  return {.seconds_per_step = seconds / static_cast<double>(timed), .timed = timed};
}

int64_t steps_for_minutes(double minutes, const StepTiming& timing, int64_t min_steps) {
  const double steps = std::floor(minutes * 60.0 / timing.seconds_per_step);
  return std::max(min_steps, static_cast<int64_t>(steps));
}

}  // namespace gf::training
