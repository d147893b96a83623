#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "autograd/errors.h"
#include "autograd/random.h"
#include "data/pairs_file.h"
#include "data/tasks.h"
#include "tests/support/temp_dir.h"

using namespace gf;
using gf::testing::TempDir;
using namespace gf::data;
using Catch::Matchers::Contains;
using ids = std::vector<int32_t>;
namespace fs = std::filesystem;

static PairsFile read_text(const std::string& text) {
  std::istringstream in(text);
  return read_pairs(in, "pairs.tsv");
}

TEST_CASE("read_pairs reads ids and remembers line numbers", "[data][pairs_file]") {
  const PairsFile f = read_text("5 6 2\t1 5 6 2\n\n7 2\t1 7 2\n");
  CHECK(f.source == "pairs.tsv");
  REQUIRE(f.pairs.size() == 2);
  CHECK(f.pairs[0] == Pair{.src = {5, 6, 2}, .tgt = {1, 5, 6, 2}});
  CHECK(f.pairs[1] == Pair{.src = {7, 2}, .tgt = {1, 7, 2}});
  CHECK(f.lines == std::vector<int64_t>{1, 3});
}

TEST_CASE("read_pairs tolerates CRLF, blank lines, runs of spaces, no final newline",
          "[data][pairs_file]") {
  const PairsFile f =
      read_text("\r\n  5   6 2 \t 1 5  6 2\r\n   \r\n\t\n7 2\t1 7\r\n4\t1 4 2147483647");
  REQUIRE(f.pairs.size() == 3);
  CHECK(f.pairs[0] == Pair{.src = {5, 6, 2}, .tgt = {1, 5, 6, 2}});
  CHECK(f.pairs[1] == Pair{.src = {7, 2}, .tgt = {1, 7}});           // eos is not required
  CHECK(f.pairs[2] == Pair{.src = {4}, .tgt = {1, 4, 2147483647}});  // the largest int32
  CHECK(f.lines == std::vector<int64_t>{2, 5, 6});
}

TEST_CASE("read_pairs names the line and the problem", "[data][pairs_file]") {
  REQUIRE_THROWS_AS(read_text("5 2 1 5 2\n"), FormatError);
  REQUIRE_THROWS_WITH(read_text("5 2\t1 5 2\n5 2 1 5 2\n"),
                      Contains("pairs.tsv:2: expected SRC<TAB>TGT, found no tab"));
  REQUIRE_THROWS_WITH(read_text("5 2\t1 5 2\t\n"),
                      Contains("pairs.tsv:1: expected SRC<TAB>TGT, found 2 tabs"));
  REQUIRE_THROWS_WITH(read_text("\n\n5 2\t1x 5 2\n"),
                      Contains("pairs.tsv:3: \"1x\" is not an integer id (target, token 1)"));
  REQUIRE_THROWS_WITH(read_text("5 +2\t1 5 2\n"),
                      Contains("pairs.tsv:1: \"+2\" is not an integer id (source, token 2)"));
  REQUIRE_THROWS_WITH(read_text("5 2\t1 5 2.0\n"), Contains("\"2.0\" is not an integer id"));
  REQUIRE_THROWS_WITH(read_text("5 -4 2\t1 5 2\n"),
                      Contains("pairs.tsv:1: id -4 is negative (source, token 2)"));
  REQUIRE_THROWS_WITH(read_text("5 2\t1 -99999999999999999999\n"),
                      Contains("id -99999999999999999999 is negative (target, token 2)"));
  REQUIRE_THROWS_WITH(read_text("5 2\t1 2147483648\n"),
                      Contains("pairs.tsv:1: id 2147483648 is too large; ids are int32, at most "
                               "2147483647 (target, token 2)"));
  REQUIRE_THROWS_WITH(read_text("5 2\t1 99999999999999999999\n"),
                      Contains("id 99999999999999999999 is too large"));
  REQUIRE_THROWS_WITH(read_text("5 2\t1 5 2\n\n\n\n5 2\t4 5 2\n"),
                      Contains("pairs.tsv:5: target must start with bos (1), found 4"));
  REQUIRE_THROWS_WITH(read_text("5 2\t \n"),
                      Contains("pairs.tsv:1: target is empty; it must start with bos (1)"));
  REQUIRE_THROWS_WITH(read_text("5 2\t1\n"),
                      Contains("pairs.tsv:1: target has 1 token but needs at least 2"));
  REQUIRE_THROWS_WITH(read_text("  \t1 5 2\n"), Contains("pairs.tsv:1: source is empty"));
  REQUIRE_THROWS_WITH(
      read_text("5 0 2\t1 5 2\n"),
      Contains("pairs.tsv:1: source contains the pad id 0 at token 2 (padding is added when "
               "batching)"));
  REQUIRE_THROWS_WITH(read_text("5 2\t1 5 2 0\n"),
                      Contains("pairs.tsv:1: target contains the pad id 0 at token 4"));
  REQUIRE_THROWS_WITH(read_text(""), Contains("pairs.tsv: no pairs found (the file is empty)"));
  REQUIRE_THROWS_WITH(read_text("\n \r\n"),
                      Contains("pairs.tsv: no pairs found (every line is blank)"));
}

