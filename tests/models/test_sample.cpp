// Sampling from a decoder-only model: the reshaped distribution (temperature, top-k, top-p),
// the draw, and whole samples: seeded, cached like a full recomputation, sliding past max_len.
#include <catch2/catch.hpp>
#include <cmath>
#include <numeric>
#include <vector>

#include "autograd/errors.h"
#include "autograd/graph.h"
#include "autograd/ops.h"
#include "models/sample.h"
#include "models/transformer.h"
#include "tests/support/tiny_model.h"

using namespace gf;
using Catch::Matchers::Contains;

namespace {

TransformerConfig decoder_only(int64_t max_len = 32) {
  TransformerConfig c = testing::tiny_config(13);
  c.encoder_layers = 0;
  c.max_len = max_len;
  c.dropout = 0.0f;
  return c;
}

float sum_of(const std::vector<float>& p) {
  return std::accumulate(p.begin(), p.end(), 0.0f);
}

// The most probable next token after context, from a forward pass over the whole context.
int32_t argmax_next(Transformer& model, const std::vector<int32_t>& context) {
  NoGrad no_grad;
  const auto t = static_cast<int64_t>(context.size());
  const Tensor logits = model.forward(IndexTensor::from({1, t}, context));
  const float* last = logits.data() + (t - 1) * model.config.vocab_size;
  return static_cast<int32_t>(std::max_element(last, last + model.config.vocab_size) - last);
}

}  // namespace

TEST_CASE("temperature 1 gives the softmax, and lower temperatures sharpen it",
          "[models][sample]") {
  const std::vector<float> logits = {1.0f, 2.0f, 0.5f};
  const std::vector<float> p = sampling_distribution(logits, {});
  const double z = std::exp(1.0) + std::exp(2.0) + std::exp(0.5);
  CHECK(p[0] == Approx(std::exp(1.0) / z));
  CHECK(p[1] == Approx(std::exp(2.0) / z));
  CHECK(p[2] == Approx(std::exp(0.5) / z));
  // At T = 0.5 the logits double: p(1) / p(0) = e^2 instead of e.
  const std::vector<float> sharp = sampling_distribution(logits, {.temperature = 0.5f});
  CHECK(sharp[1] / sharp[0] == Approx(std::exp(2.0)));
  CHECK(sum_of(sharp) == Approx(1.0f));
  // At T = 2 they halve.
  const std::vector<float> flat = sampling_distribution(logits, {.temperature = 2.0f});
  CHECK(flat[1] / flat[0] == Approx(std::exp(0.5)));
}

TEST_CASE("top-k keeps the k most probable tokens, renormalised", "[models][sample]") {
  const std::vector<float> logits = {0.0f, 3.0f, 1.0f, 2.0f};
  const std::vector<float> p = sampling_distribution(logits, {.top_k = 2});
  CHECK(p[0] == 0.0f);
  CHECK(p[2] == 0.0f);
  CHECK(p[1] == Approx(std::exp(3.0) / (std::exp(3.0) + std::exp(2.0))));
  CHECK(p[3] == Approx(std::exp(2.0) / (std::exp(3.0) + std::exp(2.0))));
  // top_k 1 is the most probable token with certainty; a k above V keeps every token.
  CHECK(sampling_distribution(logits, {.top_k = 1}) == std::vector<float>{0, 1, 0, 0});
  CHECK(sampling_distribution(logits, {.top_k = 10}) == sampling_distribution(logits, {}));
  // On a tie at the cut the lower id stays.
  CHECK(sampling_distribution(std::vector<float>{1, 1, 1}, {.top_k = 1}) ==
        std::vector<float>{1, 0, 0});
}

TEST_CASE("top-p keeps the fewest most probable tokens that reach p", "[models][sample]") {
  // Probabilities 0.5, 0.3, 0.2 (as logits of their logs).
  const std::vector<float> logits = {std::log(0.2f), std::log(0.5f), std::log(0.3f)};
  // 0.5 reaches 0.5 alone.
  CHECK(sampling_distribution(logits, {.top_p = 0.5f}) == std::vector<float>{0, 1, 0});
  // 0.6 needs the second: 0.5 + 0.3, renormalised to 5/8 and 3/8.
  const std::vector<float> p = sampling_distribution(logits, {.top_p = 0.6f});
  CHECK(p[0] == 0.0f);
  CHECK(p[1] == Approx(0.625f));
  CHECK(p[2] == Approx(0.375f));
  CHECK(sampling_distribution(logits, {.top_p = 1.0f}) == sampling_distribution(logits, {}));
  // A tiny p still keeps the most probable token.
  CHECK(sampling_distribution(logits, {.top_p = 1e-6f}) == std::vector<float>{0, 1, 0});
  // After top-k 2 the nucleus is taken from what is left, renormalised.
  CHECK(sampling_distribution(logits, {.top_k = 2, .top_p = 0.6f}) == std::vector<float>{0, 1, 0});
}

