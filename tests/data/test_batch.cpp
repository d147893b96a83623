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

TEST_CASE("make_batch honours another pad id", "[data][batch]") {
  const Batch b = make_batch(two_pairs, /*pad=*/9);
  CHECK(values(b.src) == ids{5, 6, 7, 2, 8, 2, 9, 9});
  CHECK(values(b.tgt_out) == ids{5, 6, 7, 2, 8, 2, 9, 9});
  CHECK(b.target_tokens == 6);
}

TEST_CASE("a batch of generated copy pairs has the expected shapes", "[data][batch]") {
  Rng rng(1);
  const auto pairs = generate(Task::Copy, 64, TaskConfig{}, rng);
  const Batch b = make_batch(pairs);
  CHECK(b.src.shape() == Shape{64, 11});
  CHECK(b.tgt_in.shape() == Shape{64, 11});
  CHECK(b.tgt_out.shape() == Shape{64, 11});
  CHECK(b.target_tokens == 64 * 11);
  CHECK(b.src.at({0, 0}) == 10);
  CHECK(b.tgt_in.at({0, 0}) == kBos);
  CHECK(b.tgt_out.at({0, 10}) == kEos);
  CHECK(std::count(b.src.data(), b.src.data() + b.src.numel(), kPad) == 0);  // equal lengths
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
