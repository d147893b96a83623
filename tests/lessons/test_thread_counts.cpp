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
#include <regex>
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

// The lessons whose printed tables are timings from start to end (the paper's Table 1 and the
// speed of GEMM): only their pictures of results are compared.
const std::set<std::string> kTimingLessons = {"10_why_self_attention", "11_making_it_fast"};

// Pictures of measured times.
const std::set<std::string> kTimingPictures = {"10_why_self_attention/time_per_layer.png",
                                               "11_making_it_fast/step_gflops.png",
                                               "11_making_it_fast/gemm_sizes.png",
                                               "11_making_it_fast/time_shares.png",
                                               "11_making_it_fast/profile.png",
                                               "11_making_it_fast/gemm_versions.png"};

// The output with the run's own directory and every duration and speed-up masked.
std::string without_times(const std::string& output, const fs::path& out_dir) {
  std::string text = output;
  for (size_t at; (at = text.find(out_dir.string())) != std::string::npos;)
    text.replace(at, out_dir.string().size(), "OUT");
  static const std::regex time(R"([0-9]+(\.[0-9]+)?( ?(ms|s|us)\b|x\b))");
  return std::regex_replace(text, time, "T");
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
    if (!fs::exists(entry.path() / "main.cpp")) continue;
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
    if (name != "11_making_it_fast") CHECK(pictures > 0);
  }
  CHECK(lessons >= 11);
}