TEST_CASE("draw_token picks each token as often as its probability", "[models][sample]") {
  const std::vector<float> p = {0.0f, 0.25f, 0.75f, 0.0f};
  Rng rng(7);
  std::vector<int> counts(4, 0);
  const int draws = 40000;
  for (int i = 0; i < draws; ++i) ++counts[static_cast<size_t>(draw_token(p, rng))];
  CHECK(counts[0] == 0);
  CHECK(counts[3] == 0);
  // Binomial standard deviation sqrt(n p (1 - p)) = 87 draws: 5 of them is 433.
  CHECK(std::abs(counts[1] - draws / 4) < 433);
}

TEST_CASE("sampling options out of range are refused by name", "[models][sample]") {
  CHECK_THROWS_WITH(SampleOptions{.temperature = 0.0f}.validate(), Contains("--temperature"));
  CHECK_THROWS_WITH(SampleOptions{.top_k = -1}.validate(), Contains("--top-k"));
  CHECK_THROWS_WITH(SampleOptions{.top_p = 0.0f}.validate(), Contains("--top-p"));
  CHECK_THROWS_WITH(SampleOptions{.top_p = 1.5f}.validate(), Contains("--top-p"));
  CHECK_THROWS_WITH(SampleOptions{.length = -1}.validate(), Contains("--length"));
}

TEST_CASE("a sample depends on the seed alone, and on nothing else", "[models][sample]") {
  Rng init(3);
  Transformer model(decoder_only(), init);
  const std::vector<int32_t> prompt = {5, 6, 7};
  Rng a(11), b(11), c(12);
  const auto first = sample(model, prompt, {.length = 20, .stop_at_eos = false}, a, 3);
  const auto again = sample(model, prompt, {.length = 20, .stop_at_eos = false}, b, 3);
  const auto other = sample(model, prompt, {.length = 20, .stop_at_eos = false}, c, 3);
  REQUIRE(first.size() == 3);
  CHECK(first[0].size() == 20);
  CHECK(first == again);
  CHECK(first != other);
  // The rows of one call are drawn in turn from one generator, so they differ from each other.
  CHECK(first[0] != first[1]);
  // Sampling leaves a training model in training mode.
  CHECK(model.training());
}

TEST_CASE("a cached sample at a low temperature is the greedy continuation of a full pass",
          "[models][sample]") {
  Rng init(5);
  Transformer model(decoder_only(), init);
  model.eval();
  const std::vector<int32_t> prompt = {4, 9};
  Rng rng(1);
  const TokenIds sampled =
      sample(model, prompt, {.length = 12, .top_k = 1, .stop_at_eos = false}, rng).front();
  // The same tokens, each the argmax of a forward pass over bos, the prompt and the tokens
  // before it: the key/value cache changes the work, not the result.
  std::vector<int32_t> context = {model.config.bos_id, 4, 9};
  for (const int32_t token : sampled) {
    CHECK(token == argmax_next(model, context));
    context.push_back(token);
  }
}

TEST_CASE("sampling past max_len slides the window and goes on", "[models][sample]") {
  Rng init(5);
  Transformer model(decoder_only(8), init);
  Rng rng(1);
  const TokenIds sampled =
      sample(model, std::vector<int32_t>{4}, {.length = 30, .top_k = 1, .stop_at_eos = false}, rng)
          .front();
  REQUIRE(sampled.size() == 30);
  // Greedy again: after the window slid, each token is the argmax given bos and the newest
  // tokens the rebuilt cache holds. Check the first token after the first slide: the context
  // had filled 8 positions (bos, 4, and 6 samples) and keeps bos and the newest 4.
  const std::vector<int32_t> all = [&] {
    std::vector<int32_t> tokens = {4};
    tokens.insert(tokens.end(), sampled.begin(), sampled.end());
    return tokens;
  }();
  const std::vector<int32_t> slid = {model.config.bos_id, all[3], all[4], all[5], all[6]};
  CHECK(sampled[6] == argmax_next(model, slid));
}

TEST_CASE("sample refuses what it cannot continue", "[models][sample]") {
  Rng init(1);
  Transformer encoder_decoder(testing::tiny_config(13), init);
  Rng rng(1);
  CHECK_THROWS_AS(sample(encoder_decoder, std::vector<int32_t>{4}, {}, rng), std::logic_error);
  Transformer model(decoder_only(4), init);
  CHECK_THROWS_WITH(sample(model, std::vector<int32_t>{4, 5, 6, 7}, {}, rng),
                    Contains("more than the model's max_len 4"));
  CHECK_THROWS_AS(sample(model, std::vector<int32_t>{13}, {}, rng), IndexError);
  CHECK_THROWS_WITH(sample(model, std::vector<int32_t>{4}, {}, rng, 0), Contains("count"));
}
