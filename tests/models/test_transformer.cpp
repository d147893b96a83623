// The Transformer: parameter names as the checkpoint contract spells them, shapes, masks,
// the causal property, decoding, and a short training run on the copy task.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <set>
#include <vector>

#include "autograd/errors.h"
#include "autograd/gradcheck.h"
#include "autograd/graph.h"
#include "autograd/ops.h"
#include "models/decode.h"
#include "models/transformer.h"
#include "nn/attention.h"
#include "nn/checkpoint.h"
#include "nn/optim.h"
#include "nn/safetensors.h"
#include "tests/support/temp_dir.h"

using namespace gf;
using Catch::Matchers::Contains;

namespace {

TransformerConfig tiny(bool tied = true, bool norm_first = false) {
  return {.vocab_size = 11,
          .d_model = 16,
          .d_ff = 32,
          .heads = 2,
          .encoder_layers = 2,
          .decoder_layers = 2,
          .max_len = 32,
          .dropout = 0.0f,
          .norm_first = norm_first,
          .tied = tied};
}

std::set<std::string> names_of(const nn::Module& m) {
  std::set<std::string> names;
  for (const auto& [name, t] : m.named_parameters()) names.insert(name);
  return names;
}

}  // namespace

TEST_CASE("parameter names follow the checkpoint contract", "[models][transformer]") {
  Rng rng(1);
  Transformer tied(tiny(true, false), rng);
  const auto names = names_of(tied);
  for (const char* name :
       {"embed.weight", "encoder.layers.0.self_attn.q.weight", "encoder.layers.1.self_attn.o.bias",
        "encoder.layers.0.norm1.weight", "encoder.layers.0.ffn.linear1.weight",
        "encoder.layers.0.ffn.linear2.bias", "encoder.layers.1.norm2.bias",
        "decoder.layers.0.self_attn.k.weight", "decoder.layers.1.cross_attn.v.bias",
        "decoder.layers.0.norm1.weight", "decoder.layers.0.norm2.weight",
        "decoder.layers.1.norm3.bias", "decoder.layers.1.ffn.linear1.bias"}) {
    INFO(name);
    CHECK(names.count(name) == 1);
  }
  CHECK(names.count("generator.weight") == 0);
  CHECK(names.count("encoder.norm.weight") == 0);
  // 2 encoder layers of 4 (q, k, v, o) x 2 + 4 (ffn) + 4 (norms), 2 decoder layers of
  // 8 x 2 + 4 + 6, and the embedding: 2 * 16 + 2 * 26 + 1.
  CHECK(names.size() == 2 * 16 + 2 * 26 + 1);

  Transformer untied(tiny(false, true), rng);
  const auto u = names_of(untied);
  for (const char* name : {"src_embed.weight", "tgt_embed.weight", "generator.weight",
                           "encoder.norm.weight", "decoder.norm.bias"}) {
    INFO(name);
    CHECK(u.count(name) == 1);
  }
  CHECK(u.count("embed.weight") == 0);
}

TEST_CASE("the parameter count follows the architecture", "[models][transformer]") {
  Rng rng(2);
  const TransformerConfig c = tiny();
  Transformer model(c, rng);
  const int64_t d = c.d_model, f = c.d_ff;
  const int64_t attention = 4 * (d * d + d), ffn = d * f + f + f * d + d, norm = 2 * d;
  const int64_t expected = c.vocab_size * d + c.encoder_layers * (attention + ffn + 2 * norm) +
                           c.decoder_layers * (2 * attention + ffn + 3 * norm);
  CHECK(model.parameter_count() == expected);
}

