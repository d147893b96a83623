// Training that keeps its work: `train --resume` continues a run bit for bit, SIGINT and
// SIGTERM save before exiting, a checkpoint write killed half-way leaves the old file whole,
// and a loss or gradient that stops being finite ends the run with the last good weights.
// The `transformer` runs are the real binary, as in test_cli.cpp.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "autograd/random.h"
#include "models/transformer.h"
#include "nn/checkpoint.h"
#include "nn/safetensors.h"
#include "tests/support/program.h"
#include "tests/support/temp_dir.h"
#include "training/run_page.h"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using gf::testing::program_command;
using gf::testing::TempDir;

namespace {

using Args = std::vector<std::string>;

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

Args words(const std::string& text) {
  std::istringstream in(text);
  return Args(std::istream_iterator<std::string>(in), std::istream_iterator<std::string>());
}

Args operator+(Args a, const Args& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

struct Run {
  int status = -1;  // the exit code; 128 + N when killed by signal N
  std::string err;
};

std::ostream& operator<<(std::ostream& os, const Run& r) {
  return os << "exit " << r.status << "\n--- stderr:\n" << r.err;
}

// Starts `transformer args...` with stdout and stderr in files under dir; returns its pid.
pid_t start(const Args& args, const TempDir& dir) {
  const std::string binary = (fs::path(GRADFORMER_BIN_DIR) / "transformer").string();
  const std::string out = dir.file("stdout"), err = dir.file("stderr");
  std::vector<std::string> argv_text = program_command(binary) + args;
  std::vector<char*> argv;
  for (std::string& a : argv_text) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {  // the child: only async-signal-safe calls until exec
    const int out_fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err_fd = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out_fd < 0 || err_fd < 0 || dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0) _exit(126);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

Run finish(pid_t pid, const TempDir& dir) {
  int raw = 0;
  REQUIRE(waitpid(pid, &raw, 0) == pid);
  return {WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw), read_file(dir / "stderr")};
}

Run transformer(const Args& args, const TempDir& dir) {
  return finish(start(args, dir), dir);
}

// The losses of a --log-losses file, one line per step.
std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Trains `total` steps in one run and in two (`first`, then --resume), and checks that the
// per-step losses and the final checkpoints are equal bit for bit.
void check_resume_is_exact(const Args& training, int total, int first, const TempDir& dir) {
  const std::string steps = std::to_string(total);
  const Run straight =
      transformer(training + Args{"--steps", steps, "--save", dir.file("straight.safetensors"),
                                  "--log-losses", dir.file("straight.log")},
                  dir);
  INFO(straight);
  REQUIRE(straight.status == 0);
  const Run part = transformer(
      training + Args{"--steps", std::to_string(first), "--save", dir.file("split.safetensors")},
      dir);
  INFO(part);
  REQUIRE(part.status == 0);
  REQUIRE(fs::exists(dir / "split.train-state.safetensors"));
  // Only the flags that may change: the saved run supplies the rest.
  const Run resumed =
      transformer(Args{"train", "--resume", dir.file("split.safetensors"), "--steps", steps,
                       "--threads", "1", "--log-losses", dir.file("split.log")},
                  dir);
  INFO(resumed);
  REQUIRE(resumed.status == 0);
  CHECK_THAT(resumed.err, Contains("resuming " + dir.file("split.safetensors") + " at step " +
                                   std::to_string(first) + " of " + steps));

  const std::vector<std::string> expected = lines_of(read_file(dir / "straight.log"));
  const std::vector<std::string> losses = lines_of(read_file(dir / "split.log"));
  REQUIRE(expected.size() == static_cast<size_t>(total));
  CHECK(losses == expected);
  CHECK(read_file(dir / "split.safetensors") == read_file(dir / "straight.safetensors"));
  // The losses do change over the run: equal logs are not equal by being constant.
  CHECK(expected.front() != expected.back());
}

const std::string kCopy =
    "train --task copy --length 6 --layers 1 --d-model 32 --d-ff 64 --heads 2 --batch 32 "
    "--warmup 20 --threads 1 --seed 3";

}  // namespace

TEST_CASE("train --resume continues the copy task bit for bit, dropout masks included",
          "[cli][resume]") {
  TempDir dir;
  // Dropout 0.1 draws masks every step: the resumed run must continue every layer's stream.
  check_resume_is_exact(words(kCopy + " --dropout 0.1 --eval-every 10"), 40, 15, dir);

  SECTION("the training state sits beside a checkpoint that stays a plain state dict") {
    const gf::nn::SafetensorsFile model = gf::nn::load_safetensors(dir.file("split.safetensors"));
    for (const auto& [name, tensor] : model.tensors) CHECK(name.find("adam") == std::string::npos);
    const gf::nn::SafetensorsFile state =
        gf::nn::load_safetensors(dir.file("split.train-state.safetensors"));
    CHECK(state.metadata.at("format") == "gradformer-train-state/1");
    CHECK(state.metadata.at("step") == "40");
    CHECK(state.metadata.at("option.dropout") == "0.1");
    CHECK(state.metadata.count("rng.dropout.encoder.layers.0.dropout") == 1);
    size_t moments = 0;
    for (const auto& [name, tensor] : state.tensors) moments += name.starts_with("adam.m.");
    CHECK(moments == model.tensors.size());
  }

  SECTION("the page's history covers both parts of the resumed run") {
    const gf::nn::SafetensorsFile state =
        gf::nn::load_safetensors(dir.file("split.train-state.safetensors"));
    const gf::training::PageHistory history = gf::training::PageHistory::from_json(
        state.metadata.at("history.page"), "split.train-state.safetensors");
    // The first part (15 steps) recorded at 0, 1, 2, ... 15 of its own 25 snapshot steps; the
    // second at the steps of a 40-step run past 15.
    std::vector<int64_t> steps;
    for (const auto& s : history.snapshots) steps.push_back(s.step);
    CHECK(steps.front() == 0);
    CHECK(steps.back() == 40);
    CHECK(std::is_sorted(steps.begin(), steps.end()));
    CHECK(std::adjacent_find(steps.begin(), steps.end()) == steps.end());
    CHECK(std::count_if(steps.begin(), steps.end(), [](int64_t s) { return s > 15; }) > 0);
    CHECK(std::count_if(steps.begin(), steps.end(), [](int64_t s) { return s < 15; }) > 0);
    CHECK(history.metric_steps.size() == steps.size());
    CHECK(history.sequences == 40 * 32);
  }
}

TEST_CASE("train --resume keeps learned positions and continues them bit for bit",
          "[cli][resume][positions]") {
  TempDir dir;
  // The resumed run is given no --positions: the checkpoint's table and setting carry on.
  check_resume_is_exact(words(kCopy + " --positions learned"), 12, 5, dir);
  for (const char* name : {"split.safetensors", "straight.safetensors"}) {
    INFO(name);
    const gf::nn::SafetensorsFile file = gf::nn::load_safetensors(dir.file(name));
    CHECK(file.metadata.at("positions") == "learned");
    CHECK(gf::TransformerConfig::from_checkpoint(file, name).learned_positions);
  }
}

// The page's snapshots and dev metric decode with dropout off and draw no random number the run
// uses, so a run records them without changing a single loss or weight.
TEST_CASE("recording the page's snapshots leaves the training unchanged", "[cli][resume]") {
  TempDir dir;
  for (const char* count : {"0", "7"}) {
    const Run run =
        transformer(words(kCopy + " --dropout 0.1 --steps 30") +
                        Args{"--snapshots", count, "--save",
                             dir.file(std::string("s") + count + ".safetensors"), "--log-losses",
                             dir.file(std::string("s") + count + ".log")},
                    dir);
    INFO(run);
    REQUIRE(run.status == 0);
  }
  CHECK(read_file(dir / "s0.log") == read_file(dir / "s7.log"));
  CHECK(read_file(dir / "s0.safetensors") == read_file(dir / "s7.safetensors"));
  const gf::training::PageHistory history = gf::training::PageHistory::from_json(
      gf::nn::load_safetensors(dir.file("s7.train-state.safetensors")).metadata.at("history.page"),
      "s7");
  CHECK(history.snapshots.size() == 7);
  CHECK(history.metric_values.size() == 7);
  CHECK(gf::training::PageHistory::from_json(
            gf::nn::load_safetensors(dir.file("s0.train-state.safetensors"))
                .metadata.at("history.page"),
            "s0")
            .snapshots.empty());
}

TEST_CASE("train --resume continues a text task bit for bit, across epochs", "[cli][resume]") {
  TempDir dir;
  const Run generated = transformer(
      words("generate --train 120 --dev 10 --test 10 --seed 2") + Args{"--out", dir.file("toy")},
      dir);
  INFO(generated);
  REQUIRE(generated.status == 0);
  // 120 pairs in batches of at most 300 padded tokens make epochs of 6 batches: the first run
  // stops inside the second epoch, and the run ends two batches into the fourth.
  check_resume_is_exact(
      words("train --task translate --tokenizer word --layers 1 --d-model 32 --d-ff 64 --heads 2 "
            "--batch-tokens 300 --warmup 10 --threads 1 --seed 4 --dropout 0.1 --eval-count 4") +
          Args{"--data", dir.file("toy/train.tsv")},
      20, 8, dir);
  const gf::nn::SafetensorsFile state =
      gf::nn::load_safetensors(dir.file("split.train-state.safetensors"));
  CHECK(state.metadata.at("batches.next") == "2");
  CHECK(state.metadata.at("batches.in_epoch") == "true");
}

TEST_CASE("train --resume refuses what it cannot continue exactly", "[cli][resume][errors]") {
  TempDir dir;
  const std::string ckpt = dir.file("m.safetensors");
  const Run trained = transformer(words(kCopy + " --steps 5") + Args{"--save", ckpt}, dir);
  INFO(trained);
  REQUIRE(trained.status == 0);
  fs::copy_file(ckpt, dir / "alone.safetensors");
  struct Case {
    Args args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--resume", ckpt, "--steps", "5"}, "the run has done 5 steps already"},
      {{"--resume", ckpt, "--steps", "9", "--lr", "0.3"}, "--lr 0.3 differs from the run"},
      {{"--resume", ckpt, "--steps", "9", "--task", "reverse"}, "--task reverse differs"},
      {{"--resume", dir.file("alone.safetensors"), "--steps", "9"},
       "there is no training state " + dir.file("alone.train-state.safetensors")},
      {{"--resume", ckpt, "--init", ckpt}, "give one of them"}};
  for (const Case& c : cases) {
    const Run r = transformer(Args{"train"} + c.args, dir);
    INFO(r);
    CHECK(r.status == 1);
    CHECK_THAT(r.err, Contains(c.message));
  }
  // A damaged state: a generator state that is not one, an optimizer buffer missing.
  const std::string state_path = dir.file("m.train-state.safetensors");
  const gf::nn::SafetensorsFile state = gf::nn::load_safetensors(state_path);
  const fs::path damaged = dir / "damaged.safetensors";
  fs::copy_file(ckpt, damaged);
  gf::nn::Metadata bad_rng = state.metadata;
  bad_rng["rng.batches"] = "0123";
  gf::nn::save_safetensors(dir.file("damaged.train-state.safetensors"), state.tensors, bad_rng);
  const Run bad_rng_run =
      transformer(Args{"train", "--resume", damaged.string(), "--steps", "9"}, dir);
  INFO(bad_rng_run);
  CHECK(bad_rng_run.status == 1);
  CHECK_THAT(bad_rng_run.err,
             Contains("metadata \"rng.batches\" is \"0123\", not a generator state"));
  gf::nn::NamedTensors fewer;
  for (const auto& [name, tensor] : state.tensors)
    if (name != "adam.v.embed.weight") fewer.emplace_back(name, tensor);
  fewer.emplace_back("adam.v.embed.weights", state.tensors.front().second);
  gf::nn::save_safetensors(dir.file("damaged.train-state.safetensors"), fewer, state.metadata);
  const Run missing = transformer(Args{"train", "--resume", damaged.string(), "--steps", "9"}, dir);
  INFO(missing);
  CHECK(missing.status == 1);
  CHECK_THAT(missing.err, Contains("tensor \"adam.v.embed.weight\" is missing"));

  // A checkpoint one save ahead of its state (a kill between writing the two files, here
  // copied in by hand): the state holds its own weights, so the run continues from them.
  const Run other = transformer(words(kCopy + " --steps 6") + Args{"--save", ckpt}, dir);
  REQUIRE(other.status == 0);
  fs::copy_file(state_path, dir / "alone.train-state.safetensors");
  const Run ahead =
      transformer(Args{"train", "--resume", dir.file("alone.safetensors"), "--steps", "9"}, dir);
  INFO(ahead);
  CHECK(ahead.status == 0);
  CHECK_THAT(ahead.err, Contains("holds other weights than its training state"));
  CHECK_THAT(ahead.err, Contains("at step 6 of 9"));
  const Run straight =
      transformer(words(kCopy + " --steps 9") + Args{"--save", dir.file("nine.safetensors")}, dir);
  REQUIRE(straight.status == 0);
  CHECK(read_file(dir / "alone.safetensors") == read_file(dir / "nine.safetensors"));
}

TEST_CASE("SIGINT and SIGTERM during training save a checkpoint that resumes",
          "[cli][resume][signals]") {
  for (const int signal_number : {SIGINT, SIGTERM}) {
    TempDir dir;
    const std::string ckpt = dir.file("m.safetensors");
    const pid_t pid = start(words(kCopy + " --steps 1000000") + Args{"--save", ckpt}, dir);
    // Wait for the first progress line: the handlers are installed before the first step.
    for (int i = 0;
         i < 600 && read_file(dir / "stderr").find("1/1000000 loss") == std::string::npos; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    REQUIRE(kill(pid, signal_number) == 0);
    const Run stopped = finish(pid, dir);
    INFO(stopped);
    CHECK(stopped.status == 128 + signal_number);
    CHECK_THAT(stopped.err, Contains(signal_number == SIGINT ? "stopped by SIGINT after step "
                                                             : "stopped by SIGTERM after step "));
    CHECK_THAT(stopped.err, Contains("transformer train --resume " + ckpt));
    const gf::nn::SafetensorsFile state =
        gf::nn::load_safetensors(dir.file("m.train-state.safetensors"));
    const int64_t step = gf::nn::metadata_int(state.metadata, "step", "state");
    CHECK(step >= 1);

    const Run resumed =
        transformer(Args{"train", "--resume", ckpt, "--steps", std::to_string(step + 3)}, dir);
    INFO(resumed);
    CHECK(resumed.status == 0);
    CHECK_THAT(resumed.err, Contains("resuming " + ckpt + " at step " + std::to_string(step)));
  }
}

TEST_CASE("a checkpoint write killed at any moment leaves the old or the new file, whole",
          "[nn][safetensors][resume]") {
  // Two versions of a 16 MB checkpoint, every value 1 or every value 2: a torn file would
  // fail to load or mix the two.
  const auto version = [](float value) {
    return gf::nn::NamedTensors{{"big", gf::Tensor::full({4 << 20}, value)},
                                {"small", gf::Tensor::full({7}, value)}};
  };
  const gf::nn::NamedTensors ones = version(1.0f), twos = version(2.0f);
  for (const int wait_ms : {0, 7, 23, 61, 150}) {
    TempDir dir;
    const std::string path = dir.file("m.safetensors");
    gf::nn::save_safetensors(path, ones);
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {  // saves the two versions in turn until killed
      try {
        for (int i = 0;; ++i) gf::nn::save_safetensors(path, i % 2 == 0 ? twos : ones);
      } catch (...) {
        _exit(1);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms));
    REQUIRE(kill(pid, SIGKILL) == 0);
    int raw = 0;
    REQUIRE(waitpid(pid, &raw, 0) == pid);
    CHECK((WIFSIGNALED(raw) && WTERMSIG(raw) == SIGKILL));

    const gf::nn::SafetensorsFile file = gf::nn::load_safetensors(path);
    REQUIRE(file.tensors.size() == 2);
    const float first = file.tensors[0].second.data()[0];
    CHECK((first == 1.0f || first == 2.0f));
    for (const auto& [name, tensor] : file.tensors) {
      const float* v = tensor.data();
      CHECK(std::all_of(v, v + tensor.numel(), [&](float x) { return x == first; }));
    }
    // At most the one temporary file the killed write had open.
    int temporaries = 0;
    for (const std::string& name : dir.listing()) temporaries += name != "m.safetensors";
    CHECK(temporaries <= 1);
  }
}

TEST_CASE("train removes the temporary files that killed writes of its checkpoint left",
          "[cli][resume]") {
  TempDir dir;
  const std::string ckpt = dir.file("m.safetensors");
  // Process ids above the kernel's limit (at most 2^22) belong to no running process.
  const std::vector<std::string> stale = {"m.safetensors.tmp-99999999-0",
                                          "m.train-state.safetensors.tmp-99999998-3"};
  for (const std::string& name : stale) std::ofstream(dir / name) << "torn";
  const std::string own = "m.safetensors.tmp-" + std::to_string(getpid()) + "-0";  // alive
  std::ofstream(dir / own) << "in progress";
  const Run r = transformer(words(kCopy + " --steps 2") + Args{"--save", ckpt}, dir);
  INFO(r);
  REQUIRE(r.status == 0);
  for (const std::string& name : stale) CHECK_FALSE(fs::exists(dir / name));
  CHECK(fs::exists(dir / own));
}

TEST_CASE("a loss that is not finite stops training and keeps the last good weights",
          "[cli][resume][errors]") {
  TempDir dir;
  const std::string ckpt = dir.file("m.safetensors");
  // A constant rate of 10^4 without clipping: the weights grow until the loss overflows.
  const Run r = transformer(words(kCopy + " --steps 200 --optimizer sgd --schedule constant "
                                          "--lr 1e4") +
                                Args{"--save", ckpt},
                            dir);
  INFO(r);
  CHECK(r.status == 1);
  const bool loss_or_gradient = r.err.find(": the loss is ") != std::string::npos ||
                                r.err.find(": the gradient of ") != std::string::npos;
  CHECK(loss_or_gradient);
  CHECK_THAT(r.err, Contains("transformer: error: step "));
  CHECK_THAT(r.err, Contains(ckpt + " holds the weights before it"));

  // The saved weights load and are finite, and the state says which step they are from.
  gf::Rng rng(0);
  const gf::nn::SafetensorsFile file = gf::nn::load_safetensors(ckpt);
  gf::Transformer model(gf::TransformerConfig::from_checkpoint(file, ckpt), rng);
  gf::nn::load_checkpoint(file, ckpt, model);
  for (const auto& [name, p] : model.named_parameters()) {
    INFO(name);
    CHECK(std::all_of(p.data(), p.data() + p.numel(), [](float x) { return std::isfinite(x); }));
  }
  const gf::nn::SafetensorsFile state =
      gf::nn::load_safetensors(dir.file("m.train-state.safetensors"));
  const int64_t good_steps = gf::nn::metadata_int(state.metadata, "step", "state");
  CHECK_THAT(r.err, Contains("step " + std::to_string(good_steps + 1) + ": the "));
  CHECK(good_steps < 200);
}
