#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <set>
#include <sstream>

#include "autograd/random.h"
#include "data/toy_language.h"
#include "tests/support/temp_dir.h"

using namespace gf::data;
using Catch::Matchers::Contains;

namespace {

std::set<std::string> words_of(const std::vector<AlignedPair>& pairs, bool source) {
  std::set<std::string> words;
  for (const AlignedPair& p : pairs)
    for (const std::string& w : source ? p.source : p.target) words.insert(w);
  return words;
}

// The (adjective, noun) combinations in an English sentence: each adjective with the noun that
// ends its noun phrase. The test knows the lexicon's adjectives by name, on purpose.
std::set<std::string> combinations_in(const AlignedPair& p) {
  static const std::set<std::string> adjectives = {"big",   "small", "red",   "old",
                                                   "happy", "green", "quick", "quiet"};
  static const std::set<std::string> determiners = {"the", "a", "some", "this", "these", "my"};
  std::set<std::string> found;
  std::vector<std::string> pending;
  bool in_phrase = false;
  for (const std::string& w : p.source) {
    if (determiners.count(w)) {
      in_phrase = true;
      pending.clear();
    } else if (in_phrase && adjectives.count(w)) {
      pending.push_back(w);
    } else if (in_phrase) {  // the noun; plural nouns are their singular plus s, or "children"
      std::string noun = w == "children" ? "child" : w;
      if (noun != "child" && noun.back() == 's') noun.pop_back();
      for (const std::string& a : pending) found.insert(a + " " + noun);
      in_phrase = false;
    }
  }
  return found;
}

}  // namespace

// Pinned literally, as the copy task is: a change to the grammar or to Rng changes every
// seeded experiment and should be deliberate. Checked by hand against the rules of
// toy_language.h: the subject and object mirrored, "ka" after the object, the verb last with
// the subject's agreement (children: animate plural, -oj).
TEST_CASE("the first toy pairs of seed 1 are pinned and follow the grammar", "[data][toy]") {
  gf::Rng rng(1);
  const AlignedPair a = generate_toy_pair(rng);
  CHECK(join_words(a.source) == "some happy children follow some books under some rivers .");
  CHECK(join_words(a.target) == "nakin feloj unoj siren unaj ka jokun unaj sub sekvoj .");
  CHECK(alignment_text(a.alignment) == "2-0 1-1 0-2 5-3 4-4 8-6 7-7 6-8 3-9 9-10");

  const AlignedPair b = generate_toy_pair(rng);
  CHECK(join_words(b.source) == "my cars like these happy quiet books .");
  // Two adjectives come out in reverse order, and inanimate plurals take -aj everywhere.
  CHECK(join_words(b.target) == "vekin miaj siren kalmaj felaj estaj ka amaj .");
}

TEST_CASE("every toy pair aligns every word but the particles", "[data][toy]") {
  gf::Rng rng(7);
  for (int i = 0; i < 500; ++i) {
    const AlignedPair p = generate_toy_pair(rng);
    REQUIRE(p.source.size() >= 6);
    REQUIRE(p.source.size() <= 17);
    CHECK(p.source.back() == ".");
    CHECK(p.target.back() == ".");
    std::set<int32_t> aligned_source, aligned_target;
    for (const auto& [s, t] : p.alignment) {
      REQUIRE(s < static_cast<int32_t>(p.source.size()));
      REQUIRE(t < static_cast<int32_t>(p.target.size()));
      CHECK(aligned_target.insert(t).second);  // one source word per target word
      aligned_source.insert(s);
    }
    for (int32_t t = 0; t < static_cast<int32_t>(p.target.size()); ++t)
      CHECK(aligned_target.count(t) == (p.target[static_cast<size_t>(t)] == "ka" ? 0u : 1u));
    for (int32_t s = 0; s < static_cast<int32_t>(p.source.size()); ++s) {
      const std::string& w = p.source[static_cast<size_t>(s)];
      CHECK(aligned_source.count(s) == (w == "do" || w == "does" ? 0u : 1u));
    }
    // The verb is the last word before ".", aligned to the English verb.
    const auto verb = p.alignment[p.alignment.size() - 2];
    CHECK(verb.second == static_cast<int32_t>(p.target.size()) - 2);
  }
}

TEST_CASE("a toy corpus is deterministic, distinct and sized as asked", "[data][toy]") {
  const ToyLanguageConfig config{.train = 300, .dev = 20, .test = 40};
  gf::Rng rng1(3), rng2(3), rng3(4);
  const ToyCorpus a = generate_toy_corpus(config, rng1);
  const ToyCorpus b = generate_toy_corpus(config, rng2);
  const ToyCorpus c = generate_toy_corpus(config, rng3);
  CHECK(a.train == b.train);
  CHECK(a.test == b.test);
  CHECK(a.train != c.train);
  CHECK(a.train.size() == 300);
  CHECK(a.dev.size() == 20);
  CHECK(a.test.size() == 40);
  std::set<std::string> sources;
  for (const auto* part : {&a.train, &a.dev, &a.test})
    for (const AlignedPair& p : *part) CHECK(sources.insert(join_words(p.source)).second);
  // A few dozen words per side, all of them used by a corpus this size.
  CHECK(words_of(a.train, true).size() >= 40);
  CHECK(words_of(a.train, false).size() >= 60);
}

