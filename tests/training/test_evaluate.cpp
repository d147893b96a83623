// Evaluation: exact match by greedy decoding, whatever the targets end with; the alignment
// score, which must leave the model as it found it; decoding a corpus in batches; and the
// teacher-forced log-likelihood.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "autograd/errors.h"
#include "autograd/graph.h"
#include "data/batch.h"
#include "data/tokenizer.h"
#include "models/decode.h"
#include "training/evaluate.h"

using namespace gf;
using namespace gf::training;

namespace {

TransformerConfig tiny(int64_t vocab_size = 11) {
  return {.vocab_size = vocab_size,
          .d_model = 16,
          .d_ff = 32,
          .heads = 2,
          .encoder_layers = 1,
          .decoder_layers = 2,
          .max_len = 32,
          .dropout = 0.1f};
}

data::Pair pair_to(const std::vector<int32_t>& src, std::vector<int32_t> tgt) {
  return {.src = src, .tgt = std::move(tgt)};
}

}  // namespace

// A pairs file may hold targets without eos (data/pairs_file.h): then every token after bos
// is content, and the model was never taught where to stop.
TEST_CASE("exact_match counts the tokens a target holds with or without eos",
          "[training][evaluation]") {
  Rng rng(3);
  Transformer model(tiny(), rng);  // untrained: whatever it decodes is the answer to match
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
  Transformer model(tiny(tokenizer.size()), rng);
  const data::SentencePairsFile file{
      .name = "dev.tsv", .pairs = {{"a b c", "x y z", "0-0 1-1 2-2"}}, .lines = {1}, .skipped = {}};
  nn::MultiHeadAttention& last = model.decoder.layers.back()->cross_attn;

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
    CHECK(model.decoder.layers.front()->cross_attn.record_attention);
  }
  SECTION("the same when a line is refused") {
    const data::SentencePairsFile bad{
        .name = "dev.tsv", .pairs = {{"a b c", "x y z", "0-0 oops"}}, .lines = {7}, .skipped = {}};
    CHECK_THROWS_AS(score_alignment(model, tokenizer, bad), FormatError);
    CHECK(model.training());
    CHECK_FALSE(last.record_attention);
  }
}

TEST_CASE("decode_corpus returns outputs in input order, however it batches them",
          "[training][evaluation]") {
  Rng rng(5);
  Transformer model(tiny(), rng);
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

TEST_CASE("log_likelihood sums the teacher-forced log-probabilities of the target",
          "[training][evaluation]") {
  Rng rng(6);
  Transformer model(tiny(), rng);
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
