// The state that training saves to resume exactly: optimizer buffers, generator states, and
// the dropout layers found by their module paths.
#include <algorithm>
#include <catch2/catch.hpp>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "autograd/ops.h"
#include "autograd/random.h"
#include "models/transformer.h"
#include "nn/layers.h"
#include "nn/optim.h"

using namespace gf;
using namespace gf::nn;

namespace {

// Steps an optimizer on the loss sum((p - target)^2) for a parameter of 3 values.
template <typename Optimizer>
void train_steps(Optimizer& optimizer, Tensor& p, int steps) {
  const Tensor target = Tensor::from({3}, {0.5f, -1.0f, 2.0f});
  for (int i = 0; i < steps; ++i) {
    optimizer.zero_grad();
    const Tensor d = p - target;
    sum(d * d).backward();
    optimizer.step();
  }
}

Tensor parameter_like(const Tensor& values) {
  Tensor p = Tensor::zeros(values.shape()).set_requires_grad();
  std::copy_n(values.data(), values.numel(), p.data());
  return p;
}

std::vector<float> values_of(const Tensor& t) {
  return {t.data(), t.data() + t.numel()};
}

}  // namespace

TEST_CASE("Adam restored from another's moments and step continues bit for bit",
          "[nn][optim][resume]") {
  Tensor straight = Tensor::from({3}, {1.0f, 2.0f, 3.0f}).set_requires_grad();
  Adam uninterrupted({straight}, {.lr = 0.05f});
  train_steps(uninterrupted, straight, 3);

  // A second optimizer on a copy of the weights, given the first one's state after 3 steps.
  Tensor resumed = parameter_like(straight);
  Adam restored({resumed}, {.lr = 0.05f});
  restored.restore(uninterrupted.steps(), uninterrupted.first_moments(),
                   uninterrupted.second_moments());
  CHECK(restored.steps() == 3);
  train_steps(uninterrupted, straight, 4);
  train_steps(restored, resumed, 4);
  CHECK(values_of(resumed) == values_of(straight));

  // Without the saved t the bias corrections differ, and so do the weights.
  Tensor fresh_t = parameter_like(resumed);
  Adam wrong_step({fresh_t}, {.lr = 0.05f});
  wrong_step.restore(0, restored.first_moments(), restored.second_moments());
  train_steps(restored, resumed, 1);
  train_steps(wrong_step, fresh_t, 1);
  CHECK(values_of(fresh_t) != values_of(resumed));
}

TEST_CASE("SGD restored from another's velocities continues bit for bit", "[nn][optim][resume]") {
  Tensor straight = Tensor::from({3}, {1.0f, 2.0f, 3.0f}).set_requires_grad();
  Sgd uninterrupted({straight}, {.lr = 0.1f, .momentum = 0.9f});
  train_steps(uninterrupted, straight, 2);
  Tensor resumed = parameter_like(straight);
  Sgd restored({resumed}, {.lr = 0.1f, .momentum = 0.9f});
  restored.restore(uninterrupted.velocities());
  train_steps(uninterrupted, straight, 3);
  train_steps(restored, resumed, 3);
  CHECK(values_of(resumed) == values_of(straight));
}

TEST_CASE("optimizer restore refuses buffers that do not fit, changing nothing",
          "[nn][optim][resume]") {
  Tensor p = Tensor::from({3}, {1.0f, 2.0f, 3.0f}).set_requires_grad();
  Adam adam({p});
  const std::vector<Tensor> wrong_shape = {Tensor::ones({2})};
  const std::vector<Tensor> right_shape = {Tensor::ones({3})};
  CHECK_THROWS_WITH(adam.restore(5, wrong_shape, right_shape),
                    Catch::Contains("saved buffer 0 has shape [2] but its parameter has [3]"));
  CHECK_THROWS_WITH(adam.restore(5, right_shape, {}),
                    Catch::Contains("0 saved buffers for 1 parameters"));
  CHECK(adam.steps() == 0);
  CHECK(values_of(adam.first_moments()[0]) == std::vector<float>{0.0f, 0.0f, 0.0f});
  Sgd sgd({p});
  CHECK_THROWS_AS(sgd.restore(wrong_shape), std::invalid_argument);
}

TEST_CASE("an Rng put back in a saved state draws the same numbers again", "[random][resume]") {
  Rng rng(42);
  for (int i = 0; i < 5; ++i) rng.next_u64();
  const Rng::State saved = rng.state();
  std::vector<uint64_t> first, again;
  for (int i = 0; i < 8; ++i) first.push_back(rng.next_u64());
  Rng other(7);
  other.set_state(saved);
  for (int i = 0; i < 8; ++i) again.push_back(other.next_u64());
  CHECK(again == first);
  CHECK_THROWS_AS(other.set_state(Rng::State{}), std::invalid_argument);
}

TEST_CASE("named_modules finds every dropout layer of the Transformer by its path",
          "[nn][module][resume]") {
  Rng rng(1);
  Transformer model({.vocab_size = 11,
                     .d_model = 8,
                     .d_ff = 16,
                     .heads = 2,
                     .encoder_layers = 2,
                     .decoder_layers = 1,
                     .max_len = 16,
                     .dropout = 0.1f},
                    rng);
  std::vector<std::string> dropouts;
  for (const auto& [name, module] : model.named_modules())
    if (dynamic_cast<Dropout*>(module)) dropouts.push_back(name);
  CHECK(dropouts == std::vector<std::string>{"encoder.layers.0.dropout", "encoder.layers.1.dropout",
                                             "decoder.layers.0.dropout", "dropout"});

  // random_states finds the same layers through random_stream(), without knowing their type.
  std::vector<std::string> streams;
  for (const auto& [name, state] : random_states(model)) streams.push_back(name);
  CHECK(streams == dropouts);
}