TEST_CASE("config round-trips through checkpoint metadata and is validated",
          "[models][transformer]") {
  TransformerConfig c = tiny(false, true);
  c.norm_eps = 1e-6f;
  const TransformerConfig back = TransformerConfig::from_metadata(c.to_metadata(), "m.safetensors");
  CHECK(back.vocab_size == c.vocab_size);
  CHECK(back.norm_eps == c.norm_eps);
  CHECK(back.norm_first);
  CHECK_FALSE(back.tied);
  auto bad = c.to_metadata();
  bad["heads"] = "3";
  REQUIRE_THROWS_WITH(TransformerConfig::from_metadata(bad, "m.safetensors"),
                      Contains("m.safetensors: transformer config: heads (3) must be positive and "
                               "divide d_model (16)"));
  bad = c.to_metadata();
  bad.erase("d_ff");
  REQUIRE_THROWS_WITH(TransformerConfig::from_metadata(bad, "m.safetensors"),
                      Contains("metadata \"d_ff\" is missing"));
  bad = c.to_metadata();
  bad["tied"] = "yes";
  REQUIRE_THROWS_WITH(TransformerConfig::from_metadata(bad, "m.safetensors"),
                      Contains("\"tied\" is \"yes\", not true or false"));
  bad = c.to_metadata();
  bad["norm_eps"] = "inf";
  REQUIRE_THROWS_WITH(TransformerConfig::from_metadata(bad, "m.safetensors"),
                      Contains("norm_eps must be positive and finite"));
  bad = c.to_metadata();
  bad["bos_id"] = "0";
  REQUIRE_THROWS_WITH(TransformerConfig::from_metadata(bad, "m.safetensors"),
                      Contains("pad (0), bos (0) and eos (2) must be different ids"));
  bad = c.to_metadata();
  bad["max_len"] = "20000000";
  REQUIRE_THROWS_WITH(TransformerConfig::from_metadata(bad, "m.safetensors"),
                      Contains("max_len must be in [1, 65536], got 20000000"));
  TransformerConfig small_vocab = tiny();
  small_vocab.vocab_size = 2;
  REQUIRE_THROWS_WITH(small_vocab.validate(), Contains("vocab_size 2 must exceed the special ids"));
}

TEST_CASE("teacher forcing gives logits for every target position", "[models][transformer]") {
  Rng rng(3);
  Transformer model(tiny(), rng);
  const IndexTensor src = IndexTensor::from({2, 4}, {5, 6, 7, 2, 8, 9, 2, 0});
  const IndexTensor tgt = IndexTensor::from({2, 3}, {1, 5, 6, 1, 8, 0});
  const Tensor logits = model.forward(src, tgt);
  CHECK(logits.shape() == Shape{2, 3, 11});
}

TEST_CASE("a position's output does not depend on later target tokens", "[models][transformer]") {
  // The look-ahead mask (§3.2.3) is what lets training see the whole target at once while
  // decoding sees only the prefix: the two must agree.
  Rng rng(4);
  Transformer model(tiny(), rng);
  const IndexTensor src = IndexTensor::from({1, 4}, {5, 6, 7, 2});
  const Tensor a = model.forward(src, IndexTensor::from({1, 4}, {1, 5, 6, 7}));
  const Tensor b = model.forward(src, IndexTensor::from({1, 4}, {1, 5, 9, 3}));
  for (int64_t j = 0; j < 11; ++j) {
    CHECK(a.at({0, 0, j}) == b.at({0, 0, j}));
    CHECK(a.at({0, 1, j}) == b.at({0, 1, j}));
  }
  CHECK(a.at({0, 2, 0}) != b.at({0, 2, 0}));
}

TEST_CASE("padding in the source changes nothing for the real tokens", "[models][transformer]") {
  Rng rng(5);
  Transformer model(tiny(), rng);
  const IndexTensor tgt = IndexTensor::from({1, 3}, {1, 5, 6});
  const Tensor short_src = model.forward(IndexTensor::from({1, 3}, {5, 6, 2}), tgt);
  const Tensor padded_src = model.forward(IndexTensor::from({1, 5}, {5, 6, 2, 0, 0}), tgt);
  for (int64_t i = 0; i < short_src.numel(); ++i)
    CHECK(short_src.data()[i] == Approx(padded_src.data()[i]).margin(1e-5));
}

TEST_CASE("attention probabilities are recorded per layer and kind", "[models][transformer]") {
  Rng rng(6);
  Transformer model(tiny(), rng);
  model.record_attention(true);
  model.forward(IndexTensor::from({1, 5}, {5, 6, 7, 8, 2}), IndexTensor::from({1, 3}, {1, 5, 6}));
  const auto cross = model.attention(AttentionKind::Cross);
  REQUIRE(cross.size() == 2);
  CHECK(cross[1].shape() == Shape{1, 2, 3, 5});
  CHECK(model.attention(AttentionKind::EncoderSelf)[0].shape() == Shape{1, 2, 5, 5});
  const Tensor self = model.attention(AttentionKind::DecoderSelf)[0];
  CHECK(self.at({0, 1, 0, 1}) == 0.0f);  // the first query cannot see the second key
}

