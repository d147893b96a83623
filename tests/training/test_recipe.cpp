// Training for real text: the recipe read off a corpus, a time budget turned into steps
// without changing the run, and the weights kept besides the last (the best, the average).
#include <catch2/catch.hpp>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "data/batch_source.h"
#include "nn/optim.h"
#include "tests/support/tiny_model.h"
#include "training/averaging.h"
#include "training/budget.h"
#include "training/recipe.h"
#include "training/trainer.h"

using namespace gf;
using namespace gf::training;

namespace {

data::BatchSource copy_batches() {
  return data::BatchSource::generated(data::Task::Copy,
                                      {.vocab_size = 11, .min_len = 2, .max_len = 6}, 8, Rng(5));
}

std::vector<float> losses_of_steps(Transformer& model, data::BatchSource& batches, int steps) {
  Trainer trainer(nn::Optimizer(model.named_parameters(), nn::AdamConfig{.lr = 1e-3f}),
                  constant(1e-3f));
  std::vector<float> losses;
  for (int i = 0; i < steps; ++i) {
    const data::Batch batch = batches.next();
    losses.push_back(trainer.step([&] { return teacher_forced_loss(model, batch, 0.1f); }).loss);
  }
  return losses;
}

}  // namespace

TEST_CASE("corpus facts count pairs, words, distinct words and characters", "[training][recipe]") {
  std::istringstream text("Open file\tDatei öffnen\nOpen\tÖffnen\n");
  const data::SentencePairsFile file = data::read_sentence_pairs(text, "facts.tsv");
  const CorpusFacts facts = corpus_facts(file);
  CHECK(facts.pairs == 2);
  CHECK(facts.words == 6);           // Open file | Datei öffnen | Open | Öffnen
  CHECK(facts.distinct_words == 5);  // "Open" twice
  // O p e n f i l D a t ö Ö and the space: 13 distinct code points.
  CHECK(facts.characters == 13);
}

TEST_CASE("the recipe is for real text and sizes the vocabulary to the corpus",
          "[training][recipe]") {
  CHECK_FALSE(
      text_recipe({.pairs = 10000, .words = 120000, .distinct_words = 152, .characters = 40}));
  // The German catalogs' sizes: 4 specials + 256 bytes + 159 characters, and
  // round(8 sqrt(210086)) = 3667 merges, 4086 tokens, rounded up to a hundred.
  const auto german =
      text_recipe({.pairs = 25505, .words = 210086, .distinct_words = 30000, .characters = 159});
  REQUIRE(german);
  CHECK(german->vocab_size == 4100);
  CHECK(german->model.norm_first);
  CHECK(german->schedule == ScheduleKind::Cosine);
  CHECK(german->peak_lr == Approx(2e-3));
  CHECK(peak_lr_for(512) == Approx(1e-3));  // four times the width, half the rate
  CHECK(peak_lr_for(256) == Approx(2e-3 / std::sqrt(2.0)));
  // Chinese: 2010 characters each get a token before any merge.
  const auto chinese =
      text_recipe({.pairs = 21945, .words = 122935, .distinct_words = 40000, .characters = 2010});
  REQUIRE(chinese);
  CHECK(chinese->vocab_size == 5100);  // 2270 + round(8 sqrt(122935)) = 2270 + 2805 = 5075
}

TEST_CASE("a language model's recipe counts the text and sizes its vocabulary to it",
          "[training][recipe]") {
  const TextFacts facts = text_facts("Grüße, Köln!\n%\n12 x");
  CHECK(facts.characters == 19);
  CHECK(facts.distinct_characters == 17);
  CHECK(facts.words == 4);  // Grüße, Köln, 12 and x; punctuation and "%" are no words
  // 4 specials, 256 bytes, 112 characters and 2 sqrt(400,000) = 1,265 merges, in hundreds.
  const TextRecipe recipe =
      lm_recipe({.characters = 2'300'000, .distinct_characters = 112, .words = 400'000});
  CHECK(recipe.vocab_size == 1700);
  CHECK(recipe.model.decoder_only());
  CHECK(recipe.model.norm_first);
  CHECK(recipe.label_smoothing == 0.0f);
  CHECK(recipe.batch * recipe.steps == 16 * 1200);
}

TEST_CASE("timing steps for a budget leaves the run as it would have been, bit for bit",
          "[training][budget]") {
  Rng rng_a(3), rng_b(3);
  Transformer timed(testing::tiny_config(), rng_a), untimed(testing::tiny_config(), rng_b);
  timed.train();
  untimed.train();
  data::BatchSource batches_a = copy_batches(), batches_b = copy_batches();
  const StepTiming timing = time_steps(
      testing::tiny_config(), batches_a,
      [](const Transformer& m) {
        return Trainer(nn::Optimizer(m.named_parameters(), nn::AdamConfig{}), constant(1e-3f));
      },
      [](Transformer& m, const data::Batch& b) { return teacher_forced_loss(m, b, 0.1f); }, 2, 3);
  CHECK(timing.timed == 3);
  CHECK(timing.seconds_per_step > 0.0);
  // Same batches, same dropout masks, untouched weights: the same losses.
  CHECK(losses_of_steps(timed, batches_a, 4) == losses_of_steps(untimed, batches_b, 4));
}

TEST_CASE("a budget in minutes becomes the steps that fit it", "[training][budget]") {
  CHECK(steps_for_minutes(10, {.seconds_per_step = 0.5, .timed = 10}, 2) == 1200);
  CHECK(steps_for_minutes(1, {.seconds_per_step = 0.7, .timed = 10}, 2) == 85);  // 60 / 0.7
  CHECK(steps_for_minutes(0.001, {.seconds_per_step = 0.5, .timed = 10}, 2) == 2);
}

TEST_CASE("the average of weights is their mean, and the best weights are the best step's",
          "[training][averaging]") {
  Rng rng(1);
  const TransformerConfig config = testing::tiny_config();
  Transformer a(config, rng), b(config, rng), c(config, rng), mean(config, rng);
  WeightAverage average;
  for (const Transformer* model : {&a, &b, &c}) average.add(*model);
  CHECK(average.count() == 3);
  load_weights(mean, average.mean());
  const auto pa = a.named_parameters(), pb = b.named_parameters(), pc = c.named_parameters(),
             pm = mean.named_parameters();
  for (size_t i = 0; i < pm.size(); ++i)
    for (int64_t j = 0; j < pm[i].second.numel(); ++j)
      REQUIRE(pm[i].second.data()[j] ==
              Approx((pa[i].second.data()[j] + pb[i].second.data()[j] + pc[i].second.data()[j]) / 3)
                  .margin(1e-6));

  BestWeights best;
  CHECK(best.empty());
  best.offer(100, 12.5, a);
  best.offer(200, 11.0, b);  // worse: not kept
  best.offer(300, 12.5, c);  // a tie: the later step is kept
  CHECK(best.step() == 300);
  CHECK(best.score() == 12.5);
  load_weights(mean, best.weights());
  CHECK(mean.named_parameters()[0].second.data()[0] == pc[0].second.data()[0]);

  TransformerConfig other = config;
  other.d_model = 8;
  other.heads = 1;
  Transformer wider(other, rng);
  CHECK_THROWS_WITH(load_weights(wider, average.mean()),
                    Catch::Contains("checkpoint: weights kept in memory: tensor") &&
                        Catch::Contains("but the model expects"));
}
