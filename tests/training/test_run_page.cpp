// What a run's page is made of: the attention maps of one pair (their shapes, rows that sum to
// one, the decoder's causal mask, the labels, and the model left as it was), the snapshot
// steps, the page history kept in the training state, the recorder, the curves and the samples.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "autograd/errors.h"
#include "data/tokenizer.h"
#include "models/decode.h"
#include "tests/support/tiny_model.h"
#include "training/run_page.h"

using namespace gf;
using namespace gf::training;
using gf::testing::tiny_config;

namespace {

float row_sum(const std::vector<float>& matrix, size_t row, size_t cols) {
  return std::accumulate(matrix.begin() + static_cast<std::ptrdiff_t>(row * cols),
                         matrix.begin() + static_cast<std::ptrdiff_t>((row + 1) * cols), 0.0f);
}

}  // namespace

TEST_CASE("attention_maps gives every kind, layer and head of one pair", "[training][run_page]") {
  Rng rng(1);
  Transformer model(tiny_config(), rng);
  const std::vector<int32_t> src{5, 6, 7, 2}, tgt{1, 5, 6, 7, 2};
  const viz::AttentionMaps maps =
      attention_maps(model, src, tgt, token_names(nullptr, model.config));

  CHECK(maps.source_tokens == std::vector<std::string>{"5", "6", "7", "</s>"});
  CHECK(maps.target_read == std::vector<std::string>{"<s>", "5", "6", "7"});
  CHECK(maps.target_next == std::vector<std::string>{"5", "6", "7", "</s>"});
  REQUIRE(maps.encoder.size() == 1);
  REQUIRE(maps.decoder.size() == 2);
  REQUIRE(maps.cross.size() == 2);
  for (const auto* kind : {&maps.encoder, &maps.decoder, &maps.cross})
    for (const auto& heads : *kind) {
      REQUIRE(heads.size() == 2);
      for (const std::vector<float>& m : heads) {
        REQUIRE(m.size() == 16);  // 4 x 4 in every kind for this pair
        for (size_t row = 0; row < 4; ++row) CHECK(row_sum(m, row, 4) == Approx(1.0f));
      }
    }
  // The look-ahead mask (§3.2.3): decoder position i sees positions 0..i only.
  for (const auto& heads : maps.decoder)
    for (const std::vector<float>& m : heads)
      for (size_t i = 0; i < 4; ++i)
        for (size_t j = i + 1; j < 4; ++j) CHECK(m[i * 4 + j] == 0.0f);
}

TEST_CASE("attention_maps leaves the model as it found it", "[training][run_page]") {
  Rng rng(2);
  Transformer model(tiny_config(), rng);
  model.train();
  const nn::RandomStates before = nn::random_states(model);
  const std::vector<int32_t> src{5, 6, 2}, tgt{1, 5, 6, 2};
  attention_maps(model, src, tgt, token_names(nullptr, model.config));
  CHECK(model.training());
  CHECK_FALSE(model.encoder.layers[0]->self_attn.record_attention);
  CHECK_FALSE(model.decoder.layers[1]->cross_attn->record_attention);
  CHECK(nn::random_states(model) == before);  // dropout was off: no mask drawn
  CHECK_THROWS_WITH(
      attention_maps(model, src, std::vector<int32_t>{1}, token_names(nullptr, model.config)),
      "attention maps: the target needs <s> and at least one more token, not 1");
}

TEST_CASE("token_names labels ids, or asks the tokenizer", "[training][run_page]") {
  const TransformerConfig config = tiny_config();
  const TokenNames ids = token_names(nullptr, config);
  CHECK(ids(0) == "<pad>");
  CHECK(ids(1) == "<s>");
  CHECK(ids(2) == "</s>");
  CHECK(ids(3) == "<unk>");
  CHECK(ids(9) == "9");
  const std::vector<std::string> texts{"Größe"};
  const data::CharTokenizer chars = data::CharTokenizer::learn(texts);
  const TokenNames text = token_names(&chars, config);
  CHECK(text(chars.encode("ö").front()) == "ö");
}