namespace {

// Trains a tiny model to copy: src = content + eos, tgt = bos + content + eos.
void train_copy(Transformer& model, int steps, Rng& rng) {
  nn::Adam adam(model.parameters(), {.lr = 3e-3f});
  const int64_t batch = 32, len = 5;
  for (int step = 0; step < steps; ++step) {
    std::vector<int32_t> src, tgt_in, tgt_out;
    for (int64_t b = 0; b < batch; ++b) {
      std::vector<int32_t> content;
      for (int64_t i = 0; i < len; ++i) content.push_back(static_cast<int32_t>(3 + rng.below(8)));
      src.insert(src.end(), content.begin(), content.end());
      src.push_back(2);
      tgt_in.push_back(1);
      tgt_in.insert(tgt_in.end(), content.begin(), content.end());
      tgt_out.insert(tgt_out.end(), content.begin(), content.end());
      tgt_out.push_back(2);
    }
    const Tensor logits = model.forward(IndexTensor::from({batch, len + 1}, src),
                                        IndexTensor::from({batch, len + 1}, tgt_in));
    const Tensor loss =
        cross_entropy(logits, IndexTensor::from({batch, len + 1}, tgt_out), {.ignore_index = 0});
    adam.zero_grad();
    loss.backward();
    adam.step();
  }
}

}  // namespace

TEST_CASE("a trained model copies, greedy with and without the cache agree, beam 1 is greedy",
          "[models][decode]") {
  Rng rng(7);
  Transformer model(tiny(), rng);
  train_copy(model, 600, rng);
  const IndexTensor src =
      IndexTensor::from({3, 6}, {4, 9, 3, 7, 5, 2, 10, 10, 6, 8, 3, 2, 5, 4, 3, 9, 7, 2});
  const auto cached = greedy_decode(model, src);
  const auto uncached = greedy_decode(model, src, {.use_cache = false});
  CHECK(cached == uncached);
  CHECK(cached[0] == TokenIds{4, 9, 3, 7, 5});
  CHECK(cached[1] == TokenIds{10, 10, 6, 8, 3});
  CHECK(beam_search(model, src, {.beam = 1, .length_penalty = 0.0f}) == cached);
  CHECK(beam_search(model, src, {.beam = 4}) == cached);
  CHECK(model.training());  // decoding restored the mode
}

TEST_CASE("decoding refuses bad sources", "[models][decode]") {
  Rng rng(8);
  Transformer model(tiny(), rng);
  REQUIRE_THROWS_WITH(greedy_decode(model, IndexTensor::from({1, 2}, {5, 11})),
                      Contains("greedy_decode: token id 11 is out of range [0, 11)"));
  REQUIRE_THROWS_WITH(beam_search(model, IndexTensor::from({1, 1}, {5}), {.beam = 0}),
                      Contains("beam must be at least 1"));
  REQUIRE_THROWS_WITH(greedy_decode(model, IndexTensor::zeros({1, 40})),
                      Contains("source length 40 exceeds the model's max_len 32"));
}

TEST_CASE("a saved and reloaded model gives bit-identical outputs", "[models][checkpoint]") {
  Rng rng(9);
  Transformer model(tiny(false, true), rng);
  const IndexTensor src = IndexTensor::from({2, 4}, {5, 6, 7, 2, 8, 9, 2, 0});
  const IndexTensor tgt = IndexTensor::from({2, 3}, {1, 5, 6, 1, 8, 0});
  const Tensor before = model.forward(src, tgt);
  const gf::testing::TempDir dir("models");
  nn::save_checkpoint(dir.file("m.safetensors"), model, model.config.to_metadata());

  // Rebuilt from the file alone: the configuration from its metadata, then the weights.
  const nn::SafetensorsFile file = nn::load_safetensors(dir.file("m.safetensors"));
  Rng other(123);  // different initial values, all overwritten by the load
  Transformer loaded(TransformerConfig::from_metadata(file.metadata, "m.safetensors"), other);
  nn::load_checkpoint(dir.file("m.safetensors"), loaded);
  const Tensor after = loaded.forward(src, tgt);
  REQUIRE(after.shape() == before.shape());
  CHECK(after.to_vector() == before.to_vector());  // exact, not approximate
  CHECK(greedy_decode(loaded, src) == greedy_decode(model, src));
}

