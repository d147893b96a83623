// The training step and loop: a Trainer's steps are the hand-written steps, bit for bit; a
// value that is not finite stops it at the right moment; the loop calls its hooks in order.
#include <catch2/catch.hpp>
#include <limits>
#include <string>
#include <vector>

#include "autograd/ops.h"
#include "data/tasks.h"
#include "nn/optim.h"
#include "training/loop.h"
#include "training/trainer.h"

using namespace gf;
using namespace gf::training;

namespace {

TransformerConfig tiny() {
  return {.vocab_size = 11,
          .d_model = 16,
          .d_ff = 32,
          .heads = 2,
          .encoder_layers = 1,
          .decoder_layers = 1,
          .max_len = 16,
          .dropout = 0.1f};
}

std::vector<float> weights_of(const Transformer& model) {
  std::vector<float> all;
  for (const auto& [name, p] : model.named_parameters())
    all.insert(all.end(), p.data(), p.data() + p.numel());
  return all;
}

std::vector<data::Batch> copy_batches(int count) {
  Rng rng(11);
  std::vector<data::Batch> batches;
  for (int i = 0; i < count; ++i)
    batches.push_back(data::make_batch(
        data::generate(data::Task::Copy, 8, {.vocab_size = 11, .min_len = 2, .max_len = 6}, rng)));
  return batches;
}

}  // namespace

TEST_CASE("Trainer's steps equal the same steps written out by hand, bit for bit",
          "[training][trainer]") {
  const std::vector<data::Batch> batches = copy_batches(6);
  Rng rng_a(1), rng_b(1);
  Transformer by_hand(tiny(), rng_a), trained(tiny(), rng_b);

  // By hand: forward, loss, backward, clip, the rate of the step, the update.
  std::vector<Tensor> parameters;
  for (const auto& [name, p] : by_hand.named_parameters()) parameters.push_back(p);
  nn::Adam adam(parameters);
  std::vector<float> losses;
  for (int64_t step = 1; step <= 6; ++step) {
    const data::Batch& batch = batches[static_cast<size_t>(step - 1)];
    adam.zero_grad();
    const Tensor loss = cross_entropy(by_hand.forward(batch.src, batch.tgt_in), batch.tgt_out,
                                      {.ignore_index = 0, .label_smoothing = 0.1f});
    loss.backward();
    nn::clip_grad_norm(parameters, 0.5f);
    adam.set_lr(nn::noam_lr(step, 16, 3, 0.5f));
    adam.step();
    losses.push_back(loss.item());
  }

  Trainer trainer(nn::Optimizer(trained.named_parameters(), nn::AdamConfig{}), noam(16, 3, 0.5f),
                  {.clip = 0.5f, .check_finite = true});
  for (int64_t step = 1; step <= 6; ++step) {
    const data::Batch& batch = batches[static_cast<size_t>(step - 1)];
    const StepResult r = trainer.step([&] { return teacher_forced_loss(trained, batch, 0.1f); });
    CHECK(r.step == step);
    CHECK(r.loss == losses[static_cast<size_t>(step - 1)]);
    CHECK(r.lr == nn::noam_lr(step, 16, 3, 0.5f));
  }
  CHECK(trainer.steps() == 6);
  CHECK(trainer.optimizer().steps() == 6);
  CHECK(weights_of(trained) == weights_of(by_hand));
}

TEST_CASE("a loss that is not finite stops the step before the update",
          "[training][trainer][errors]") {
  Rng rng(2);
  Transformer model(tiny(), rng);
  const std::vector<float> before = weights_of(model);
  Trainer trainer(nn::Optimizer(model.named_parameters(), nn::SgdConfig{}), constant(0.1f),
                  {.check_finite = true});
  const data::Batch batch = copy_batches(1)[0];
  const float nan = std::numeric_limits<float>::quiet_NaN();
  try {
    trainer.step([&] { return teacher_forced_loss(model, batch) * Tensor::scalar(nan); });
    FAIL("no error");
  } catch (const NonFiniteError& e) {
    CHECK(e.step == 1);
    CHECK(e.problem == "the loss is nan");
    CHECK_FALSE(e.after_update);
    CHECK(std::string(e.what()) == "step 1: the loss is nan");
  }
  CHECK(weights_of(model) == before);
  CHECK(trainer.steps() == 0);

  // Gradients near 1e30 (finite) at a rate of 1e10: the update itself overflows, caught after it.
  Trainer reckless(nn::Optimizer(model.named_parameters(), nn::SgdConfig{}), constant(1e10f),
                   {.check_finite = true});
  CHECK_THROWS_WITH(
      reckless.step([&] { return teacher_forced_loss(model, batch) * Tensor::scalar(1e30f); }),
      Catch::Contains("after the update"));
}

TEST_CASE("the loop takes the steps left, calls its hooks in order and stops when asked",
          "[training][loop]") {
  Rng rng(3);
  Transformer model(tiny(), rng);
  Trainer trainer(nn::Optimizer(model.named_parameters(), nn::AdamConfig{}), constant(1e-3f));
  trainer.set_steps(2);  // as a resumed run: steps 3 to 6 are left
  const std::vector<data::Batch> batches = copy_batches(1);
  std::vector<std::string> calls;
  int batches_drawn = 0;
  const Hooks hooks = {
      .after_step =
          [&](const StepRecord& r) {
            calls.push_back("after " + std::to_string(r.result.step));
            CHECK(r.sequences == 8);
            CHECK(r.target_tokens == batches[0].target_tokens);
          },
      .evaluate = [&](int64_t step) { calls.push_back("evaluate " + std::to_string(step)); },
      .stop = [&](int64_t step) { return step == 4; },
      .save =
          [&](int64_t step) {
            calls.push_back("save " + std::to_string(step));
          }};
  const auto next = [&] {
    ++batches_drawn;
    return batches[0];
  };
  const auto loss_of = [&](const data::Batch& b) {
    return teacher_forced_loss(model, b);
  };
  const RunEnd end = run(trainer, next, loss_of, 6, hooks);
  CHECK(end.step == 4);
  CHECK(end.stopped);
  CHECK(batches_drawn == 2);
  CHECK(calls ==
        std::vector<std::string>{"after 3", "evaluate 3", "save 3", "after 4", "evaluate 4"});

  // The stop hook is not asked after the last step, which ends the run anyway.
  const RunEnd rest = run(trainer, next, loss_of, 5, {.stop = [](int64_t) {
                            return true;
                          }});
  CHECK(rest.step == 5);
  CHECK_FALSE(rest.stopped);
}
