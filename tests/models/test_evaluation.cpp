// Evaluation: exact match by greedy decoding, whatever the targets end with, and the
// alignment score, which must leave the model as it found it.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "autograd/errors.h"
#include "autograd/graph.h"
#include "data/tokenizer.h"
#include "models/decode.h"
#include "models/evaluation.h"

using namespace gf;

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
          "[models][evaluation]") {
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
          "[models][evaluation]") {
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