TEST_CASE("a checkpoint whose metadata does not fit its tensors is refused before building",
          "[models][checkpoint]") {
  Rng rng(10);
  Transformer model(tiny(), rng);
  const gf::testing::TempDir dir("models");
  auto metadata = model.config.to_metadata();
  metadata["encoder_layers"] = "40";  // 16 tensors each
  nn::save_checkpoint(dir.file("m.safetensors"), model, metadata);
  REQUIRE_THROWS_WITH(
      TransformerConfig::from_checkpoint(nn::load_safetensors(dir.file("m.safetensors")),
                                         "m.safetensors"),
      Contains("m.safetensors: holds 85 tensors, but its metadata describes a model of 693 (40 + "
               "2 layers, tied)"));
  metadata["encoder_layers"] = "100000";  // would be gigabytes of parameters
  nn::save_checkpoint(dir.file("m.safetensors"), model, metadata);
  const nn::SafetensorsFile file = nn::load_safetensors(dir.file("m.safetensors"));
  REQUIRE_THROWS_WITH(TransformerConfig::from_checkpoint(file, "m.safetensors"),
                      Contains("m.safetensors: holds 85 tensors, but its metadata describes a "
                               "model of more than 85 (100000 + 2 layers, tied)"));
  metadata = model.config.to_metadata();
  metadata["d_model"] = "8";
  metadata["heads"] = "2";
  nn::save_checkpoint(dir.file("m.safetensors"), model, metadata);
  REQUIRE_THROWS_WITH(
      TransformerConfig::from_checkpoint(nn::load_safetensors(dir.file("m.safetensors")), "m"),
      Contains("tensor \"embed.weight\" has shape [11, 16], but the metadata says vocab_size 11 "
               "and d_model 8"));
}

TEST_CASE("beam search returns a finished hypothesis, scored as the paper says",
          "[models][decode]") {
  // Barely trained, so that eos competes with other tokens and beams finish at different steps.
  Rng rng(11);
  Transformer model(tiny(), rng);
  train_copy(model, 40, rng);
  const float alpha = 0.6f;
  int64_t checked = 0;
  for (int64_t s = 0; s < 30; ++s) {
    std::vector<int32_t> row;
    for (int i = 0; i < 5; ++i) row.push_back(static_cast<int32_t>(3 + rng.below(8)));
    row.push_back(2);
    const IndexTensor src = IndexTensor::from({1, 6}, row);
    const BeamResult r =
        beam_search_scored(model, src, {.beam = 4, .length_penalty = alpha, .max_len = 12})[0];
    if (!r.finished) {
      CHECK(r.tokens.size() == 12);  // only max_len may leave the winner unfinished
      continue;
    }
    // Recompute with one teacher-forced pass: log P(tokens, eos | src) / ((5 + |y|) / 6)^alpha.
    std::vector<int32_t> tgt{1};
    tgt.insert(tgt.end(), r.tokens.begin(), r.tokens.end());
    NoGrad no_grad;
    model.eval();
    const Tensor logp = log_softmax(
        model.forward(src, IndexTensor::from({1, static_cast<int64_t>(tgt.size())}, tgt)));
    model.train();
    double log_prob = 0.0;
    for (size_t t = 0; t < tgt.size(); ++t) {
      const int32_t next = t + 1 < tgt.size() ? tgt[t + 1] : 2;  // the tokens, then eos
      log_prob += logp.at({0, static_cast<int64_t>(t), next});
    }
    const double length = static_cast<double>(r.tokens.size() + 1);
    CHECK(r.log_prob == Approx(log_prob).epsilon(1e-4));
    CHECK(r.score == Approx(log_prob / std::pow((5.0 + length) / 6.0, alpha)).epsilon(1e-4));
    ++checked;
  }
  CHECK(checked > 10);
}

TEST_CASE("searching past the first beam finished hypotheses never ends with a worse one",
          "[models][decode]") {
  // Early stopping keeps whatever has finished once `beam` hypotheses have; the default goes on
  // while something alive scores better, and keeps the best `beam` finished, so its winner
  // scores at least as well. On a barely trained model the two differ on some sources.
  Rng rng(11);
  Transformer model(tiny(), rng);
  train_copy(model, 40, rng);
  int64_t better = 0;
  for (int64_t s = 0; s < 40; ++s) {
    std::vector<int32_t> row;
    for (int i = 0; i < 5; ++i) row.push_back(static_cast<int32_t>(3 + rng.below(8)));
    row.push_back(2);
    const IndexTensor src = IndexTensor::from({1, 6}, row);
    const BeamOptions quick{.beam = 2, .length_penalty = 0.6f, .max_len = 12, .early_stop = true};
    BeamOptions patient = quick;
    patient.early_stop = false;
    const BeamResult a = beam_search_scored(model, src, quick)[0];
    const BeamResult b = beam_search_scored(model, src, patient)[0];
    CHECK(b.score >= a.score);
    better += b.score > a.score;
  }
  CHECK(better > 0);  // the test would not notice a rule that changed nothing
}

// ---- Learned positions (Table 3, row (E)) ---------------------------------------------------

