#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "autograd/errors.h"
#include "autograd/ops.h"
#include "autograd/random.h"
#include "data/batch.h"
#include "data/tasks.h"

using namespace gf;
using namespace gf::data;
using Catch::Matchers::Contains;
using ids = std::vector<int32_t>;

static ids values(const IndexTensor& t) {
  return ids(t.data(), t.data() + t.numel());
}

// Two pairs of different lengths: S = 4, T = 5 - 1 = 4.
static const std::vector<Pair> two_pairs = {
    {.src = {5, 6, 7, 2}, .tgt = {1, 5, 6, 7, 2}},
    {.src = {8, 2}, .tgt = {1, 8, 2}},
};

TEST_CASE("make_batch pads and shifts a hand-built batch", "[data][batch]") {
  const Batch b = make_batch(two_pairs);
  REQUIRE(b.src.shape() == Shape{2, 4});
  REQUIRE(b.tgt_in.shape() == Shape{2, 4});
  REQUIRE(b.tgt_out.shape() == Shape{2, 4});
  CHECK(values(b.src) == ids{5, 6, 7, 2,  //
                             8, 2, 0, 0});
  CHECK(values(b.tgt_in) == ids{1, 5, 6, 7,  // tgt[:-1]
                                1, 8, 0, 0});
  CHECK(values(b.tgt_out) == ids{5, 6, 7, 2,  // tgt[1:]
                                 8, 2, 0, 0});
  CHECK(b.target_tokens == 6);
}

TEST_CASE("make_batch builds the padding and look-ahead masks", "[data][batch]") {
  const Batch b = make_batch(two_pairs);
  REQUIRE(b.src_mask.shape() == Shape{2, 1, 1, 4});
  CHECK(b.src_mask.to_vector() == std::vector<float>{0, 0, 0, 0,  //
                                                     0, 0, 1, 1});
  REQUIRE(b.tgt_mask.shape() == Shape{2, 1, 4, 4});
  CHECK(b.tgt_mask.to_vector() ==
        std::vector<float>{0, 1, 1, 1,  // pair 0: the future only
                           0, 0, 1, 1,  //
                           0, 0, 0, 1,  //
                           0, 0, 0, 0,  //
                           0, 1, 1, 1,  // pair 1: the future, and keys 2, 3 (pad)
                           0, 0, 1, 1,  //
                           0, 0, 1, 1,  //
                           0, 0, 1, 1});
}

TEST_CASE("masks broadcast against scores of shape B, H, T, S in masked_fill + softmax",
          "[data][batch]") {
  const Batch b = make_batch(two_pairs);
  const float inf = std::numeric_limits<float>::infinity();
  // Equal scores: each query spreads its attention evenly over the keys it may see.
  const Tensor self = softmax(masked_fill(Tensor::zeros({2, 3, 4, 4}), b.tgt_mask, -inf));
  CHECK(self.at({0, 2, 0, 0}) == Approx(1.0f));
  CHECK(self.at({0, 1, 2, 1}) == Approx(1.0f / 3));
  CHECK(self.at({0, 1, 2, 3}) == 0.0f);
  CHECK(self.at({1, 0, 3, 1}) == Approx(0.5f));  // pair 1, query 3: keys 0 and 1 only
  CHECK(self.at({1, 0, 3, 2}) == 0.0f);
  const Tensor cross = softmax(masked_fill(Tensor::zeros({2, 3, 4, 4}), b.src_mask, -inf));
  CHECK(cross.at({1, 2, 0, 1}) == Approx(0.5f));
  CHECK(cross.at({1, 2, 3, 3}) == 0.0f);
  CHECK(cross.at({0, 2, 3, 3}) == Approx(0.25f));
}

TEST_CASE("look_ahead_mask and padding_mask on their own", "[data][batch]") {
  const Tensor m = look_ahead_mask(3);
  REQUIRE(m.shape() == Shape{1, 1, 3, 3});
  CHECK(m.to_vector() == std::vector<float>{0, 1, 1, 0, 0, 1, 0, 0, 0});
  CHECK(look_ahead_mask(1).to_vector() == std::vector<float>{0});
  REQUIRE_THROWS_WITH(look_ahead_mask(0),
                      Contains("look_ahead_mask: size is 0 but must be at least 1"));

  const IndexTensor x = IndexTensor::from({2, 3}, {4, 9, 9, 9, 5, 6});
  const Tensor p = padding_mask(x, /*pad=*/9);
  REQUIRE(p.shape() == Shape{2, 1, 1, 3});
  CHECK(p.to_vector() == std::vector<float>{0, 1, 1, 1, 0, 0});
  REQUIRE_THROWS_WITH(padding_mask(IndexTensor::zeros({6})),
                      Contains("padding_mask: expected ids of shape [B, S], got [6]"));
}

