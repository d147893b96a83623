// Evaluation: exact match by greedy decoding, whatever the targets end with; the alignment
// score, which must leave the model as it found it, of the heads' mean or of one head; the
// translations' ids beside their text; decoding a corpus in batches; and the teacher-forced
// log-likelihood.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "autograd/errors.h"
#include "autograd/graph.h"
#include "data/batch.h"
#include "data/parallel_corpus.h"
#include "data/tokenizer.h"
#include "data/toy_language.h"
#include "data/word_alignment.h"
#include "models/decode.h"
#include "tests/support/tiny_model.h"
#include "training/evaluate.h"

using namespace gf;
using namespace gf::training;
using gf::testing::tiny_config;

namespace {

data::Pair pair_to(const std::vector<int32_t>& src, std::vector<int32_t> tgt) {
  return {.src = src, .tgt = std::move(tgt)};
}

}  // namespace

// A pairs file may hold targets without eos (data/pairs_file.h): then every token after bos
// is content, and the model was never taught where to stop.
TEST_CASE("exact_match counts the tokens a target holds with or without eos",
          "[training][evaluation]") {
  Rng rng(3);
  Transformer model(tiny_config(), rng);  // untrained: whatever it decodes is the answer to match
  const std::vector<int32_t> src{5, 6, 7, 2};
  const TokenIds out = greedy_decode(model, IndexTensor::from({1, 4}, src))[0];
  REQUIRE(out.size() >= 3);
  const int32_t bos = model.config.bos_id, eos = model.config.eos_id;
  const int32_t wrong = out[1] == 10 ? 9 : 10;

  // With eos, the decoding must stop exactly where the target does.
  std::vector<int32_t> whole{bos};
  whole.insert(whole.end(), out.begin(), out.end());
  whole.push_back(eos);
  CHECK(exact_match(model, std::vector{pair_to(src, whole)}) == 1.0);
  CHECK(exact_match(model, std::vector{pair_to(src, {bos, out[0], out[1], eos})}) == 0.0);
  // Without eos, the target's tokens must come out first, whatever follows them.
  CHECK(exact_match(model, std::vector{pair_to(src, {bos, out[0], out[1]})}) == 1.0);
  CHECK(exact_match(model, std::vector{pair_to(src, {bos, out[0], wrong})}) == 0.0);
  CHECK(exact_match(model, std::vector{pair_to(src, {bos, out[0]})}) == 1.0);
  CHECK(exact_match(model, std::vector{pair_to(src, whole), pair_to(src, {bos, out[0], wrong}),
                                       pair_to(src, {bos, out[0], out[1], out[2]})}) ==
        Approx(2.0 / 3.0));
}

TEST_CASE("score_alignment restores the model mode and attention recording and grad mode",
          "[training][evaluation]") {
  // Words with the space before them, as a word vocabulary keeps them (data/tokenizer.h).
  const std::vector<std::string> words{"a", " b", " c", "x", " y", " z"};
  const data::WordTokenizer tokenizer(words);
  Rng rng(4);
  Transformer model(tiny_config(tokenizer.size()), rng);
  const data::SentencePairsFile file{
      .name = "dev.tsv", .pairs = {{"a b c", "x y z", "0-0 1-1 2-2"}}, .lines = {1}, .skipped = {}};
  nn::MultiHeadAttention& last = *model.decoder.layers.back()->cross_attn;

  model.train();
  REQUIRE(grad_enabled());
  CHECK(score_alignment(model, tokenizer, file).total == 3);
  CHECK(model.training());
  CHECK(grad_enabled());
  CHECK_FALSE(last.record_attention);

  SECTION("recording that was on stays on") {
    model.record_attention(true);
    score_alignment(model, tokenizer, file);
    CHECK(last.record_attention);
    CHECK(model.decoder.layers.front()->cross_attn->record_attention);
  }
  SECTION("the same when a line is refused") {
    const data::SentencePairsFile bad{
        .name = "dev.tsv", .pairs = {{"a b c", "x y z", "0-0 oops"}}, .lines = {7}, .skipped = {}};
    CHECK_THROWS_AS(score_alignment(model, tokenizer, bad), FormatError);
    CHECK(model.training());
    CHECK_FALSE(last.record_attention);
  }
}