namespace {

TransformerConfig tiny_learned(bool tied = true, bool norm_first = false) {
  TransformerConfig c = tiny(tied, norm_first);
  c.learned_positions = true;
  return c;
}

// The decoder's logits [B, T, V] for tgt_in, computed one position at a time with the key/value
// cache, as decoding computes them.
Tensor cached_logits(Transformer& model, const IndexTensor& src, const IndexTensor& tgt_in) {
  const int64_t batch = tgt_in.shape()[0], length = tgt_in.shape()[1];
  const Tensor src_mask = nn::padding_mask(src, model.config.pad_id);
  const Tensor memory = model.encode(src, src_mask);
  std::vector<DecoderLayerCache> cache;
  std::vector<Tensor> steps;
  for (int64_t t = 0; t < length; ++t) {
    std::vector<int32_t> column;
    for (int64_t b = 0; b < batch; ++b) column.push_back(tgt_in.at({b, t}));
    steps.push_back(model.generate(
        model.decode(IndexTensor::from({batch, 1}, column), memory, src_mask, {}, &cache, t)));
  }
  return concat(steps, 1);
}

}  // namespace

TEST_CASE("learned positions add one parameter, pos_embed.weight of max_len x d_model",
          "[models][transformer][positions]") {
  Rng rng(21);
  const Transformer sinusoidal(tiny(), rng);
  CHECK(sinusoidal.pos_embed == nullptr);
  for (const bool tied : {true, false}) {
    INFO("tied " << tied);
    const Transformer learned(tiny_learned(tied, !tied), rng);
    const Transformer plain(tiny(tied, !tied), rng);
    REQUIRE(learned.pos_embed != nullptr);
    std::set<std::string> expected = names_of(plain);
    expected.insert("pos_embed.weight");
    CHECK(names_of(learned) == expected);
    const nn::NamedTensors named = learned.named_parameters();
    const auto it = std::find_if(named.begin(), named.end(),
                                 [](const auto& p) { return p.first == "pos_embed.weight"; });
    REQUIRE(it != named.end());
    CHECK(it->second.shape() == Shape{32, 16});
    CHECK(learned.parameter_count() == plain.parameter_count() + 32 * 16);
    // Initialised as every nn::Embedding: xavier uniform, within sqrt(6 / (max_len + D)).
    const float bound = std::sqrt(6.0f / (32 + 16));
    const std::vector<float> w = it->second.to_vector();
    const auto [lowest, highest] = std::minmax_element(w.begin(), w.end());
    CHECK(*highest <= bound);
    CHECK(*lowest >= -bound);
    CHECK(*highest > bound / 2);
  }
}

TEST_CASE("the learned table's gradient reaches exactly the positions used",
          "[models][transformer][positions]") {
  Rng rng(22);
  Transformer model(tiny_learned(), rng);
  // The source has 5 positions and the decoder input 3: rows 0 to 4 are used, by the encoder
  // at least, and rows 5 to 31 by nothing.
  const IndexTensor src = IndexTensor::from({2, 5}, {5, 6, 7, 8, 2, 9, 10, 2, 0, 0});
  const IndexTensor tgt_in = IndexTensor::from({2, 3}, {1, 5, 6, 1, 9, 10});
  const IndexTensor tgt_out = IndexTensor::from({2, 3}, {5, 6, 7, 9, 10, 2});
  const Tensor loss = cross_entropy(model.forward(src, tgt_in), tgt_out, {.ignore_index = 0});
  loss.backward();
  const Tensor grad = model.pos_embed->weight.grad();
  REQUIRE(grad.shape() == Shape{32, 16});
  auto row_norm = [&](int64_t row) {
    double sum = 0.0;
    for (int64_t j = 0; j < 16; ++j) sum += std::abs(grad.at({row, j}));
    return sum;
  };
  for (int64_t row = 0; row < 5; ++row) {
    INFO("row " << row);
    CHECK(row_norm(row) > 1e-6);
  }
  for (int64_t row = 5; row < 32; ++row) {
    INFO("row " << row);
    CHECK(row_norm(row) == 0.0);
  }
}

TEST_CASE("the loss passes gradcheck with respect to the learned positions",
          "[models][transformer][positions][gradcheck]") {
  TransformerConfig c = tiny_learned();
  c.max_len = 6;  // every element of the table is nudged twice: keep it small
  Rng rng(23);
  Transformer model(c, rng);
  const IndexTensor src = IndexTensor::from({2, 5}, {5, 6, 7, 8, 2, 9, 10, 2, 0, 0});
  const IndexTensor tgt_in = IndexTensor::from({2, 3}, {1, 5, 6, 1, 9, 10});
  const IndexTensor tgt_out = IndexTensor::from({2, 3}, {5, 6, 7, 9, 10, 2});
  const auto f = [&](const Tensors& v) {
    model.pos_embed->weight = v[0];
    return cross_entropy(model.forward(src, tgt_in), tgt_out, {.ignore_index = 0});
  };
  // A small step: the default (1e-2) straddles the kinks of the FFN's ReLUs and disagrees by
  // 1e-3. At 3e-4 the largest difference is 2.6e-4 on gradients up to 3e-2, float32 rounding.
  const GradcheckResult result =
      gradcheck(f, {model.pos_embed->weight.detach()}, {.step = 3e-4, .atol = 5e-4});
  INFO(result.report);
  CHECK(result.checked == 6 * 16);
  CHECK(result.ok);
}

