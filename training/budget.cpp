#include "training/budget.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace gf::training {

StepTiming time_steps(const TransformerConfig& config, data::BatchSource& batches,
                      const std::function<Trainer(const Transformer&)>& make_trainer,
                      const std::function<Tensor(Transformer&, const data::Batch&)>& loss_of,
                      int64_t warm, int64_t timed) {
  using Clock = std::chrono::steady_clock;
  Rng rng(0);  // the stand-in's own: its values do not matter, only their count
  Transformer stand_in(config, rng);
  stand_in.train();
  Trainer trainer = make_trainer(stand_in);
  const data::BatchPosition start = batches.position();
  double seconds = 0.0;
  for (int64_t i = 0; i < warm + timed; ++i) {
    const data::Batch batch = batches.next();
    const auto begin = Clock::now();
    trainer.step([&] { return loss_of(stand_in, batch); });
    if (i >= warm) seconds += std::chrono::duration<double>(Clock::now() - begin).count();
  }
  batches.restore(start);
  return {.seconds_per_step = seconds / static_cast<double>(timed), .timed = timed};
}

int64_t steps_for_minutes(double minutes, const StepTiming& timing, int64_t min_steps) {
  const double steps = std::floor(minutes * 60.0 / timing.seconds_per_step);
  return std::max(min_steps, static_cast<int64_t>(steps));
}

}  // namespace gf::training
