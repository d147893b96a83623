#include <algorithm>
#include <catch2/catch.hpp>
#include <set>

#include "autograd/random.h"
#include "data/tasks.h"
#include "data/vocab.h"

using namespace gf::data;
using Catch::Matchers::Contains;
using ids = std::vector<int32_t>;

TEST_CASE("task names parse and print", "[data][tasks]") {
  CHECK(parse_task("copy") == Task::Copy);
  CHECK(parse_task("reverse") == Task::Reverse);
  CHECK(task_name(Task::Copy) == "copy");
  CHECK(task_name(Task::Reverse) == "reverse");
  REQUIRE_THROWS_WITH(parse_task("Copy"),
                      Contains("unknown task \"Copy\" (valid tasks: copy, reverse)"));
  REQUIRE_THROWS_WITH(parse_task(""), Contains("unknown task \"\""));
}

// Pinned literally: any change to the generator or to Rng changes every seeded experiment,
// and should be a deliberate one.
TEST_CASE("the first copy pair of seed 1 is pinned", "[data][tasks]") {
  gf::Rng rng(1);
  const Pair p = copy_pair(TaskConfig{}, rng);
  CHECK(p.src == ids{10, 8, 10, 5, 10, 4, 4, 10, 4, 9, 2});
  CHECK(p.tgt == ids{1, 10, 8, 10, 5, 10, 4, 4, 10, 4, 9, 2});

  gf::Rng rng2(1);
  const Pair r = reverse_pair(TaskConfig{}, rng2);
  CHECK(r.src == p.src);  // the same draws, arranged differently
  CHECK(r.tgt == ids{1, 9, 4, 10, 4, 4, 10, 5, 10, 8, 10, 2});

  gf::Rng rng3(1);
  const auto short_pairs =
      generate(Task::Copy, 2, {.vocab_size = 6, .min_len = 1, .max_len = 4}, rng3);
  CHECK(short_pairs[0].src == ids{4, 4, 2});
  CHECK(short_pairs[1].src == ids{5, 4, 4, 5, 2});
}

TEST_CASE("generation is deterministic in the seed", "[data][tasks]") {
  const TaskConfig config{.vocab_size = 20, .min_len = 2, .max_len = 9};
  gf::Rng a(7), b(7), c(8);
  const auto first = generate(Task::Reverse, 50, config, a);
  CHECK(first == generate(Task::Reverse, 50, config, b));
  CHECK(first != generate(Task::Reverse, 50, config, c));
  // generate() is generate_pair() called count times on the same generator.
  gf::Rng d(7);
  for (const Pair& p : first) CHECK(p == generate_pair(Task::Reverse, config, d));
}

TEST_CASE("copy pairs draw content from 4 up to vocab_size and lengths from min_len to max_len",
          "[data][tasks]") {
  const TaskConfig config{.vocab_size = 8, .min_len = 3, .max_len = 7};
  gf::Rng rng(3);
  std::set<size_t> lengths;
  std::set<int32_t> symbols;
  for (const Pair& p : generate(Task::Copy, 400, config, rng)) {
    const size_t n = p.src.size() - 1;  // content length
    REQUIRE(n >= 3);
    REQUIRE(n <= 7);
    lengths.insert(n);
    CHECK(p.src.back() == kEos);
    REQUIRE(p.tgt.size() == n + 2);
    CHECK(p.tgt.front() == kBos);
    CHECK(p.tgt.back() == kEos);
    CHECK(std::equal(p.src.begin(), p.src.end() - 1, p.tgt.begin() + 1));
    for (size_t i = 0; i < n; ++i) {
      REQUIRE(p.src[i] >= kNumSpecial);
      REQUIRE(p.src[i] < 8);
      symbols.insert(p.src[i]);
    }
  }
  CHECK(lengths == std::set<size_t>{3, 4, 5, 6, 7});  // every length occurs
  CHECK(symbols == std::set<int32_t>{4, 5, 6, 7});    // every symbol occurs, no special one

  gf::Rng fixed(4);
  for (const Pair& p : generate(Task::Copy, 20, TaskConfig{}, fixed)) CHECK(p.src.size() == 11);
}

TEST_CASE("reverse pairs reverse the content and keep bos and eos in place", "[data][tasks]") {
  gf::Rng rng(5);
  for (const Pair& p :
       generate(Task::Reverse, 100, {.vocab_size = 30, .min_len = 1, .max_len = 12}, rng)) {
    const ids content(p.src.begin(), p.src.end() - 1);
    ids expected{kBos};
    expected.insert(expected.end(), content.rbegin(), content.rend());
    expected.push_back(kEos);
    CHECK(p.tgt == expected);
    CHECK(p.src.back() == kEos);
  }
}

TEST_CASE("bad task configurations are refused with the field and range", "[data][tasks]") {
  gf::Rng rng(1);
  REQUIRE_THROWS_WITH(copy_pair({.vocab_size = 4}, rng),
                      Contains("task config: vocab_size is 4 but must be at least 5"));
  REQUIRE_THROWS_WITH(validate({.vocab_size = 11, .min_len = 0, .max_len = 10}),
                      Contains("task config: min_len is 0 but must be at least 1"));
  REQUIRE_THROWS_WITH(validate({.vocab_size = 11, .min_len = 5, .max_len = 3}),
                      Contains("task config: max_len is 3 but must be at least min_len (5)"));
  REQUIRE_THROWS_WITH(generate(Task::Copy, -1, TaskConfig{}, rng),
                      Contains("generate: count is -1 but must be at least 0"));
  CHECK(generate(Task::Copy, 0, TaskConfig{}, rng).empty());
  CHECK_NOTHROW(validate({.vocab_size = 5, .min_len = 1, .max_len = 1}));
  gf::Rng one(2);  // a single content symbol: every token is 4
  CHECK(copy_pair({.vocab_size = 5, .min_len = 3, .max_len = 3}, one).src == ids{4, 4, 4, 2});
}