TEST_CASE("learned positions past max_len are refused, naming max_len",
          "[models][transformer][positions]") {
  Rng rng(24);
  Transformer model(tiny_learned(), rng);
  REQUIRE_THROWS_AS(model.forward(IndexTensor::from({1, 40}, std::vector<int32_t>(40, 5)),
                                  IndexTensor::from({1, 2}, {5, 5})),
                    IndexError);
  REQUIRE_THROWS_WITH(
      model.forward(IndexTensor::from({1, 40}, std::vector<int32_t>(40, 5)),
                    IndexTensor::from({1, 2}, {5, 5})),
      Contains("learned positions: positions 0 to 39 exceed max_len 32 (raise max_len)"));
  // A decoding step past the table, as a cache would ask for at offset 32.
  const IndexTensor src = IndexTensor::from({1, 3}, {5, 6, 2});
  const Tensor src_mask = nn::padding_mask(src, 0);
  const Tensor memory = model.encode(src, src_mask);
  std::vector<DecoderLayerCache> cache;
  REQUIRE_THROWS_WITH(
      model.decode(IndexTensor::from({1, 1}, {5}), memory, src_mask, {}, &cache, 32),
      Contains("positions 32 to 32 exceed max_len 32"));
}

TEST_CASE("decoding with the cache gives the uncached logits, sinusoidal and learned positions",
          "[models][decode][positions]") {
  for (const bool learned : {false, true}) {
    INFO((learned ? "learned" : "sinusoidal") << " positions");
    Rng rng(25);
    Transformer model(learned ? tiny_learned() : tiny(), rng);
    model.eval();
    NoGrad no_grad;
    const IndexTensor src = IndexTensor::from({2, 6}, {5, 6, 7, 8, 9, 2, 10, 4, 3, 2, 0, 0});
    const IndexTensor tgt_in = IndexTensor::from({2, 5}, {1, 5, 6, 7, 8, 1, 10, 4, 3, 2});
    const Tensor whole = model.forward(src, tgt_in);
    const Tensor stepped = cached_logits(model, src, tgt_in);
    REQUIRE(stepped.shape() == whole.shape());
    const std::vector<float> a = whole.to_vector(), b = stepped.to_vector();
    for (size_t i = 0; i < a.size(); ++i) {
      INFO("logit " << i);
      CHECK(b[i] == Approx(a[i]).margin(1e-5));
    }
    // And so greedy decoding, which runs the cache, agrees with the uncached search.
    CHECK(greedy_decode(model, src, {.max_len = 12}) ==
          greedy_decode(model, src, {.max_len = 12, .use_cache = false}));
  }
}

TEST_CASE("a learned-position model saved and reloaded keeps its table and its logits",
          "[models][checkpoint][positions]") {
  Rng rng(26);
  Transformer model(tiny_learned(false, true), rng);
  const IndexTensor src = IndexTensor::from({2, 4}, {5, 6, 7, 2, 8, 9, 2, 0});
  const IndexTensor tgt = IndexTensor::from({2, 3}, {1, 5, 6, 1, 8, 0});
  const Tensor before = model.forward(src, tgt);
  const gf::testing::TempDir dir("models");
  const auto metadata = model.config.to_metadata();
  CHECK(metadata.at("positions") == "learned");
  nn::save_checkpoint(dir.file("m.safetensors"), model, metadata);

  const nn::SafetensorsFile file = nn::load_safetensors(dir.file("m.safetensors"));
  const TransformerConfig config = TransformerConfig::from_checkpoint(file, "m.safetensors");
  CHECK(config.learned_positions);
  Rng other(123);
  Transformer loaded(config, other);
  nn::load_checkpoint(dir.file("m.safetensors"), loaded);
  REQUIRE(loaded.pos_embed != nullptr);
  CHECK(loaded.pos_embed->weight.to_vector() == model.pos_embed->weight.to_vector());
  const Tensor after = loaded.forward(src, tgt);
  REQUIRE(after.shape() == before.shape());
  CHECK(after.to_vector() == before.to_vector());  // exact
  CHECK(greedy_decode(loaded, src) == greedy_decode(model, src));
}

