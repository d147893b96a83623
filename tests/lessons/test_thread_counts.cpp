// Every lesson prints the same results and draws the same pictures whatever the thread count
// (autograd/kernels/parallel.h), so a learner with 16 threads sees the numbers the lesson's
// README shows. Each lesson runs with --quick at 1 and at 8 threads; what may differ is time
// alone, so numbers followed by a unit of time (or a speed-up "x") are masked before the
// outputs are compared, and the pictures that plot times are left out of the comparison.
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string>

#include "tests/support/program.h"
#include "tests/support/temp_dir.h"

namespace fs = std::filesystem;
using gf::testing::program_command;
using gf::testing::TempDir;

namespace {

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Lesson 10's printed tables are timings from start to end (the paper's Table 1, measured):
// only its pictures of results are compared.
const std::set<std::string> kTimingLessons = {"10_why_self_attention"};

// Pictures of measured times.
const std::set<std::string> kTimingPictures = {"10_why_self_attention/time_per_layer.png"};

bool is_letter(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// If text[at..] starts with a unit of time ("ms", "s", "us", maybe after one space) or a
// speed-up ("x") that ends there, its length (the space included); else 0.
size_t unit_length(const std::string& text, size_t at) {
  // " forward passes": lesson 01 measures backward's cost as a ratio of two times.
  for (const std::string unit : {"x", " ms", "ms", " us", "us", " s", "s", " forward passes"}) {
    const size_t end = at + unit.size();
    if (text.compare(at, unit.size(), unit) == 0 && (end == text.size() || !is_letter(text[end])))
      return unit.size();
  }
  return 0;
}

// The output with the run's own directory and every duration and speed-up ("2.5 ms", "9.0s",
// "12x") replaced by T, and runs of spaces made one. (By hand rather than with <regex>, which GCC 12 under the sanitizers
// warns about.)
std::string without_times(const std::string& output, const fs::path& out_dir) {
  std::string text = output;
  for (size_t at; (at = text.find(out_dir.string())) != std::string::npos;)
    text.replace(at, out_dir.string().size(), "OUT");
  std::string masked;
  for (size_t i = 0; i < text.size();) {
    // Runs of spaces become one: a time printed in a column of fixed width pads by its length.
    if (text[i] == ' ' && !masked.empty() && masked.back() == ' ') {
      ++i;
      continue;
    }
    const bool starts_number = is_digit(text[i]) && (i == 0 || !is_letter(text[i - 1]));
    if (!starts_number) {
      masked += text[i++];
      continue;
    }
    size_t end = i;
    while (end < text.size() && (is_digit(text[end]) || text[end] == '.')) ++end;
    const size_t unit = unit_length(text, end);
    // A time's sign is the machine's too: a part computed as a difference of two timings
    // ("the rest" of a step) can come out below zero on a loaded machine.
    if (unit > 0 && !masked.empty() && masked.back() == '-') masked.pop_back();
    masked += unit > 0 ? "T" : text.substr(i, end - i);
    i = end + unit;
  }
  return masked;
}

// Runs build/bin/lessonNAME --quick at the given thread count, writing under out_dir;
// returns its standard output.
std::string run_lesson(const std::string& name, int threads, const fs::path& out_dir) {
  const fs::path stdout_file = out_dir / "stdout.txt";
  fs::create_directories(out_dir);
  // OMP_NUM_THREADS sets the pool's default; lesson 08 also has its own --threads.
  std::string command = "OMP_NUM_THREADS=" + std::to_string(threads);
  for (const std::string& word :
       program_command((fs::path(GRADFORMER_BIN_DIR) / ("lesson" + name)).string()))
    command += " '" + word + "'";
  command += " --quick --out '" + out_dir.string() + "'";
  if (name == "08_training") command += " --threads " + std::to_string(threads);
  // Lessons 12 and 13 read the corpora the test fixture "corpus" makes (tests/CMakeLists.txt).
  if (name == "12_real_sentences" || name == "13_decoder_only")
    command += " --data '" GRADFORMER_CORPUS_DIR "'";
  command += " >'" + stdout_file.string() + "' 2>&1";
  const int status = std::system(command.c_str());
  INFO(command << "\n" << read_file(stdout_file));
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  return read_file(stdout_file);
}

}  // namespace

TEST_CASE("lessons: every lesson gives the same numbers and pictures at 1 and 8 threads",
          "[lessons][threads]") {
  TempDir dir("lessons_threads");
  int lessons = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(GRADFORMER_SOURCE_DIR) / "lessons")) {
    const std::string name = entry.path().filename().string();
    // Lesson 11 measures speed and nothing else: every number it prints and every picture it
    // draws is a time, and its checks of speed would only add a flaky run on a loaded machine.
    if (!fs::exists(entry.path() / "main.cpp") || name == "11_making_it_fast") continue;
    ++lessons;
    const fs::path one = dir / ("one_" + name), eight = dir / ("eight_" + name);
    const std::string printed_one = run_lesson(name, 1, one);
    const std::string printed_eight = run_lesson(name, 8, eight);
    INFO("lesson " << name);
    if (!kTimingLessons.contains(name))
      CHECK(without_times(printed_eight, eight) == without_times(printed_one, one));
    int pictures = 0;
    for (const auto& file : fs::recursive_directory_iterator(one)) {
      if (file.path().extension() != ".png") continue;
      const std::string picture = fs::relative(file.path(), one).string();
      if (kTimingPictures.contains(picture)) continue;
      INFO("picture " << picture);
      CHECK(read_file(eight / picture) == read_file(file.path()));
      ++pictures;
    }
    CHECK(pictures > 0);
  }
  CHECK(lessons >= 10);
}