TEST_CASE("the length split puts only longer sentences in test", "[data][toy]") {
  gf::Rng rng(5);
  const ToyCorpus corpus = generate_toy_corpus(
      {.split = ToySplit::Length, .train = 400, .dev = 50, .test = 100, .length_threshold = 10},
      rng);
  for (const AlignedPair& p : corpus.train) CHECK(p.source.size() <= 10);
  for (const AlignedPair& p : corpus.dev) CHECK(p.source.size() <= 10);
  for (const AlignedPair& p : corpus.test) CHECK(p.source.size() > 10);
  CHECK(corpus.test.size() == 100);
}

TEST_CASE("the compositional split hides its combinations from training", "[data][toy]") {
  gf::Rng rng(6);
  const ToyCorpus corpus = generate_toy_corpus({.split = ToySplit::Compositional,
                                                .train = 1000,
                                                .dev = 50,
                                                .test = 100,
                                                .held_out_combinations = 6},
                                               rng);
  REQUIRE(corpus.held_out.size() == 6);
  const std::set<std::string> held(corpus.held_out.begin(), corpus.held_out.end());
  const auto holds_out = [&](const AlignedPair& p) {
    for (const std::string& c : combinations_in(p))
      if (held.count(c)) return true;
    return false;
  };
  for (const AlignedPair& p : corpus.train) CHECK_FALSE(holds_out(p));
  for (const AlignedPair& p : corpus.dev) CHECK_FALSE(holds_out(p));
  for (const AlignedPair& p : corpus.test) CHECK(holds_out(p));
  // Every word of the test set was seen in training: only the combinations are new.
  const std::set<std::string> train_words = words_of(corpus.train, true);
  for (const std::string& w : words_of(corpus.test, true)) CHECK(train_words.count(w) == 1);
}

TEST_CASE("alignments print and parse in the Pharaoh format", "[data][toy]") {
  const std::vector<std::pair<int32_t, int32_t>> alignment = {{2, 0}, {0, 1}, {11, 12}};
  CHECK(alignment_text(alignment) == "2-0 0-1 11-12");
  CHECK(parse_alignment("2-0 0-1  11-12") == alignment);
  CHECK(parse_alignment("").empty());
  REQUIRE_THROWS_WITH(parse_alignment("2-0 3"), Contains("\"3\" is not a SOURCE-TARGET pair"));
  REQUIRE_THROWS_WITH(parse_alignment("2--1"), Contains("\"2--1\""));
  REQUIRE_THROWS_WITH(parse_alignment("a-1"), Contains("\"a-1\""));
}

TEST_CASE("toy splits parse, and bad configurations are refused", "[data][toy]") {
  CHECK(parse_toy_split("length") == ToySplit::Length);
  CHECK(toy_split_name(ToySplit::Compositional) == "compositional");
  REQUIRE_THROWS_WITH(parse_toy_split("lenght"),
                      Contains("valid splits: random, compositional, length"));
  gf::Rng rng(1);
  REQUIRE_THROWS_WITH(generate_toy_corpus({.train = 0}, rng), Contains("train is 0"));
  REQUIRE_THROWS_WITH(generate_toy_corpus({.length_threshold = 17}, rng),
                      Contains("length_threshold is 17"));
  REQUIRE_THROWS_WITH(generate_toy_corpus({.held_out_combinations = 0}, rng),
                      Contains("held_out_combinations is 0"));
}

TEST_CASE("a toy corpus is written as source, target and alignment columns", "[data][toy]") {
  gf::testing::TempDir dir("toy");
  gf::Rng rng(1);
  const AlignedPair p = generate_toy_pair(rng);
  write_aligned_tsv(dir.path() / "train.tsv", {p, p});
  std::ifstream in(dir.path() / "train.tsv");
  std::stringstream text;
  text << in.rdbuf();
  const std::string line = join_words(p.source) + "\t" + join_words(p.target) + "\t" +
                           alignment_text(p.alignment) + "\n";
  CHECK(text.str() == line + line);
  CHECK_FALSE(std::filesystem::exists(dir.path() / "train.tsv.tmp"));
  REQUIRE_THROWS_WITH(write_aligned_tsv(dir.path() / "missing" / "x.tsv", {p}),
                      Contains("cannot write"));
}