TEST_CASE("the positions metadata: absent for sinusoids, and refused when unknown",
          "[models][checkpoint][positions]") {
  const auto sinusoidal = tiny().to_metadata();
  CHECK(sinusoidal.count("positions") == 0);  // the files of before the option, unchanged
  CHECK_FALSE(TransformerConfig::from_metadata(sinusoidal, "m.safetensors").learned_positions);
  auto m = sinusoidal;
  m["positions"] = "sinusoidal";
  CHECK_FALSE(TransformerConfig::from_metadata(m, "m.safetensors").learned_positions);
  m["positions"] = "learned";
  CHECK(TransformerConfig::from_metadata(m, "m.safetensors").learned_positions);
  m["positions"] = "banana";
  REQUIRE_THROWS_AS(TransformerConfig::from_metadata(m, "m.safetensors"), FormatError);
  REQUIRE_THROWS_WITH(
      TransformerConfig::from_metadata(m, "m.safetensors"),
      Contains("m.safetensors: metadata \"positions\" is \"banana\", not sinusoidal or learned"));
}

TEST_CASE("a checkpoint whose positions metadata does not fit its tensors is refused",
          "[models][checkpoint][positions]") {
  Rng rng(27);
  const gf::testing::TempDir dir("models");
  const std::string path = dir.file("m.safetensors");
  auto from_file = [&] {
    return TransformerConfig::from_checkpoint(nn::load_safetensors(path), "m.safetensors");
  };
  // "learned" on the tensors of a sinusoidal model: the table is missing.
  Transformer sinusoidal(tiny(), rng);
  auto metadata = sinusoidal.config.to_metadata();
  metadata["positions"] = "learned";
  nn::save_checkpoint(path, sinusoidal, metadata);
  REQUIRE_THROWS_WITH(from_file(), Contains("m.safetensors: metadata \"positions\" is "
                                            "\"learned\", but the file holds no tensor "
                                            "\"pos_embed.weight\""));
  // A learned model's tensors without the key: the table is one too many.
  Transformer learned(tiny_learned(), rng);
  nn::save_checkpoint(path, learned, sinusoidal.config.to_metadata());
  REQUIRE_THROWS_WITH(from_file(), Contains("holds the learned position table "
                                            "\"pos_embed.weight\", but its metadata lacks "
                                            "\"positions\": \"learned\""));
  // A table of another length than max_len.
  metadata = learned.config.to_metadata();
  metadata["max_len"] = "64";
  nn::save_checkpoint(path, learned, metadata);
  REQUIRE_THROWS_WITH(from_file(), Contains("tensor \"pos_embed.weight\" has shape [32, 16], but "
                                            "the metadata says max_len 64 and d_model 16"));
  // The count of tensors includes the table (85 for this model with sinusoids).
  metadata = learned.config.to_metadata();
  metadata["encoder_layers"] = "40";
  nn::save_checkpoint(path, learned, metadata);
  REQUIRE_THROWS_WITH(from_file(), Contains("holds 86 tensors, but its metadata describes a model "
                                            "of 694 (40 + 2 layers, tied, learned positions)"));
  nn::save_checkpoint(path, learned, learned.config.to_metadata());
  CHECK(from_file().learned_positions);
}

// ---- The decoder alone (encoder_layers = 0) ---------------------------------------------

namespace {

TransformerConfig decoder_only(bool tied = true, bool norm_first = true) {
  TransformerConfig c = tiny(tied, norm_first);
  c.encoder_layers = 0;
  return c;
}

}  // namespace

TEST_CASE("a decoder-only model has the decoder's names, less cross-attention",
          "[models][transformer][decoder-only]") {
  Rng rng(21);
  const Transformer tied(decoder_only(true, true), rng);
  const auto names = names_of(tied);
  for (const char* name : {"embed.weight", "decoder.layers.0.self_attn.q.weight",
                           "decoder.layers.1.norm1.bias", "decoder.layers.0.ffn.linear2.weight",
                           "decoder.layers.1.norm3.weight", "decoder.norm.weight"}) {
    INFO(name);
    CHECK(names.count(name) == 1);
  }
  for (const std::string& name : names) {
    INFO(name);
    CHECK(name.find("encoder") == std::string::npos);
    CHECK(name.find("cross_attn") == std::string::npos);
    CHECK(name.find("norm2") == std::string::npos);
  }
  const Transformer untied(decoder_only(false, false), rng);
  const auto untied_names = names_of(untied);
  CHECK(untied_names.count("tgt_embed.weight") == 1);
  CHECK(untied_names.count("generator.weight") == 1);
  CHECK(untied_names.count("src_embed.weight") == 0);
  CHECK(untied_names.count("decoder.norm.weight") == 0);  // post-norm: no final norm
  // Per layer: self-attention, the feed-forward network and two norms.
  const int64_t d = 16, f = 32;
  const int64_t attention = 4 * (d * d + d), ffn = d * f + f + f * d + d, norm = 2 * d;
  CHECK(tied.parameter_count() == 11 * d + 2 * (attention + ffn + 2 * norm) + norm);
}

