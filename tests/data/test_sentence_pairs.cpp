#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "autograd/errors.h"
#include "data/sentence_pairs.h"
#include "tests/support/temp_dir.h"

using namespace gf::data;
using Catch::Matchers::Contains;

namespace {

SentencePairsFile read_text(const std::string& text, SentencePairsOptions options = {}) {
  std::istringstream in(text);
  return read_sentence_pairs(in, "pairs.tsv", options);
}

}  // namespace

TEST_CASE("sentence pairs are read with their line numbers, extra columns apart",
          "[data][sentence_pairs]") {
  // A Tatoeba-style line with an attribution column, a toy-language line with an alignment,
  // a blank line, \r\n, a line with spaces to trim, and no final newline.
  const auto file = read_text(
      "Go.\tGeh.\tCC-BY 2.0 (France) Attribution: tatoeba.org #2877272\r\n"
      "\n"
      "the cat sees a dog .\tmiru lo tavi uno ka vido .\t1-0 0-1 4-2 3-3 2-5 5-6\textra\n"
      "  Grüße aus Köln.  \t 我爱北京。");
  REQUIRE(file.pairs.size() == 3);
  CHECK(file.lines == std::vector<int64_t>{1, 3, 4});
  CHECK(file.pairs[0].source == "Go.");
  CHECK(file.pairs[0].target == "Geh.");
  CHECK(file.pairs[0].extra == "CC-BY 2.0 (France) Attribution: tatoeba.org #2877272");
  CHECK(file.pairs[1].extra == "1-0 0-1 4-2 3-3 2-5 5-6");
  CHECK(file.pairs[2].source == "Grüße aus Köln.");
  CHECK(file.pairs[2].target == "我爱北京。");
  CHECK(file.pairs[2].extra.empty());
  CHECK(file.skipped.empty());
}

TEST_CASE("a byte-order mark at the start of the file is not part of the first sentence",
          "[data][sentence_pairs]") {
  const auto file = read_text("\xEF\xBB\xBFHi.\tSalut.\n");
  CHECK(file.pairs[0].source == "Hi.");
}

TEST_CASE("a malformed line is an error naming the file and the line", "[data][sentence_pairs]") {
  REQUIRE_THROWS_AS(read_text("a\tb\nno tab here\n"), gf::FormatError);
  REQUIRE_THROWS_WITH(read_text("a\tb\nno tab here\n"),
                      Contains("pairs.tsv:2: expected SOURCE<TAB>TARGET, found no tab"));
  REQUIRE_THROWS_WITH(read_text("a\tb\n\t b\n"), Contains("pairs.tsv:2: the source is empty"));
  REQUIRE_THROWS_WITH(read_text("a\t \tx\n"), Contains("pairs.tsv:1: the target is empty"));
  // Latin-1 "ü" (0xFC) where UTF-8 was expected: the byte is named, counted from 1.
  REQUIRE_THROWS_WITH(read_text("ok\tgut\nGr\xFC\xDF\tx\n"),
                      Contains("pairs.tsv:2: invalid UTF-8 at byte 3 of the line"));
  REQUIRE_THROWS_WITH(read_text("\n \n"), Contains("pairs.tsv: no sentence pairs"));
}

TEST_CASE("skip_malformed keeps every good line and lists every bad one",
          "[data][sentence_pairs]") {
  const auto file = read_text("a\tb\nbroken\nc\td\n\xC0\xAF\tx\ne\tf\n", {.skip_malformed = true});
  REQUIRE(file.pairs.size() == 3);
  CHECK(file.pairs[2].source == "e");
  CHECK(file.lines == std::vector<int64_t>{1, 3, 5});
  REQUIRE(file.skipped.size() == 2);
  CHECK_THAT(file.skipped[0], Contains("pairs.tsv:2: expected SOURCE<TAB>TARGET"));
  CHECK_THAT(file.skipped[1], Contains("pairs.tsv:4: invalid UTF-8 at byte 1"));
  REQUIRE_THROWS_WITH(read_text("x\ny\n", {.skip_malformed = true}),
                      Contains("all 2 non-blank lines are malformed"));
}

TEST_CASE("a sentence-pair file that cannot be opened is named", "[data][sentence_pairs]") {
  gf::testing::TempDir dir("pairs");
  REQUIRE_THROWS_WITH(read_sentence_pairs(dir.path() / "missing.tsv"),
                      Contains("cannot open") && Contains("missing.tsv"));
  std::ofstream(dir.path() / "ok.tsv") << "Hello.\tHallo.\n";
  CHECK(read_sentence_pairs(dir.path() / "ok.tsv").pairs.at(0).target == "Hallo.");
}
