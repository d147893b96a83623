// A language model's data: a text file read whole and checked, and its token stream cut into
// windows read after bos.
#include <catch2/catch.hpp>
#include <fstream>
#include <vector>

#include "autograd/errors.h"
#include "data/text_windows.h"
#include "tests/support/temp_dir.h"

using namespace gf;
using namespace gf::data;
using Catch::Matchers::Contains;

TEST_CASE("a window is bos and then context tokens of the stream", "[data][text_windows]") {
  const std::vector<int32_t> stream = {4, 5, 6, 7, 8};
  CHECK(window_at(stream, 1, 3, 1) == Pair{{}, {1, 5, 6, 7}});
  CHECK(window_at(stream, 3, 3, 1) == Pair{{}, {1, 7, 8}});  // cut short by the end
  CHECK_THROWS_WITH(window_at(stream, 5, 3, 1), Contains("start 5 is outside the stream of 5"));
  CHECK_THROWS_WITH(window_at(stream, 0, 0, 1), Contains("context 0 < 1"));
}

TEST_CASE("consecutive windows predict every token once, and spread windows sample them evenly",
          "[data][text_windows]") {
  std::vector<int32_t> stream;
  for (int32_t i = 0; i < 10; ++i) stream.push_back(4 + i);
  const std::vector<Pair> all = consecutive_windows(stream, 4, 1);
  REQUIRE(all.size() == 3);
  CHECK(all[0].tgt == std::vector<int32_t>{1, 4, 5, 6, 7});
  CHECK(all[2].tgt == std::vector<int32_t>{1, 12, 13});
  size_t predicted = 0;
  for (const Pair& w : all) predicted += w.tgt.size() - 1;
  CHECK(predicted == stream.size());
  CHECK(consecutive_windows(std::vector<int32_t>{}, 4, 1).empty());
  const std::vector<Pair> two = spread_windows(stream, 2, 2, 1);  // of 5 windows: 0 and 2
  REQUIRE(two.size() == 2);
  CHECK(two[0].tgt == std::vector<int32_t>{1, 4, 5});
  CHECK(two[1].tgt == std::vector<int32_t>{1, 8, 9});
  CHECK(spread_windows(stream, 4, 10, 1).size() == 3);
}

TEST_CASE("a text file is read whole, and invalid UTF-8 is refused by line",
          "[data][text_windows]") {
  const gf::testing::TempDir dir("text");
  std::ofstream(dir.file("good.txt")) << "one\ntwo \xC3\xBC\n";
  CHECK(read_text_file(dir.file("good.txt")).text == "one\ntwo \xC3\xBC\n");
  std::ofstream(dir.file("bad.txt")) << "one\ntwo \xC3\n";
  CHECK_THROWS_WITH(read_text_file(dir.file("bad.txt")),
                    Contains("bad.txt:2: invalid UTF-8 at byte 5 of the line"));
  std::ofstream(dir.file("empty.txt")).flush();
  CHECK_THROWS_WITH(read_text_file(dir.file("empty.txt")),
                    Contains("empty.txt: the file is empty"));
  CHECK_THROWS_WITH(read_text_file(dir.file("missing.txt")), Contains("cannot open"));
}