TEST_CASE("a decoder-only model predicts each next token from the tokens before it alone",
          "[models][transformer][decoder-only]") {
  Rng rng(22);
  Transformer model(decoder_only(), rng);
  const Tensor a = model.forward(IndexTensor::from({1, 4}, {1, 5, 6, 7}));
  const Tensor b = model.forward(IndexTensor::from({1, 4}, {1, 5, 9, 3}));
  CHECK(a.shape() == Shape{1, 4, 11});
  for (int64_t j = 0; j < 11; ++j) {
    CHECK(a.at({0, 0, j}) == b.at({0, 0, j}));
    CHECK(a.at({0, 1, j}) == b.at({0, 1, j}));
  }
  CHECK(a.at({0, 2, 0}) != b.at({0, 2, 0}));
  // The pair form with an empty source is the same pass.
  const Tensor pair_form =
      model.forward(IndexTensor::from({1, 0}, {}), IndexTensor::from({1, 4}, {1, 5, 6, 7}));
  CHECK(pair_form.to_vector() == a.to_vector());
  // Padding on the right changes nothing before it.
  const Tensor padded = model.forward(IndexTensor::from({1, 6}, {1, 5, 6, 7, 0, 0}));
  for (int64_t t = 0; t < 4; ++t)
    for (int64_t j = 0; j < 11; ++j) CHECK(padded.at({0, t, j}) == Approx(a.at({0, t, j})));
}

TEST_CASE("a decoder-only model refuses a source and an encoder-decoder refuses to go without",
          "[models][transformer][decoder-only]") {
  Rng rng(23);
  Transformer model(decoder_only(), rng);
  CHECK_THROWS_WITH(
      model.forward(IndexTensor::from({1, 2}, {5, 2}), IndexTensor::from({1, 2}, {1, 5})),
      Contains("a decoder-only model reads no source"));
  CHECK_THROWS_AS(model.encode(IndexTensor::from({1, 2}, {5, 2}), Tensor{}), std::logic_error);
  Transformer encoder_decoder(tiny(), rng);
  CHECK_THROWS_AS(encoder_decoder.forward(IndexTensor::from({1, 2}, {1, 5})), std::logic_error);
  CHECK(model.attention_modules().size() == 2);  // one self-attention per layer
}

TEST_CASE("a decoder-only checkpoint says its kind, and reloads to the same logits",
          "[models][checkpoint][decoder-only]") {
  Rng rng(24);
  Transformer model(decoder_only(false, true), rng);
  const auto metadata = model.config.to_metadata();
  CHECK(metadata.at("kind") == "decoder-only");
  CHECK(metadata.at("encoder_layers") == "0");
  CHECK(tiny().to_metadata().count("kind") == 0);  // an encoder-decoder's file is unchanged
  const gf::testing::TempDir dir("models");
  nn::save_checkpoint(dir.file("lm.safetensors"), model, metadata);
  const nn::SafetensorsFile file = nn::load_safetensors(dir.file("lm.safetensors"));
  Rng other(99);
  Transformer loaded(TransformerConfig::from_checkpoint(file, "lm.safetensors"), other);
  nn::load_checkpoint(dir.file("lm.safetensors"), loaded);
  const IndexTensor tokens = IndexTensor::from({1, 3}, {1, 7, 8});
  CHECK(loaded.forward(tokens).to_vector() == model.forward(tokens).to_vector());

  auto bad = metadata;
  bad["kind"] = "encoder-decoder";
  CHECK_THROWS_WITH(
      TransformerConfig::from_metadata(bad, "lm.safetensors"),
      Contains("metadata \"kind\" is \"encoder-decoder\", but \"encoder_layers\" is 0"));
  bad["kind"] = "gpt";
  CHECK_THROWS_WITH(TransformerConfig::from_metadata(bad, "lm.safetensors"),
                    Contains("\"kind\" is \"gpt\", not encoder-decoder or decoder-only"));
  bad = metadata;
  bad["encoder_layers"] = "-1";
  bad.erase("kind");
  CHECK_THROWS_WITH(TransformerConfig::from_metadata(bad, "lm.safetensors"),
                    Contains("encoder_layers must be 0 (decoder-only) or more, got -1"));
}