TEST_CASE("check_ids names the id, the line and the vocabulary range", "[data][pairs_file]") {
  const PairsFile f = read_text("5 2\t1 5 2\n\n\n6 2\t1 6 12 2\n");
  CHECK_NOTHROW(check_ids(f, 13));
  REQUIRE_THROWS_AS(check_ids(f, 11), FormatError);
  REQUIRE_THROWS_WITH(
      check_ids(f, 11),
      Contains("pairs.tsv: id 12 on line 4 is out of range [0, 11) (target, token 3)"));
  REQUIRE_THROWS_WITH(
      check_ids(f, 6),
      Contains("pairs.tsv: id 6 on line 4 is out of range [0, 6) (source, token 1)"));
  REQUIRE_THROWS_WITH(check_ids(f, 0),
                      Contains("check_ids: vocab_size is 0 but must be at least 1"));
}

TEST_CASE("read_id_lines reads one source per line for decode", "[data][pairs_file]") {
  std::istringstream in("5 6 2\r\n\n  7   2 \n");
  const IdLines lines = read_id_lines(in);
  CHECK(lines.source == "stdin");
  CHECK(lines.sequences == std::vector<ids>{{5, 6, 2}, {7, 2}});
  CHECK(lines.lines == std::vector<int64_t>{1, 3});
  CHECK_NOTHROW(check_ids(lines, 8));
  REQUIRE_THROWS_WITH(check_ids(lines, 7),
                      Contains("stdin: id 7 on line 3 is out of range [0, 7) (token 1)"));

  std::istringstream empty("");
  CHECK(read_id_lines(empty).sequences.empty());
  std::istringstream tab("5 2\t1 5 2\n");
  REQUIRE_THROWS_WITH(read_id_lines(tab, "input.txt"),
                      Contains("input.txt:1: expected space-separated ids, found a tab"));
  std::istringstream bad("5 2\n5 x\n");
  REQUIRE_THROWS_WITH(read_id_lines(bad),
                      Contains("stdin:2: \"x\" is not an integer id (token 2)"));
  std::istringstream pad("0 5\n");
  REQUIRE_THROWS_WITH(read_id_lines(pad),
                      Contains("stdin:1: the sequence contains the pad id 0 at token 1"));
}

TEST_CASE("write_pairs then read_pairs gives the pairs back", "[data][pairs_file]") {
  TempDir dir("round_trip");
  Rng rng(11);
  const auto pairs =
      generate(Task::Reverse, 25, {.vocab_size = 40, .min_len = 1, .max_len = 6}, rng);
  const fs::path path = dir.path() / "pairs.tsv";
  write_pairs(path, pairs);
  const PairsFile f = read_pairs(path);
  CHECK(f.source == path.string());
  CHECK(f.pairs == pairs);
  REQUIRE(f.lines.size() == 25);
  CHECK(f.lines.back() == 25);

  // The exact text: ids separated by spaces, one tab, \n after every line.
  const std::vector<Pair> small = {{.src = {5, 2}, .tgt = {1, 5, 2}}, {.src = {6}, .tgt = {1, 6}}};
  write_pairs(path, small);
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  CHECK(text.str() == "5 2\t1 5 2\n6\t1 6\n");
}

TEST_CASE("read_pairs reports files it cannot open", "[data][pairs_file]") {
  TempDir dir("missing");
  const fs::path missing = dir.path() / "pairs.tsv";
  REQUIRE_THROWS_AS(read_pairs(missing), FormatError);
  REQUIRE_THROWS_WITH(read_pairs(missing),
                      Contains("cannot open " + missing.string() + ": No such file or directory"));
  REQUIRE_THROWS_WITH(read_pairs(dir.path()),
                      Contains("cannot open " + dir.path().string() + ": Is a directory"));
  REQUIRE_THROWS_WITH(write_pairs(dir.path() / "no" / "such" / "dir.tsv", {}),
                      Contains("cannot write " + (dir.path() / "no" / "such" / "dir.tsv").string() +
                               ": No such file or directory"));

  const fs::path crlf = dir.path() / "crlf.tsv";
  std::ofstream(crlf, std::ios::binary) << "4 2\t1 4 2\r\n5 2\t1 5 2\r\n";
  CHECK(read_pairs(crlf).pairs ==
        std::vector<Pair>{{.src = {4, 2}, .tgt = {1, 4, 2}}, {.src = {5, 2}, .tgt = {1, 5, 2}}});
}
