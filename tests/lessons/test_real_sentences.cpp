// Lesson 12 without its corpus: it stops with a message that says how to make the corpus, and
// exits with 1, rather than training on nothing.
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "tests/support/program.h"
#include "tests/support/temp_dir.h"

namespace fs = std::filesystem;
using gf::testing::program_command;
using gf::testing::TempDir;

TEST_CASE("lesson 12 without its corpus says how to make it", "[lessons]") {
  TempDir dir("lesson12_no_corpus");
  const fs::path empty = dir / "no_corpus", printed = dir / "stdout.txt";
  fs::create_directories(empty);
  std::string command;
  for (const std::string& word :
       program_command((fs::path(GRADFORMER_BIN_DIR) / "lesson12_real_sentences").string()))
    command += "'" + word + "' ";
  command += "--quick --data '" + empty.string() + "' --out '" + (dir / "out").string() + "' >'" +
             printed.string() + "' 2>&1";
  const int status = std::system(command.c_str());
  std::ifstream in(printed);
  const std::string output{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  INFO(output);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 1);
  CHECK_THAT(output, Catch::Contains("no corpus in " + (empty / "de").string() +
                                     ": make it first with `python3 scripts/corpus.py de zh_CN "
                                     "--out " +
                                     empty.string() + "`"));
}