TEST_CASE("snapshot_steps spreads its steps from 0 to the last", "[training][run_page]") {
  CHECK(snapshot_steps(600, 5) == std::vector<int64_t>{0, 150, 300, 450, 600});
  CHECK(snapshot_steps(600, 25).size() == 25);
  CHECK(snapshot_steps(600, 25)[1] == 25);
  CHECK(snapshot_steps(3, 10) == std::vector<int64_t>{0, 1, 2, 3});  // no repeats
  CHECK(snapshot_steps(600, 1) == std::vector<int64_t>{0});
  CHECK(snapshot_steps(600, 0).empty());
}

TEST_CASE("a page history reads back from its JSON, weights in thousandths",
          "[training][run_page]") {
  PageHistory h;
  h.metric = "% exact, greedy, 4 fixed fresh sequences";
  h.metric_steps = {0, 10};
  h.metric_values = {0, 75};
  h.training_seconds = 1.5;
  h.checking_seconds = 0.25;
  h.target_tokens = 1000;
  h.sequences = 64;
  h.snapshots.push_back({.step = 10,
                         .maps = {.source_tokens = {"▁Größe", "</s>"},
                                  .target_read = {"<s>"},
                                  .target_next = {"注意力"},
                                  .encoder = {{{0.25f, 0.75f, 0.5f, 0.5f}}},
                                  .decoder = {{{1.0f}}},
                                  .cross = {{{0.1234f, 0.8766f}}}}});
  const PageHistory back = PageHistory::from_json(h.to_json(), "state");
  CHECK(back.metric == h.metric);
  CHECK(back.metric_values == h.metric_values);
  CHECK(back.training_seconds == 1.5);
  CHECK(back.target_tokens == 1000);
  REQUIRE(back.snapshots.size() == 1);
  const viz::AttentionMaps& m = back.snapshots[0].maps;
  CHECK(back.snapshots[0].step == 10);
  CHECK(m.source_tokens == h.snapshots[0].maps.source_tokens);
  CHECK(m.target_next == std::vector<std::string>{"注意力"});
  CHECK(m.encoder == h.snapshots[0].maps.encoder);
  CHECK(m.cross[0][0][0] == Approx(0.123f));  // 0.1234 kept as 123 thousandths
  CHECK(m.cross[0][0][1] == Approx(0.877f));

  CHECK_THROWS_AS(PageHistory::from_json("{\"metric\": 3}", "runs/a.train-state.safetensors"),
                  FormatError);
  CHECK_THROWS_WITH(PageHistory::from_json("not json", "runs/a.train-state.safetensors"),
                    Catch::StartsWith("runs/a.train-state.safetensors: metadata \"history.page\" "
                                      "is not a page history: "));
}

TEST_CASE("the page recorder records at its steps only, once each", "[training][run_page]") {
  Rng rng(4);
  Transformer model(tiny_config(), rng);
  int scored = 0;
  PageRecorder recorder({.src = {5, 6, 2}, .tgt = {1, 5, 6, 2}}, token_names(nullptr, model.config),
                        {"calls",
                         [&scored](Transformer&) {
                           return ++scored;
                         }},
                        100, 5);
  CHECK(recorder.at_step(model, 0));
  CHECK_FALSE(recorder.at_step(model, 1));
  CHECK(recorder.at_step(model, 25));
  CHECK_FALSE(recorder.at_step(model, 25));  // a resumed run reaching a recorded step
  const PageHistory& h = recorder.history();
  CHECK(h.metric == "calls");
  CHECK(h.metric_steps == std::vector<double>{0, 25});
  CHECK(h.metric_values == std::vector<double>{1, 2});
  REQUIRE(h.snapshots.size() == 2);
  CHECK(h.snapshots[1].step == 25);
  CHECK(h.snapshots[1].maps.target_next == std::vector<std::string>{"5", "6", "</s>"});
}