TEST_CASE("make_batch honours another pad id", "[data][batch]") {
  const Batch b = make_batch(two_pairs, /*pad=*/9);
  CHECK(values(b.src) == ids{5, 6, 7, 2, 8, 2, 9, 9});
  CHECK(values(b.tgt_out) == ids{5, 6, 7, 2, 8, 2, 9, 9});
  CHECK(b.src_mask.to_vector() == std::vector<float>{0, 0, 0, 0, 0, 0, 1, 1});
  CHECK(b.target_tokens == 6);
}

TEST_CASE("a batch of generated copy pairs has the expected shapes", "[data][batch]") {
  Rng rng(1);
  const auto pairs = generate(Task::Copy, 64, TaskConfig{}, rng);
  const Batch b = make_batch(pairs);
  CHECK(b.src.shape() == Shape{64, 11});
  CHECK(b.tgt_in.shape() == Shape{64, 11});
  CHECK(b.tgt_out.shape() == Shape{64, 11});
  CHECK(b.src_mask.shape() == Shape{64, 1, 1, 11});
  CHECK(b.tgt_mask.shape() == Shape{64, 1, 11, 11});
  CHECK(b.target_tokens == 64 * 11);
  CHECK(b.src.at({0, 0}) == 10);
  CHECK(b.tgt_in.at({0, 0}) == kBos);
  CHECK(b.tgt_out.at({0, 10}) == kEos);
  float blocked = 0;
  for (float v : b.src_mask.to_vector()) blocked += v;
  CHECK(blocked == 0);  // equal lengths: no padding
}

TEST_CASE("make_batch refuses bad pairs with clear messages", "[data][batch]") {
  REQUIRE_THROWS_WITH(make_batch(std::vector<Pair>{}),
                      Contains("make_batch: the batch is empty (0 pairs)"));
  const std::vector<Pair> no_source = {two_pairs[0], {.src = {}, .tgt = {1, 4, 2}}};
  REQUIRE_THROWS_WITH(make_batch(no_source), Contains("make_batch: pair 1 has an empty source"));
  const std::vector<Pair> short_target = {{.src = {4, 2}, .tgt = {1}}};
  REQUIRE_THROWS_WITH(make_batch(short_target),
                      Contains("make_batch: pair 0 has a target of 1 token but needs at least 2"));
  const std::vector<Pair> no_target = {{.src = {4, 2}, .tgt = {}}};
  REQUIRE_THROWS_WITH(make_batch(no_target), Contains("pair 0 has a target of 0 tokens"));
  const std::vector<Pair> padded = {two_pairs[0], {.src = {4, 0, 2}, .tgt = {1, 4, 2}}};
  REQUIRE_THROWS_WITH(
      make_batch(padded),
      Contains("make_batch: the source of pair 1 contains the pad id 0 at position 1"));
  const std::vector<Pair> padded_target = {{.src = {4, 2}, .tgt = {1, 4, 2, 0}}};
  REQUIRE_THROWS_WITH(make_batch(padded_target),
                      Contains("the target of pair 0 contains the pad id 0 at position 3"));
}

TEST_CASE("pad_sequences stacks sources for decoding", "[data][batch]") {
  const std::vector<ids> seqs = {{4, 2}, {5, 6, 7, 2}, {8}};
  const IndexTensor x = pad_sequences(seqs);
  REQUIRE(x.shape() == Shape{3, 4});
  CHECK(values(x) == ids{4, 2, 0, 0, 5, 6, 7, 2, 8, 0, 0, 0});
  REQUIRE_THROWS_WITH(pad_sequences(std::vector<ids>{}), Contains("pad_sequences: no sequences"));
  REQUIRE_THROWS_WITH(pad_sequences(std::vector<ids>{{4}, {}}),
                      Contains("pad_sequences: sequence 1 is empty"));
  REQUIRE_THROWS_WITH(pad_sequences(std::vector<ids>{{4, 0}}),
                      Contains("pad_sequences: sequence 0 contains the pad id 0 at position 1"));
}

TEST_CASE("batches_in_order slices pairs in order, the last one shorter", "[data][batch]") {
  Rng rng(2);
  const auto pairs = generate(Task::Copy, 5, TaskConfig{}, rng);
  const auto batches = batches_in_order(pairs, 2);
  REQUIRE(batches.size() == 3);
  CHECK(batches[0].size() == 2);
  CHECK(batches[1].size() == 2);
  CHECK(batches[2].size() == 1);
  CHECK(batches[0].data() == &pairs[0]);
  CHECK(batches[1].data() == &pairs[2]);
  CHECK(batches[2].data() == &pairs[4]);
  CHECK(batches_in_order(pairs, 5).size() == 1);  // --batch = number of lines: one step, all
  CHECK(batches_in_order(pairs, 9).at(0).size() == 5);
  CHECK(batches_in_order(std::span<const Pair>{}, 3).empty());
  REQUIRE_THROWS_WITH(batches_in_order(pairs, 0),
                      Contains("batches_in_order: batch size is 0 but must be at least 1"));
}