TEST_CASE("score_alignment scores the heads' mean or one head of the layer",
          "[training][evaluation]") {
  // Every sentence starts with a word the vocabulary has without its space.
  const std::vector<std::string> words{"a", " b", " c", " d", "x", " y", " z", " w"};
  const data::WordTokenizer tokenizer(words);
  Rng rng(2);
  Transformer model(tiny_config(tokenizer.size()), rng);
  const data::SentencePairsFile file{.name = "dev.tsv",
                                     .pairs = {{"a b c d", "x y z w", "0-3 1-2 2-1 3-0"},
                                               {"a c b d", "x z y w", "0-0 1-1 2-2 3-3"},
                                               {"a d b", "x w y", "0-0 1-2 2-1"}},
                                     .lines = {1, 2, 3},
                                     .skipped = {}};
  // By hand: the last layer's cross-attention [1, H, T, S] on the teacher-forced reference,
  // then the map of one head, or the heads' mean, scored against the gold words.
  const int64_t heads = model.config.heads;
  std::vector<data::AlignmentScore> by_head(static_cast<size_t>(heads));
  data::AlignmentScore by_mean;
  nn::MultiHeadAttention& cross = *model.decoder.layers.back()->cross_attn;
  model.eval();
  cross.record_attention = true;
  for (const data::SentencePair& p : file.pairs) {
    const data::Pair pair = data::encode_pair(tokenizer, p.source, p.target);
    const std::vector<int32_t> tgt_in(pair.tgt.begin(), pair.tgt.end() - 1);
    model.forward(IndexTensor::from({1, std::ssize(pair.src)}, pair.src),
                  IndexTensor::from({1, std::ssize(tgt_in)}, tgt_in));
    const Tensor probs = cross.last_attention;
    const int64_t cells = probs.dim(2) * probs.dim(3);
    std::vector<int32_t> target_words = data::word_of_tokens(
        tokenizer, std::span<const int32_t>(pair.tgt).subspan(1, pair.tgt.size() - 2));
    target_words.push_back(-1);
    const std::vector<int32_t> source_words = data::word_of_tokens(tokenizer, pair.src);
    const auto gold = data::parse_alignment(p.extra);
    std::vector<float> mean(static_cast<size_t>(cells), 0.0f);
    for (int64_t h = 0; h < heads; ++h) {
      const std::vector<float> one(probs.data() + h * cells, probs.data() + (h + 1) * cells);
      data::add_alignment_score(one, target_words, source_words, gold,
                                by_head[static_cast<size_t>(h)]);
      for (int64_t k = 0; k < cells; ++k)
        mean[static_cast<size_t>(k)] += one[static_cast<size_t>(k)] / static_cast<float>(heads);
    }
    data::add_alignment_score(mean, target_words, source_words, gold, by_mean);
  }
  cross.record_attention = false;
  // With this seed the two heads score differently, so a mix-up would show.
  REQUIRE(by_head[0].correct != by_head[1].correct);

  const data::AlignmentScore mean_score = score_alignment(model, tokenizer, file);
  CHECK(mean_score.total == 11);
  CHECK(mean_score.correct == by_mean.correct);
  for (int64_t h = 0; h < heads; ++h) {
    const data::AlignmentScore one = score_alignment(model, tokenizer, file, -1, h);
    CHECK(one.total == 11);
    CHECK(one.correct == by_head[static_cast<size_t>(h)].correct);
  }
  CHECK_THROWS_WITH(score_alignment(model, tokenizer, file, -1, heads),
                    "attention head 3 does not exist: the layers have heads 1 to 2");
  CHECK_THROWS_AS(score_alignment(model, tokenizer, file, -1, -2), std::invalid_argument);
  CHECK_THROWS_WITH(score_alignment(model, tokenizer, file, 2),
                    "alignment layer 3 does not exist: the decoder has layers 1 to 2");
}

TEST_CASE("score_translations keeps the ids it decoded beside their text",
          "[training][evaluation]") {
  const std::vector<std::string> words{"a", " b", " c", "x", " y", " z"};
  const data::WordTokenizer tokenizer(words);
  Rng rng(8);
  Transformer model(tiny_config(tokenizer.size()), rng);
  const std::vector<data::SentencePair> pairs = {{"a b c", "x y z", ""}, {"a", "x", ""}};
  for (const DecodeSettings& settings :
       {DecodeSettings{}, DecodeSettings{.beam = 3, .batch = 1, .by_length = false}}) {
    const TranslationScores scores = score_translations(model, tokenizer, pairs, settings);
    std::vector<std::vector<int32_t>> sources;
    for (const data::SentencePair& p : pairs)
      sources.push_back(data::encode_pair(tokenizer, p.source, p.target).src);
    CHECK(scores.outputs == decode_corpus(model, sources, settings));
    REQUIRE(scores.hypotheses.size() == pairs.size());
    for (size_t i = 0; i < pairs.size(); ++i)
      CHECK(scores.hypotheses[i] == tokenizer.decode(scores.outputs[i]));
  }
}