TEST_CASE("training_curves: the loss on a log axis, the rate, the metric", "[training][run_page]") {
  PageHistory h;
  const std::vector<float> losses{2.0f, 1.0f, 0.5f}, rates{1e-4f, 2e-4f, 3e-4f};
  CHECK(training_curves(losses, rates, h).size() == 2);
  h.metric = "BLEU, greedy, 100 dev pairs";
  h.metric_steps = {0, 3};
  h.metric_values = {0.0, 12.5};
  const std::vector<viz::Curve> curves = training_curves(losses, rates, h);
  REQUIRE(curves.size() == 3);
  CHECK(curves[0].log_y);
  REQUIRE(curves[0].series.size() == 2);
  CHECK(curves[0].series[0].faint);
  CHECK(curves[0].series[0].xs == std::vector<double>{1, 2, 3});
  CHECK(curves[0].series[0].ys == std::vector<double>{2.0, 1.0, 0.5});
  CHECK_FALSE(curves[0].series[1].faint);
  CHECK(curves[0].series[1].name == "moving average, ~10 steps");
  CHECK(curves[0].series[1].xs == std::vector<double>{1, 2, 3});
  CHECK(curves[0].series[1].ys[0] == 2.0);  // the first value, not pulled towards 0
  CHECK_FALSE(curves[1].log_y);
  CHECK(curves[1].series[0].ys[2] == Approx(3e-4));
  CHECK(curves[2].y_label == "BLEU");
  CHECK(curves[2].series[0].ys == std::vector<double>{0.0, 12.5});
}

TEST_CASE("moving_average: the first value as it is, then an average weighted to the recent",
          "[training][run_page]") {
  const std::vector<float> constant(50, 3.0f);
  for (const float v : moving_average(constant, 10)) CHECK(v == Approx(3.0f));
  // A step from 1 to 0 at value 20: with span 2 the weight on the past is 1/2, so each value
  // after the step halves what is left of the old level (up to the correction, which is
  // 1 - 2^-20 by then).
  std::vector<float> step(30, 0.0f);
  std::fill(step.begin(), step.begin() + 20, 1.0f);
  const std::vector<float> s = moving_average(step, 2);
  CHECK(s[0] == 1.0f);
  CHECK(s[19] == Approx(1.0f));
  CHECK(s[20] == Approx(0.5f).epsilon(1e-5));
  CHECK(s[21] == Approx(0.25f).epsilon(1e-5));
  CHECK(moving_average(std::vector<float>{}, 10).empty());
  CHECK(smoothing_span(100) == 10.0);
  CHECK(smoothing_span(10000) == 200.0);
}

TEST_CASE("timing_facts divides by the steps and the seconds", "[training][run_page]") {
  PageHistory h;
  CHECK(timing_facts(h, 10).empty());  // nothing timed
  h.training_seconds = 2.0;
  h.checking_seconds = 150.0;
  h.target_tokens = 5000;
  h.sequences = 640;
  const viz::Facts facts = timing_facts(h, 100);
  REQUIRE(facts.size() == 5);
  CHECK(facts[0] == std::pair<std::string, std::string>{"training", "2.0 s"});
  CHECK(facts[1].second == "20.0 ms");
  CHECK(facts[2].second == "2500");
  CHECK(facts[3].second == "320");
  CHECK(facts[4].second == "2 min 30 s");
}

TEST_CASE("sequence_samples scores each greedy decode 1 when exact", "[training][run_page]") {
  Rng rng(5);
  Transformer model(tiny_config(), rng);
  const TokenNames names = token_names(nullptr, model.config);
  // What the untrained model decodes is the answer to match, and one token more is not.
  const std::vector<int32_t> src{5, 6, 7, 2};
  const TokenIds out = greedy_decode(model, IndexTensor::from({1, 4}, src))[0];
  std::vector<int32_t> own{1};
  own.insert(own.end(), out.begin(), out.end());
  std::vector<int32_t> longer = own;
  longer.push_back(out.empty() || out.back() != 4 ? 4 : 5);
  own.push_back(2);
  longer.push_back(2);
  const std::vector<viz::Sample> samples = sequence_samples(
      model, std::vector<data::Pair>{{.src = src, .tgt = own}, {.src = src, .tgt = longer}}, names);
  REQUIRE(samples.size() == 2);
  CHECK(samples[0].source == "5 6 7 </s>");
  CHECK(samples[0].output == samples[0].reference);  // written without <s> and </s>
  CHECK(samples[0].score == 1.0);
  CHECK(samples[1].output == samples[0].output);
  CHECK(samples[1].reference != samples[1].output);
  CHECK(samples[1].score == 0.0);
}
