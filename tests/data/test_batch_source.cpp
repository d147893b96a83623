// BatchSource: each kind gives the batches of the loop it stands for, and a source put back
// at a saved position gives the same next batches.
#include <catch2/catch.hpp>
#include <stdexcept>
#include <vector>

#include "data/batch_source.h"
#include "data/parallel_corpus.h"

using namespace gf;
using namespace gf::data;

namespace {

std::vector<int32_t> ids_of(const IndexTensor& t) {
  return {t.data(), t.data() + t.numel()};
}

bool same_batch(const Batch& a, const Batch& b) {
  return a.src.shape() == b.src.shape() && ids_of(a.src) == ids_of(b.src) &&
         ids_of(a.tgt_in) == ids_of(b.tgt_in) && ids_of(a.tgt_out) == ids_of(b.tgt_out) &&
         a.target_tokens == b.target_tokens;
}

std::vector<Pair> pairs_of_lengths(int count, Rng& rng) {
  return generate(Task::Copy, count, {.vocab_size = 11, .min_len = 1, .max_len = 12}, rng);
}

}  // namespace

TEST_CASE("a generated source draws its batches as generate() does", "[data][batch_source]") {
  const TaskConfig config = {.vocab_size = 11, .min_len = 3, .max_len = 6};
  BatchSource source = BatchSource::generated(Task::Reverse, config, 5, Rng(7));
  Rng by_hand(7);
  for (int step = 0; step < 4; ++step)
    CHECK(same_batch(source.next(), make_batch(generate(Task::Reverse, 5, config, by_hand))));
  CHECK(source.is_generated());
  CHECK(source.longest() == 8);
}

TEST_CASE("a cycled source goes through its pairs in order and starts again",
          "[data][batch_source]") {
  Rng rng(1);
  const std::vector<Pair> pairs = pairs_of_lengths(7, rng);
  BatchSource source = BatchSource::cycled(pairs, 3, Rng(2));
  const auto slices = batches_in_order(pairs, 3);  // 3, 3 and 1 pairs
  for (int step = 0; step < 7; ++step)
    CHECK(same_batch(source.next(), make_batch(slices[static_cast<size_t>(step) % 3])));
  CHECK_THROWS_WITH(BatchSource::cycled({}, 3, Rng(2)), "BatchSource: no pairs to cycle through");
  CHECK_THROWS_WITH(BatchSource::cycled(pairs, 0, Rng(2)),
                    "BatchSource: batch size 0 is not positive");
  CHECK_THROWS_WITH(BatchSource::by_length({}, 60, Rng(2)), "BatchSource: no pairs to batch");
}

TEST_CASE("a by-length source draws one epoch after another from its generator",
          "[data][batch_source]") {
  Rng rng(3);
  const std::vector<Pair> pairs = pairs_of_lengths(40, rng);
  BatchSource source = BatchSource::by_length(pairs, 60, Rng(4));
  Rng by_hand(4);
  for (int epoch = 0; epoch < 2; ++epoch)
    for (const std::vector<Pair>& batch : batches_by_length(pairs, 60, by_hand))
      CHECK(same_batch(source.next(), make_batch(batch)));
  CHECK(source.longest() == 14);
}

TEST_CASE("a source put back at a saved position gives the same next batches",
          "[data][batch_source][resume]") {
  Rng rng(5);
  const std::vector<Pair> pairs = pairs_of_lengths(30, rng);
  for (BatchSource source :
       {BatchSource::by_length(pairs, 50, Rng(6)), BatchSource::cycled(pairs, 4, Rng(6)),
        BatchSource::generated(Task::Copy, {}, 4, Rng(6))}) {
    for (int step = 0; step < 5; ++step) source.next();  // into the first epoch
    const BatchPosition saved = source.position();
    std::vector<Batch> expected;
    for (int step = 0; step < 20; ++step) expected.push_back(source.next());  // past its end

    BatchSource other = source;
    for (int step = 0; step < 3; ++step) other.next();
    other.restore(saved);
    for (const Batch& batch : expected) CHECK(same_batch(other.next(), batch));
  }
}

TEST_CASE("a source put back before its first batch draws every epoch as a fresh source does",
          "[data][batch_source][resume]") {
  Rng rng(10);
  const std::vector<Pair> pairs = pairs_of_lengths(30, rng);
  for (BatchSource source :
       {BatchSource::by_length(pairs, 50, Rng(11)), BatchSource::cycled(pairs, 4, Rng(11)),
        BatchSource::generated(Task::Copy, {}, 4, Rng(11))}) {
    const BatchSource fresh = source;
    // As training/budget.h times steps: draw some batches, put the source back, twice.
    for (int timing = 0; timing < 2; ++timing) {
      const BatchPosition start = source.position();
      for (int step = 0; step < 7; ++step) source.next();
      source.restore(start);
    }
    BatchSource expected = fresh;
    for (int step = 0; step < 40; ++step)  // several epochs of the by-length source
      CHECK(same_batch(source.next(), expected.next()));
  }
}

TEST_CASE("restoring a by-length position over other pairs is refused", "[data][batch_source]") {
  Rng rng(8);
  const std::vector<Pair> pairs = pairs_of_lengths(30, rng);
  BatchSource source = BatchSource::by_length(pairs, 50, Rng(9));
  source.next();
  std::vector<Pair> fewer(pairs.begin(), pairs.end() - 5);
  BatchSource other = BatchSource::by_length(fewer, 50, Rng(9));
  CHECK_THROWS_WITH(other.restore(source.position()),
                    Catch::Contains("the training pairs differ from those of the run"));
}

TEST_CASE("a windows source draws windows of the stream after bos, and goes back to a position",
          "[data][batch_source]") {
  std::vector<int32_t> stream;
  for (int32_t i = 0; i < 50; ++i) stream.push_back(4 + i % 7);
  BatchSource source = BatchSource::windows(stream, 5, 3, 1, Rng(8));
  CHECK(source.longest() == 6);
  CHECK(source.stream().size() == 50);
  const BatchPosition start = source.position();
  const Batch first = source.next();
  CHECK(first.src.shape() == Shape{3, 0});
  CHECK(first.tgt_in.shape() == Shape{3, 5});
  CHECK(first.target_tokens == 15);
  for (int64_t b = 0; b < 3; ++b) {
    CHECK(first.tgt_in.data()[b * 5] == 1);  // each window is read after bos
    // tgt_out is tgt_in shifted by one, and both are consecutive tokens of the stream.
    for (int64_t t = 1; t < 5; ++t)
      CHECK(first.tgt_in.data()[b * 5 + t] == first.tgt_out.data()[b * 5 + t - 1]);
    const int32_t first_token = first.tgt_out.data()[b * 5];
    for (int64_t t = 1; t < 5; ++t)
      CHECK(first.tgt_out.data()[b * 5 + t] == 4 + (first_token - 4 + t) % 7);
  }
  const Batch second = source.next();
  source.restore(start);
  CHECK(same_batch(source.next(), first));
  CHECK(same_batch(source.next(), second));
  CHECK_THROWS_WITH(
      BatchSource::windows({4, 5, 6}, 3, 2, 1, Rng(1)),
      Catch::Matchers::Contains("the text has 3 tokens, too few for one window of 3"));
}