TEST_CASE("decode_corpus returns outputs in input order, however it batches them",
          "[training][evaluation]") {
  Rng rng(5);
  Transformer model(tiny_config(), rng);
  const std::vector<std::vector<int32_t>> sources = {
      {5, 6, 7, 8, 9, 2}, {4, 2}, {9, 8, 7, 2}, {6, 6, 2}, {10, 4, 5, 6, 7, 8, 9, 2}};
  // Alone, one at a time: the reference each batching must reproduce row by row.
  std::vector<TokenIds> alone;
  for (const auto& s : sources)
    alone.push_back(greedy_decode(model, IndexTensor::from({1, std::ssize(s)}, s))[0]);
  CHECK(decode_corpus(model, sources, {.batch = 1, .by_length = true}) == alone);
  CHECK(decode_corpus(model, sources, {.batch = 1, .by_length = false}) == alone);

  // In input order, in batches of 2: the same as greedy_decode on each padded batch.
  const auto in_order = decode_corpus(model, sources, {.batch = 2, .by_length = false});
  REQUIRE(in_order.size() == sources.size());
  for (size_t first = 0; first < sources.size(); first += 2) {
    const std::vector<std::vector<int32_t>> chunk(
        sources.begin() + static_cast<std::ptrdiff_t>(first),
        sources.begin() + static_cast<std::ptrdiff_t>(std::min(first + 2, sources.size())));
    const auto direct = greedy_decode(model, data::pad_sequences(chunk));
    for (size_t k = 0; k < direct.size(); ++k) CHECK(in_order[first + k] == direct[k]);
  }

  // Without stopping at eos, every output has exactly max_len tokens.
  for (const TokenIds& out :
       decode_corpus(model, sources, {.max_len = 7, .stop_at_eos = false, .by_length = false}))
    CHECK(out.size() == 7);
  // Beam search through the same door.
  const auto beam = decode_corpus(model, sources, {.beam = 3, .batch = 1});
  for (size_t i = 0; i < sources.size(); ++i)
    CHECK(beam[i] == beam_search(model, IndexTensor::from({1, std::ssize(sources[i])}, sources[i]),
                                 {.beam = 3})[0]);
}

TEST_CASE("decode_source reads one source as the commands do and decodes it alone",
          "[training][evaluation]") {
  Rng rng(5);
  Transformer ids_model(tiny_config(), rng);
  for (const DecodeSettings& settings : {DecodeSettings{}, DecodeSettings{.beam = 3}}) {
    const DecodedSource d = decode_source(ids_model, nullptr, " 5 6 7 8 2 ", settings);
    CHECK(d.src == std::vector<int32_t>{5, 6, 7, 8, 2});
    const TokenIds alone = decode_corpus(ids_model, std::vector<std::vector<int32_t>>{d.src},
                                         {.beam = settings.beam, .batch = 1})[0];
    std::vector<int32_t> tgt = {ids_model.config.bos_id};
    tgt.insert(tgt.end(), alone.begin(), alone.end());
    tgt.push_back(ids_model.config.eos_id);
    CHECK(d.tgt == tgt);
    std::string ids;
    for (int32_t id : alone) ids += (ids.empty() ? "" : " ") + std::to_string(id);
    CHECK(d.output == ids);
  }
  using Catch::Matchers::Contains;
  CHECK_THROWS_WITH(decode_source(ids_model, nullptr, "5 six 2"), Contains("source:1"));
  CHECK_THROWS_WITH(decode_source(ids_model, nullptr, "5 99 2"),
                    Contains("99") && Contains("out of range"));
  CHECK_THROWS_WITH(decode_source(ids_model, nullptr, "  "), Contains("the source is empty"));
  std::string too_long;  // 40 tokens, over tiny_config's max_len of 32
  for (int i = 0; i < 40; ++i) too_long += "5 ";
  CHECK_THROWS_WITH(decode_source(ids_model, nullptr, too_long),
                    Contains("40 tokens, more than the model's max_len 32"));

  const std::vector<std::string> words{"a", " b", " c", "x", " y", " z"};
  const data::WordTokenizer tokenizer(words);
  Transformer text_model(tiny_config(tokenizer.size()), rng);
  const DecodedSource d = decode_source(text_model, &tokenizer, "a b c");
  CHECK(d.src == data::encode_pair(tokenizer, "a b c", "").src);
  const std::vector<std::string> sources = {"a b c"};
  CHECK(d.output == translate_texts(text_model, tokenizer, sources)[0]);
}