TEST_CASE("restored random states draw the same dropout masks, and a mismatch changes nothing",
          "[nn][module][resume]") {
  const TransformerConfig config = {.vocab_size = 11,
                                    .d_model = 8,
                                    .d_ff = 16,
                                    .heads = 2,
                                    .encoder_layers = 1,
                                    .decoder_layers = 1,
                                    .max_len = 16,
                                    .dropout = 0.5f};
  Rng rng_a(1), rng_b(2);
  Transformer a(config, rng_a), b(config, rng_b);
  const RandomStates saved = random_states(a);
  const Tensor x = Tensor::ones({4, 8});
  const Tensor first = a.encoder.layers[0]->dropout.forward(x);
  restore_random_states(b, saved);
  CHECK(values_of(b.encoder.layers[0]->dropout.forward(x)) == values_of(first));

  RandomStates missing = saved;
  missing.pop_back();
  const RandomStates before = random_states(b);
  CHECK_THROWS_WITH(restore_random_states(b, missing),
                    Catch::Contains("no dropout state for \"dropout\""));
  RandomStates extra = saved;
  extra.emplace_back("decoder.layers.7.dropout", saved[0].second);
  CHECK_THROWS_WITH(restore_random_states(b, extra),
                    Catch::Contains("4 dropout states for a model with 3 dropout layers"));
  CHECK(random_states(b) == before);
}

TEST_CASE("Optimizer names its buffers after the parameters and restores them by name",
          "[nn][optim][resume]") {
  Tensor a = Tensor::from({2}, {1.0f, 2.0f}).set_requires_grad();
  Tensor b = Tensor::from({3}, {1.0f, 2.0f, 3.0f}).set_requires_grad();
  Optimizer adam({{"enc.a", a}, {"dec.b", b}}, AdamConfig{.lr = 0.1f});
  const auto names = [](const NamedTensors& named) {
    std::vector<std::string> out;
    for (const auto& [name, tensor] : named) out.push_back(name);
    return out;
  };
  CHECK(names(adam.buffers()) ==
        std::vector<std::string>{"adam.m.enc.a", "adam.m.dec.b", "adam.v.enc.a", "adam.v.dec.b"});
  sum(a * a + Tensor::ones({2})).backward();
  sum(b * b).backward();
  adam.step(0.1f);
  CHECK(adam.steps() == 1);

  // A twin restored from the first one's buffers, given in another order, takes the same step.
  Tensor a2 = parameter_like(a), b2 = parameter_like(b);
  Optimizer twin({{"enc.a", a2}, {"dec.b", b2}}, AdamConfig{.lr = 0.1f});
  NamedTensors shuffled = adam.buffers();
  std::reverse(shuffled.begin(), shuffled.end());
  twin.restore(adam.steps(), shuffled);
  for (Optimizer* o : {&adam, &twin}) {
    o->zero_grad();
    for (const Tensor& p : o->parameters()) sum(p * p).backward();
    o->step(0.05f);
  }
  CHECK(values_of(a2) == values_of(a));
  CHECK(values_of(b2) == values_of(b));

  NamedTensors renamed = adam.buffers();
  renamed[1].first = "adam.m.dec.c";
  CHECK_THROWS_WITH(twin.restore(1, renamed),
                    Catch::Contains("tensor \"adam.m.dec.b\" is missing"));
  CHECK_THROWS_WITH(twin.restore(1, {}),
                    Catch::Contains("holds 0 optimizer buffers; Adam for this model needs 4"));
  Optimizer sgd({{"enc.a", a}}, SgdConfig{});
  CHECK(sgd.steps() == 0);
  CHECK(names(sgd.buffers()) == std::vector<std::string>{"sgd.velocity.enc.a"});
  CHECK_THROWS_WITH(sgd.restore(0, {{"sgd.velocity.enc.a", Tensor::ones({5})}}),
                    Catch::Contains("has shape [5] but the parameter has [2]"));
}

TEST_CASE("the non-finite checks name the first parameter that went bad and what it holds",
          "[nn][optim][resume]") {
  Tensor a = Tensor::from({2}, {1.0f, 2.0f}).set_requires_grad();
  Tensor b = Tensor::from({3}, {1.0f, 2.0f, 3.0f}).set_requires_grad();
  const NamedTensors parameters = {{"encoder.a", a}, {"decoder.b", b}};
  CHECK_FALSE(find_non_finite_gradient(parameters).has_value());  // no gradients yet

  // d/db of sum(b * [1, inf, 0]) is [1, inf, 0]; a's gradient stays finite.
  const float inf = std::numeric_limits<float>::infinity();
  sum(a * Tensor::from({2}, {2.0f, 3.0f})).backward();
  sum(b * Tensor::from({3}, {1.0f, inf, 0.0f})).backward();
  CHECK(find_non_finite_gradient(parameters) == "the gradient of decoder.b has inf");
  CHECK_FALSE(find_non_finite_value(parameters).has_value());

  a.data()[1] = std::numeric_limits<float>::quiet_NaN();
  CHECK(find_non_finite_value(parameters) == "encoder.a has nan");
}