TEST_CASE("log_likelihood sums the teacher-forced log-probabilities of the target",
          "[training][evaluation]") {
  Rng rng(6);
  Transformer model(tiny_config(), rng);
  const std::vector<int32_t> src = {5, 6, 7, 2}, tgt = {1, 5, 6, 7, 2};
  // By hand: log_softmax of the logits at each position, at the next target token.
  model.eval();
  const Tensor logits =
      model.forward(IndexTensor::from({1, 4}, src), IndexTensor::from({1, 4}, {1, 5, 6, 7}));
  double expected = 0.0;
  for (int64_t t = 0; t < 4; ++t) {
    const float* row = logits.data() + t * 11;
    double z = 0.0;
    for (int64_t v = 0; v < 11; ++v) z += std::exp(static_cast<double>(row[v]));
    expected += static_cast<double>(row[tgt[static_cast<size_t>(t + 1)]]) - std::log(z);
  }
  model.train();
  CHECK(log_likelihood(model, src, tgt) == Approx(expected).epsilon(1e-5));
  CHECK(model.training());
  CHECK(log_likelihood(model, src, tgt) < 0.0);
}

TEST_CASE("perplexity is exp of the mean negative log-likelihood per target token",
          "[training][evaluation]") {
  Rng rng(7);
  Transformer model(tiny_config(), rng);
  const std::vector<data::Pair> pairs = {{.src = {5, 6, 7, 2}, .tgt = {1, 5, 6, 7, 2}},
                                         {.src = {8, 2}, .tgt = {1, 9, 2}},
                                         {.src = {4, 4, 9, 5, 2}, .tgt = {1, 4, 2}}};
  double nats = 0.0;
  int64_t tokens = 0;
  for (const data::Pair& p : pairs) {
    nats -= log_likelihood(model, p.src, p.tgt);
    tokens += std::ssize(p.tgt) - 1;  // every token after bos, eos included
  }
  const double expected = std::exp(nats / static_cast<double>(tokens));
  model.train();
  CHECK(perplexity(model, pairs) == Approx(expected).epsilon(1e-5));
  CHECK(perplexity(model, pairs, 1) == Approx(expected).epsilon(1e-5));  // padding changes nothing
  CHECK(model.training());
  // An untrained model guesses about uniformly over its 11 tokens.
  CHECK(expected > 5.0);
  CHECK(expected < 25.0);
  CHECK_THROWS_WITH(perplexity(model, std::span<const data::Pair>()), "perplexity: no pairs");
}

TEST_CASE("prediction_entropy is the mean entropy of the next-token distributions",
          "[training][evaluation]") {
  Rng rng(8);
  Transformer model(tiny_config(), rng);
  const std::vector<data::Pair> pairs = {{.src = {5, 6, 7, 2}, .tgt = {1, 5, 6, 7, 2}},
                                         {.src = {8, 2}, .tgt = {1, 9, 2}}};
  // By hand, one pair at a time (no padding): -sum p log p of the softmax at every position.
  model.eval();
  double nats = 0.0;
  int64_t positions = 0;
  for (const data::Pair& p : pairs) {
    const auto t_len = std::ssize(p.tgt) - 1;
    const std::vector<int32_t> tgt_in(p.tgt.begin(), p.tgt.end() - 1);
    const Tensor logits = model.forward(IndexTensor::from({1, std::ssize(p.src)}, p.src),
                                        IndexTensor::from({1, t_len}, tgt_in));
    for (int64_t t = 0; t < t_len; ++t, ++positions) {
      const float* row = logits.data() + t * 11;
      double z = 0.0, weighted = 0.0;
      for (int64_t v = 0; v < 11; ++v) z += std::exp(static_cast<double>(row[v]));
      for (int64_t v = 0; v < 11; ++v) {
        const double log_p = static_cast<double>(row[v]) - std::log(z);
        weighted += std::exp(log_p) * log_p;
      }
      nats -= weighted;
    }
  }
  const double expected = nats / static_cast<double>(positions);
  model.train();
  CHECK(prediction_entropy(model, pairs) == Approx(expected).epsilon(1e-5));  // padded together
  CHECK(prediction_entropy(model, pairs, 1) == Approx(expected).epsilon(1e-5));
  CHECK(model.training());
  // Between certainty (0) and a uniform guess over the 11 tokens (log 11).
  CHECK(expected > 0.0);
  CHECK(expected < std::log(11.0));
  CHECK_THROWS_WITH(prediction_entropy(model, std::span<const data::Pair>()),
                    "prediction_entropy: no pairs");
}
