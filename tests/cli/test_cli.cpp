// The `transformer` command, run as a user runs it: the real binary in a shell, with stdin,
// stdout and stderr in files and the exit status checked. One small copy model is trained
// once (the first test that needs it) and then decoded, scored and drawn by the others.
//
// The copy task (data/tasks.h):  src = c1 ... cn eos,  tgt = bos c1 ... cn eos,  c in [4, 11).
// A model that has learned it attends from target position i to source position i; the
// heatmaps `attention` draws cannot easily be read back, so one test loads the checkpoint
// in-process instead and checks that its cross-attention is that diagonal.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "autograd/graph.h"
#include "models/transformer.h"
#include "nn/checkpoint.h"
#include "nn/safetensors.h"
#include "tests/support/program.h"
#include "tests/support/temp_dir.h"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using gf::testing::program_command;
using gf::testing::TempDir;

namespace {

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// 'text' for sh, with each ' written as '\''.
std::string quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

struct Result {
  int status = -1;  // the exit code; 128 + N when killed by signal N (a crash)
  std::string out, err;
};

std::ostream& operator<<(std::ostream& os, const Result& r) {
  return os << "exit " << r.status << "\n--- stdout:\n" << r.out << "--- stderr:\n" << r.err;
}

using Args = std::vector<std::string>;

// "train --steps 20" -> {"train", "--steps", "20"}: arguments as typed, for those without
// spaces; paths, which may hold spaces, are added as whole elements.
Args words(const std::string& text) {
  std::istringstream in(text);
  return Args(std::istream_iterator<std::string>(in), std::istream_iterator<std::string>());
}

Args operator+(Args a, const Args& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Runs `transformer args...` with input on stdin, in a scratch directory, so that whatever a
// run writes by default (train's out/model.safetensors) lands there.
Result transformer(const Args& args, const std::string& input = "") {
  static TempDir io;  // the captured streams of every run, each overwritten by the next
  const fs::path in = io / "stdin", out = io / "stdout", err = io / "stderr";
  write_file(in, input);
  std::string command = "cd " + quote(io.path().string()) + " &&";
  for (const std::string& word :
       program_command((fs::path(GRADFORMER_BIN_DIR) / "transformer").string()) + args)
    command += " " + quote(word);
  command += " <" + quote(in) + " >" + quote(out) + " 2>" + quote(err);
  const int raw = std::system(command.c_str());
  REQUIRE(raw != -1);
  Result r;
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
  r.out = read_file(out);
  r.err = read_file(err);
  return r;
}

bool is_png(const fs::path& path) {
  return read_file(path).starts_with("\x89PNG\r\n\x1a\n");
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The copy model that decode, score and attention are tested with: one layer each side, so
// the last decoder layer's cross-attention is the only place the copy can happen. 300 steps
// of 64 fresh sequences of length 6 decode 100 fresh ones exactly for each of the seeds 1 to
// 12 (about 1 s in a Release build); the 2-layer model, at 250 to 400 steps of 32, did not.
constexpr int kLayers = 1, kHeads = 2;
const std::string kCopyTraining = "train --task copy --length 6 --layers " +
                                  std::to_string(kLayers) + " --d-model 32 --d-ff 64 --heads " +
                                  std::to_string(kHeads) +
                                  " --batch 64 --steps 300 --warmup 100 --threads 2 --seed 3";

struct TrainedCopy {
  TrainedCopy() : result(transformer(words(kCopyTraining) + Args{"--save", ckpt.string()})) {}

  TempDir dir;
  fs::path ckpt = dir / "copy.safetensors";
  Result result;
};

// Trained on first use, then shared by the tests that follow.
const TrainedCopy& trained_copy() {
  static const TrainedCopy trained;
  INFO(trained.result);
  REQUIRE(trained.result.status == 0);
  return trained;
}

// An untrained model's checkpoint, for tests that need a valid file rather than a good model.
fs::path tiny_checkpoint(const TempDir& dir) {
  const fs::path path = dir / "tiny.safetensors";
  const Result r = transformer(
      words("train --steps 1 --batch 2 --length 3 --layers 1 --d-model 8 --d-ff 8 --heads 2") +
      Args{"--save", path.string()});
  INFO(r);
  REQUIRE(r.status == 0);
  return path;
}

// Copy sources of content length 6 (the only length the model saw), each without its eos.
const std::vector<std::string> kContents = {"5 6 7 8 9 10", "10 9 8 7 6 5", "4 7 4 7 10 4",
                                            "6 4 9 5 10 8", "8 8 5 5 9 9",  "7 10 6 4 8 5"};

// A command that must be refused: exit non-zero (not by a signal), say `message` on stderr,
// and print nothing on stdout (in particular, a refused train never trains).
struct Refusal {
  Args args;
  std::string message;  // expected on stderr
  std::string input = "";
};

void expect_refused(const std::vector<Refusal>& cases) {
  for (const Refusal& c : cases) {
    const Result r = transformer(c.args, c.input);
    std::string command = "transformer";
    for (const std::string& arg : c.args) command += " " + arg;
    INFO(command << "\n" << r);
    CHECK(r.status != 0);
    CHECK(r.status < 128);
    CHECK_THAT(r.err, Contains(c.message));
    CHECK(r.out.empty());
  }
}

}  // namespace

TEST_CASE("help for the command and each subcommand names the main flags", "[cli]") {
  const std::vector<std::pair<Args, std::vector<std::string>>> cases = {
      {{"--help"}, {"train", "score", "decode", "attention", "translate", "eval", "generate"}},
      {{"train", "--help"},
       {"--task", "--pairs", "--init", "--layers", "--d-model", "--d-ff", "--heads", "--steps",
        "--batch", "--seed", "--threads", "--save", "--data", "--dev", "--split", "--tokenizer",
        "--vocab-size", "--batch-tokens", "--positions"}},
      {{"score", "--help"}, {"--ckpt", "--pairs"}},
      {{"decode", "--help"}, {"--ckpt", "--beam", "--length-penalty", "--max-len"}},
      {{"attention", "--help"}, {"--ckpt", "--src", "--tgt", "--out", "--font"}},
      {{"translate", "--help"}, {"--ckpt", "--beam", "--length-penalty"}},
      {{"eval", "--help"},
       {"--ckpt", "--data", "--beam", "--length-penalty", "--alignment-layer", "--hypotheses"}},
      {{"sample", "--help"},
       {"--ckpt", "--prompt", "--length", "--temperature", "--top-k", "--top-p", "--count",
        "--seed"}},
      {{"generate", "--help"},
       {"--task", "--split", "--train", "--dev", "--test", "--seed", "--out"}}};
  for (const auto& [args, flags] : cases) {
    const Result r = transformer(args);
    INFO(r);
    CHECK(r.status == 0);
    for (const std::string& flag : flags) CHECK_THAT(r.out, Contains(flag));
  }
}

TEST_CASE("train learns the copy task and the other subcommands use its checkpoint",
          "[cli][train][decode][score][attention]") {
  // One test case with sections, not several, so that ctest (which runs each test case in a
  // process of its own) trains the model once.
  const TrainedCopy& t = trained_copy();

  SECTION("the run reaches 100% and writes a checkpoint and two curves") {
    const Result& r = t.result;
    INFO(r);
    CHECK_THAT(r.out, Contains("exact: 100.0% of 100 fresh sequences"));
    CHECK(fs::file_size(t.ckpt) > 0);
    CHECK(is_png(t.dir / "copy.loss.png"));
    CHECK(is_png(t.dir / "copy.lr.png"));
    // stderr is a file, not a terminal: plain progress lines, no \r redraws.
    CHECK_THAT(r.err, Contains("model: "));
    CHECK_THAT(r.err, Contains("\n300/300 loss "));
    CHECK(r.err.find('\r') == std::string::npos);
  }

  SECTION("decode gives back the source content, greedy and with beam search") {
    std::string input;
    for (const std::string& content : kContents) input += content + " 2\n";
    for (const std::string beam : {"1", "4"}) {
      const Result r =
          transformer(Args{"decode", "--ckpt", t.ckpt.string(), "--beam", beam}, input);
      INFO("--beam " << beam << "\n" << r);
      REQUIRE(r.status == 0);
      CHECK(lines_of(r.out) == kContents);
    }
  }

  SECTION("score prints one finite NLL per pair, lower for the right target") {
    TempDir dir;
    // Each source twice: with its copy, then with the copy's first two tokens swapped.
    std::string pairs;
    for (const std::string& content : kContents) {
      Args w = words(content);
      std::swap(w[0], w[1]);
      if (w[0] == w[1]) w[0] = w[0] == "4" ? "5" : "4";  // still wrong when they are equal
      std::string wrong;
      for (const std::string& id : w) wrong += id + " ";
      pairs += content + " 2\t1 " + content + " 2\n";
      pairs += content + " 2\t1 " + wrong + "2\n";
    }
    write_file(dir / "pairs.tsv", pairs);
    const Result r =
        transformer({"score", "--ckpt", t.ckpt.string(), "--pairs", (dir / "pairs.tsv").string()});
    INFO(r);
    REQUIRE(r.status == 0);
    const std::vector<std::string> lines = lines_of(r.out);
    REQUIRE(lines.size() == 2 * kContents.size());
    std::vector<double> nll;
    for (const std::string& line : lines) {
      size_t used = 0;
      nll.push_back(std::stod(line, &used));
      CHECK(used == line.size());
      CHECK(std::isfinite(nll.back()));
      CHECK(nll.back() >= 0.0);
    }
    for (size_t i = 0; i < kContents.size(); ++i) {
      INFO(kContents[i]);
      CHECK(nll[2 * i] < nll[2 * i + 1]);
    }
  }

  SECTION("attention draws every layer and head of the three kinds, and a grid of each") {
    TempDir dir;
    const fs::path out = dir / "att";
    const Result r = transformer(
        {"attention", "--ckpt", t.ckpt.string(), "--src", "5 6 7 8 9 2", "--out", out.string()});
    INFO(r);
    REQUIRE(r.status == 0);
    std::vector<std::string> expected;
    for (const std::string kind : {"encoder_self", "decoder_self", "cross"}) {
      for (int layer = 1; layer <= kLayers; ++layer)
        for (int head = 1; head <= kHeads; ++head)
          expected.push_back(kind + "_layer" + std::to_string(layer) + "_head" +
                             std::to_string(head) + ".png");
      expected.push_back(kind + "_grid.png");
    }
    for (const std::string& name : expected) {
      INFO(name);
      CHECK(is_png(out / name));
    }
    CHECK(std::distance(fs::directory_iterator(out), fs::directory_iterator()) ==
          static_cast<std::ptrdiff_t>(expected.size()));
    CHECK_THAT(r.out, Contains("wrote " + std::to_string(expected.size()) + " images"));
  }

  // What the cross-attention heatmap shows, as a number: the copy model's target position i
  // (which predicts c_{i+1} = src[i]) attends to source position i.
  SECTION("cross-attention is the diagonal") {
    // As the command loads a checkpoint (cli/common.cpp): configuration first, then weights.
    const std::string path = t.ckpt.string();
    const gf::TransformerConfig config =
        gf::TransformerConfig::from_metadata(gf::nn::load_safetensors(path).metadata, path);
    gf::Rng rng(0);
    gf::Transformer model(config, rng);
    gf::nn::load_checkpoint(path, model);
    REQUIRE(config.decoder_layers == kLayers);

    model.eval();
    model.record_attention(true);
    const std::vector<int32_t> src = {5, 6, 7, 8, 9, 10, 2}, tgt_in = {1, 5, 6, 7, 8, 9, 10};
    const auto n = static_cast<int64_t>(src.size());
    {
      gf::NoGrad no_grad;
      model.forward(gf::IndexTensor::from({1, n}, src), gf::IndexTensor::from({1, n}, tgt_in));
    }
    const gf::Tensor probs = model.attention(gf::AttentionKind::Cross).back();  // [1, H, T, S]
    REQUIRE(probs.dim(1) == kHeads);
    REQUIRE(probs.dim(2) == n);
    REQUIRE(probs.dim(3) == n);
    // Each row sums to 1, so the heads' mean holds n units of mass in all.
    double diagonal = 0.0;
    for (int64_t h = 0; h < kHeads; ++h)
      for (int64_t i = 0; i < n; ++i) diagonal += probs.data()[(h * n + i) * n + i];
    const double share = diagonal / static_cast<double>(kHeads * n);
    INFO("share of cross-attention on the diagonal: " << share);
    CHECK(share > 0.5);
  }
}

TEST_CASE("train with the same seed writes the same bytes and another seed does not",
          "[cli][train]") {
  TempDir dir;
  auto run = [&](const std::string& seed, const std::string& name) {
    const Result r = transformer(words("train --task copy --length 5 --layers 1 --d-model 16 "
                                       "--d-ff 32 --heads 2 --batch 16 --steps 30 --threads 2") +
                                 Args{"--seed", seed, "--save", (dir / name).string()});
    INFO(r);
    REQUIRE(r.status == 0);
    return read_file(dir / name);
  };
  const std::string first = run("3", "a.safetensors");
  CHECK(first == run("3", "b.safetensors"));
  CHECK(first != run("4", "c.safetensors"));
}

TEST_CASE("train --pairs with --batch as large as the file trains on all of it each step",
          "[cli][train]") {
  TempDir dir;
  // 16 copy pairs of 5 content tokens from a fixed generator. At a constant rate of 0.003,
  // 600 steps learn such a file exactly for each of the seeds 1 to 10 (about 0.4 s); with the
  // noam schedule, whose rate peaks at 0.0125 for d_model 32, some seeds missed a pair.
  constexpr int kPairs = 16;
  std::string pairs;
  uint32_t state = 12345;
  for (int i = 0; i < kPairs; ++i) {
    std::string content;
    for (int j = 0; j < 5; ++j) {
      state = state * 1664525u + 1013904223u;
      content += std::to_string(4 + (state >> 16) % 7) + (j < 4 ? " " : "");
    }
    pairs += content + " 2\t1 " + content + " 2\n";
  }
  const fs::path file = dir / "pairs.tsv";
  write_file(file, pairs);
  // Returns stdout and the checkpoint's bytes.
  auto train = [&](int batch, int steps) {
    const fs::path save =
        dir / ("batch" + std::to_string(batch) + "_steps" + std::to_string(steps) + ".safetensors");
    const Result r = transformer(
        words("train --schedule constant --lr 0.003 --layers 1 --d-model 32 --d-ff 64 --heads 2 "
              "--threads 2 --seed 1") +
        Args{"--batch", std::to_string(batch), "--steps", std::to_string(steps), "--pairs",
             file.string(), "--save", save.string()});
    INFO(r);
    REQUIRE(r.status == 0);
    return std::make_pair(r.out, read_file(save));
  };
  CHECK_THAT(train(kPairs, 600).first,
             Contains("exact: 100.0% of " + std::to_string(kPairs) + " training pairs"));

  // A batch larger than the file is the whole file too, so it trains identically; half the
  // file per step does not.
  const std::string whole = train(kPairs, 20).second;
  CHECK(whole == train(1000, 20).second);
  CHECK(whole != train(kPairs / 2, 20).second);
}

TEST_CASE("train --init and --resume refuse a shape flag that the checkpoint contradicts",
          "[cli][train]") {
  TempDir dir;
  const fs::path saved = tiny_checkpoint(dir);  // 1+1 layers, d_model 8, d_ff 8, 2 heads
  const std::string held = ", but " + saved.string() + " holds a model with ";
  expect_refused({{{"train", "--init", saved.string(), "--d-model", "16"},
                   "--d-model asks for d_model 16" + held + "d_model 8: a checkpoint fixes"},
                  {{"train", "--init", saved.string(), "--norm-first"},
                   "--norm-first asks for pre-norm layers" + held + "post-norm layers"},
                  {{"train", "--init", saved.string(), "--positions", "learned"},
                   "--positions asks for learned positions" + held + "sinusoidal positions"},
                  {{"train", "--resume", saved.string(), "--steps", "5", "--heads", "4"},
                   "--heads asks for 4 heads" + held + "2 heads"},
                  {{"train", "--resume", saved.string(), "--steps", "5", "--layers", "2"},
                   "--layers asks for 2+2 layers" + held + "1+1 layers"}});
  // Flags that agree with the file are no contradiction.
  const Result same = transformer(
      words("train --steps 1 --batch 2 --length 3 --layers 1 --d-model 8 --positions sinusoidal") +
      Args{"--init", saved.string(), "--save", (dir / "same.safetensors").string()});
  INFO(same);
  CHECK(same.status == 0);
}

TEST_CASE("train --init keeps --dropout since the checkpoint does not store it", "[cli][train]") {
  TempDir dir;
  const fs::path init = tiny_checkpoint(dir);
  auto fine_tune = [&](const std::string& dropout, const std::string& name) {
    const Result r = transformer(
        words("train --length 6 --batch 16 --steps 5 --seed 1") +
        Args{"--init", init.string(), "--dropout", dropout, "--save", (dir / name).string()});
    INFO(r);
    REQUIRE(r.status == 0);
    CHECK_THAT(r.err, Contains("starting from "));
    return read_file(dir / name);
  };
  CHECK(fine_tune("0", "a.safetensors") != fine_tune("0.3", "b.safetensors"));
}

TEST_CASE("train --positions learned writes a checkpoint with the learned table",
          "[cli][train][positions]") {
  TempDir dir;
  const fs::path ckpt = dir / "learned.safetensors";
  const Result r = transformer(words("train --task copy --positions learned --steps 5 --batch 8 "
                                     "--length 4 --layers 1 --d-model 16 --d-ff 16 --heads 2 "
                                     "--max-len 20 --threads 2") +
                               Args{"--save", ckpt.string()});
  INFO(r);
  REQUIRE(r.status == 0);
  const gf::nn::SafetensorsFile file = gf::nn::load_safetensors(ckpt.string());
  CHECK(file.metadata.at("positions") == "learned");
  bool has_table = false;
  for (const auto& [name, tensor] : file.tensors)
    if (name == "pos_embed.weight") {
      has_table = true;
      CHECK(tensor.shape() == gf::Shape{20, 16});
    }
  CHECK(has_table);
  CHECK(gf::TransformerConfig::from_checkpoint(file, ckpt.string()).learned_positions);
  // The other commands load it, and decoding runs the cache over the learned rows.
  const Result decoded = transformer(Args{"decode", "--ckpt", ckpt.string()}, "5 6 7 2\n");
  INFO(decoded);
  CHECK(decoded.status == 0);
  CHECK(lines_of(decoded.out).size() == 1);

  // Without the flag, sinusoids, and no "positions" key: the file is as it always was.
  const fs::path plain = dir / "plain.safetensors";
  REQUIRE(transformer(words("train --task copy --positions sinusoidal --steps 1 --batch 2 "
                            "--length 3 --layers 1 --d-model 8 --d-ff 8 --heads 2") +
                      Args{"--save", plain.string()})
              .status == 0);
  CHECK(gf::nn::load_safetensors(plain.string()).metadata.count("positions") == 0);

  expect_refused(
      {{{"train", "--positions", "banana"}, "--positions: banana not in {sinusoidal,learned}"},
       {{"train", "--positions"}, "--positions: 1 required TEXT:{sinusoidal,learned} missing"}});
}

TEST_CASE("train --eval-every writes one plain line per check when stderr is a log",
          "[cli][train]") {
  TempDir dir;
  const Result r = transformer(words("train --length 4 --layers 1 --d-model 16 --d-ff 16 "
                                     "--heads 2 --batch 8 --steps 20 --eval-every 10") +
                               Args{"--save", (dir / "m.safetensors").string()});
  INFO(r);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.err, Contains("\nstep 10: "));
  CHECK(r.err.find("\n\n") == std::string::npos);
}

TEST_CASE("mistakes exit non-zero with a message on stderr and never crash", "[cli][errors]") {
  TempDir dir;
  const std::string ckpt = tiny_checkpoint(dir).string();  // vocabulary [0, 11)
  const std::string missing = (dir / "missing.tsv").string();
  const std::string bad = (dir / "bad.tsv").string();
  write_file(bad, "5 6 2\t1 5 6 2\n5 6 2 1 5 6 2\n");  // line 2 has no tab
  const std::string truncated = (dir / "truncated.safetensors").string();
  write_file(truncated, read_file(ckpt).substr(0, 300));
  const std::string good = (dir / "good.tsv").string();
  write_file(good, "5 6 2\t1 5 6 2\n");
  const std::string not_a_dir = (dir / "file").string();
  write_file(not_a_dir, "");
  const std::string small = "--d-model=16";  // keeps the runs that get as far as a model tiny

  const std::vector<Refusal> cases = {
      {{"trian"}, "unknown command \"trian\""},
      {{"train", "--heads", "3", "--d-model", "32"},
       "heads (3) must be positive and divide d_model (32)"},
      {{"train", "--steps", "0"}, "--steps must be positive, got 0"},
      {{"train", "--task", "cpy"},
       "--task: cpy not in {copy,reverse,translate,toy-translation,lm}"},
      {{"train", "--pairs", missing}, "File does not exist: " + missing},
      {{"train", small, "--pairs", bad}, bad + ":2: expected SRC<TAB>TGT, found no tab"},
      {{"train", "--label-smoothing", "1.5"}, "--label-smoothing 1.5 is outside [0, 1)"},
      {{"train", small, "--vocab-size", "3"}, "vocab_size is 3 but must be at least 5"},
      {{"train", "--layers", "x"}, "--layers = x"},
      {{"train", "--steps", "1", "--save", not_a_dir + "/m.safetensors"}, not_a_dir},
      {{"decode", "--ckpt", ckpt},
       "stdin: id 12 on line 2 is out of range [0, 11)",
       "5 6 2\n12 5 2\n"},
      {{"decode", "--ckpt", ckpt, "--beam", "0"}, "--beam must be positive, got 0", "5 6 2\n"},
      {{"decode", "--ckpt", ckpt, "--max-len", "-1"}, "--max-len must not be negative, got -1"},
      {{"score", "--ckpt", truncated, "--pairs", good},
       "transformer: error: checkpoint: " + truncated},
      {{"attention", "--ckpt", ckpt, "--src", "5 x 7"}, "--src: \"x\" is not a token id"},
      {{"attention", "--ckpt", ckpt, "--src", "5 12 2"},
       "--src: token id 12 is out of range [0, 11)"},
      {{"attention", "--ckpt", ckpt, "--src", "5 6 2", "--font", bad},
       "transformer: error: text: " + bad + " is not a TrueType or OpenType font"},
      {{"attention", "--ckpt", ckpt, "--src", "5 6 2", "--font", missing},
       "File does not exist: " + missing},
  };
  expect_refused(cases);
}

TEST_CASE("generate writes the toy language, and a model trained on its files translates text",
          "[cli][translate][eval][generate]") {
  TempDir dir;
  const fs::path toy = dir / "toy", again = dir / "again";
  const Args sizes = words("generate --train 3000 --dev 100 --test 100 --seed 2");
  const Result g = transformer(sizes + Args{"--out", toy.string()});
  INFO(g);
  REQUIRE(g.status == 0);
  CHECK_THAT(g.out, Contains("train.tsv (3000 pairs)"));
  REQUIRE(transformer(sizes + Args{"--out", again.string()}).status == 0);
  for (const char* part : {"train.tsv", "dev.tsv", "test.tsv"})
    CHECK(read_file(toy / part) == read_file(again / part));  // the seed fixes every byte
  const std::vector<std::string> test_lines = lines_of(read_file(toy / "test.tsv"));
  CHECK(test_lines.size() == 100);
  for (const std::string& line : test_lines)
    CHECK(std::count(line.begin(), line.end(), '\t') == 2);  // source, target, alignment

  // A small model, trained briefly: it has not learned the language, but far more than
  // nothing (BLEU 27 with this seed; an untrained model scores about 0).
  const fs::path ckpt = dir / "toy.safetensors";
  const Result t = transformer(
      words("train --task translate --d-model 32 --d-ff 64 --heads 2 --layers 1 --steps 200 "
            "--warmup 100 --lr 0.5 --batch-tokens 1500 --threads 2") +
      Args{"--data", (toy / "train.tsv").string(), "--dev", (toy / "dev.tsv").string(), "--save",
           ckpt.string()});
  INFO(t);
  REQUIRE(t.status == 0);
  CHECK_THAT(t.err, Contains("data: 3000 training pairs, 100 dev pairs, bpe tokenizer of"));
  const size_t at = t.out.find("BLEU = ");
  REQUIRE(at != std::string::npos);
  CHECK(std::stod(t.out.substr(at + 7)) > 20.0);
  CHECK_THAT(t.out, Contains("on 100 dev pairs (greedy), chrF = "));

  SECTION("translate turns lines into lines, blank ones kept in place") {
    const Result r = transformer(Args{"translate", "--ckpt", ckpt.string()},
                                 "the cat sees a dog .\n\nmy old books like these rivers .\n");
    INFO(r);
    REQUIRE(r.status == 0);
    const std::vector<std::string> out = lines_of(r.out);
    REQUIRE(out.size() == 3);
    CHECK(!out[0].empty());
    CHECK(out[1].empty());
    CHECK(out[2].back() == '.');
  }

  SECTION("eval scores a file with BLEU, chrF and, for the toy language, the alignment") {
    for (const std::string beam : {"1", "4"}) {
      const Result r =
          transformer(Args{"eval", "--ckpt", ckpt.string(), "--data", (toy / "test.tsv").string(),
                           "--beam", beam, "--hypotheses", (dir / "hyp.txt").string()});
      INFO(r);
      REQUIRE(r.status == 0);
      CHECK_THAT(r.out, Contains("100 pairs from"));
      CHECK_THAT(r.out, Contains("BLEU = "));
      CHECK_THAT(r.out, Contains("chrF2 = "));
      CHECK_THAT(r.out, Contains("aligned target words attend most to their source word"));
      CHECK(lines_of(read_file(dir / "hyp.txt")).size() == 100);
    }
  }

  SECTION("attention reads text and draws every map") {
    const Result r = transformer(Args{"attention", "--ckpt", ckpt.string(), "--src",
                                      "the cat sees a dog .", "--out", (dir / "maps").string()});
    INFO(r);
    REQUIRE(r.status == 0);
    CHECK(is_png(dir / "maps" / "cross_layer1_head2.png"));
    CHECK(is_png(dir / "maps" / "cross_grid.png"));
  }
}

TEST_CASE("text commands refuse what they cannot read, naming it", "[cli][translate][errors]") {
  TempDir dir;
  const std::string ids_model = tiny_checkpoint(dir).string();
  const std::string bad = (dir / "bad.tsv").string();
  write_file(bad, "Hi.\tSalut.\nno tab\n");
  const std::vector<Refusal> cases = {
      {{"translate", "--ckpt", ids_model}, "holds no tokenizer", "hello\n"},
      {{"eval", "--ckpt", ids_model, "--data", bad}, "holds no tokenizer"},
      {{"train", "--task", "translate"}, "--task translate needs --data TRAIN.tsv"},
      {{"train", "--task", "translate", "--data", bad}, bad + ":2: expected SOURCE<TAB>TARGET"},
      {{"train", "--task", "copy", "--data", bad}, "--data is for --task translate"},
      {{"generate", "--split", "lenght"}, "--split: lenght not in"},
      {{"generate", "--train", "0"}, "train is 0 but must be at least 1"},
  };
  expect_refused(cases);
}

TEST_CASE("every flag that makes no sense is refused, saying what is allowed",
          "[cli][errors][flags]") {
  TempDir dir;
  const std::string ids_model = tiny_checkpoint(dir).string();
  const std::string pairs = (dir / "pairs.tsv").string();
  write_file(pairs, "the cat sees a dog .\tmiru lo tavi uno ka vido .\t2-0 0-1 4-2 3-3 5-5 6-6\n");
  const std::string empty = (dir / "empty.tsv").string();
  write_file(empty, "\n\n");
  const std::string text_model = (dir / "text.safetensors").string();
  {
    const Result r = transformer(
        words("train --task translate --steps 1 --layers 1 --d-model 16 --d-ff 16 --heads 2") +
        Args{"--data", pairs, "--save", text_model});
    INFO(r);
    REQUIRE(r.status == 0);
  }
  const std::vector<Refusal> cases = {
      // The model's shape.
      {{"train", "--d-model", "0"}, "d_model must be positive, got 0"},
      {{"train", "--d-ff", "-3"}, "d_ff must be positive, got -3"},
      {{"train", "--heads", "0"}, "heads (0) must be positive and divide d_model (64)"},
      {{"train", "--layers", "0"}, "--layers must be positive, got 0"},
      {{"train", "--max-len", "0"}, "max_len must be in [1, 65536], got 0"},
      {{"train", "--dropout", "1.5"}, "dropout 1.5 is outside [0, 1)"},
      {{"train", "--vocab-size", "4"}, "vocab_size is 4 but must be at least 5"},
      // Training.
      {{"train", "--lr", "-1"}, "--lr must not be negative, got -1"},
      {{"train", "--warmup", "0"}, "--warmup must be positive, got 0"},
      {{"train", "--clip", "-1"}, "--clip must not be negative, got -1"},
      {{"train", "--batch", "0"}, "--batch must be positive, got 0"},
      {{"train", "--batch-tokens", "0"}, "--batch-tokens must be positive, got 0"},
      {{"train", "--eval-every", "-1"}, "--eval-every must not be negative, got -1"},
      {{"train", "--eval-count", "0"}, "--eval-count must be positive, got 0"},
      {{"train", "--threads", "-1"}, "--threads must not be negative, got -1"},
      {{"train", "--save-every", "-1"}, "--save-every must not be negative, got -1"},
      {{"train", "--optimizer", "adamw"}, "--optimizer: adamw not in {adam,sgd}"},
      {{"train", "--schedule", "linear"}, "--schedule: linear not in {noam,cosine,constant}"},
      {{"train", "--schedule", "cosine", "--steps", "100", "--warmup", "100"},
       "--schedule cosine needs more --steps than --warmup, got 100 and 100"},
      {{"train", "--minutes", "-1"}, "--minutes must not be negative, got -1"},
      {{"train", "--average", "-2"}, "--average must not be negative, got -2"},
      {{"train", "--seed", "-1"}, "must be a non-negative integer (below 2^64), got \"-1\""},
      {{"train", "--seed", "x"}, "must be a non-negative integer"},
      // Data.
      {{"train", "--length", "0"}, "min_len is 0 but must be at least 1"},
      {{"train", "--min-length", "5", "--length", "3"},
       "max_len is 3 but must be at least min_len (5)"},
      {{"train", "--tokenizer", "sentencepiece"},
       "--tokenizer: sentencepiece not in {bpe,word,char}"},
      {{"train", "--task", "translate", "--data", empty}, empty + ": no sentence pairs"},
      {{"train", "--task", "translate", "--max-len", "4", "--data", pairs},
       pairs + ":1: the pair has"},
      // Using a model.
      {{"decode", "--ckpt", ids_model, "--length-penalty", "-1"},
       "--length-penalty must not be negative, got -1"},
      {{"translate", "--ckpt", text_model, "--beam", "0"}, "--beam must be positive, got 0"},
      {{"translate", "--ckpt", text_model, "--length-penalty", "-0.5"},
       "--length-penalty must not be negative, got -0.5"},
      {{"eval", "--ckpt", text_model, "--data", pairs, "--alignment-layer", "5"},
       "--alignment-layer 5 does not exist: the decoder has layers 1 to 1"},
      {{"eval", "--ckpt", text_model, "--data", empty}, "no sentence pairs"},
      // Generating data.
      {{"generate", "--train", "0"}, "toy language: train is 0 but must be at least 1"},
      {{"generate", "--dev", "-5"}, "toy language: dev is -5 but must be at least 0"},
      {{"generate", "--test", "-1"}, "toy language: test is -1 but must be at least 0"},
      {{"generate", "--seed", "-1"}, "must be a non-negative integer"},
  };
  expect_refused(cases);
}

// ---- The same bits at every thread count ---------------------------------------------------
// Work is cut into chunks fixed by the problem's size (autograd/kernels/parallel.h), so the
// thread count decides only who computes what: the files and outputs must match byte for byte.
// The models are large enough that every kind of parallel loop and the threaded GEMM run.

// GRADFORMER_TEST_THREADS narrows the counts: the tsan preset runs one count ("4"), where the
// point is to look for data races, not to compare (ThreadSanitizer makes a run ~30x slower);
// the aarch64 preset compares two ("1 8"), since under qemu each training run takes a minute.
std::vector<std::string> thread_counts() {
  const char* env = std::getenv("GRADFORMER_TEST_THREADS");
  if (env == nullptr) return {"1", "2", "3", "4", "8"};
  return words(env);
}

TEST_CASE("threads: copy training, decoding and scoring give the same bytes at 1, 2, 3, 4, 8",
          "[cli][threads]") {
  TempDir dir;
  const std::string sources = "5 6 7 8 9 10 4 5 2\n10 9 8 7 6 5 4 4 2\n4 7 4 7 10 4 6 9 2\n";
  write_file(dir / "pairs.tsv", "5 6 7 8 2\t1 5 6 7 8 2\n9 9 4 2\t1 9 4 9 2\n");
  struct Run {
    std::string checkpoint, losses, greedy, beam, scores;
  };
  std::vector<Run> runs;
  const std::vector<std::string> counts = thread_counts();
  for (const std::string& threads : counts) {
    const fs::path ckpt = dir / ("copy" + threads + ".safetensors");
    const fs::path losses = dir / ("losses" + threads + ".tsv");
    const Result t = transformer(
        words("train --task copy --length 8 --layers 2 --d-model 64 --d-ff 256 --heads 4 "
              "--batch 64 --steps 40 --warmup 20 --dropout 0.1 --seed 5 --snapshots 3") +
        Args{"--threads", threads, "--save", ckpt.string(), "--log-losses", losses.string()});
    INFO(threads << " threads\n" << t);
    REQUIRE(t.status == 0);
    const Args model = {"--ckpt", ckpt.string(), "--threads", threads};
    const Result greedy = transformer(Args{"decode"} + model, sources);
    const Result beam = transformer(Args{"decode", "--beam", "4"} + model, sources);
    const Result scores =
        transformer(Args{"score", "--pairs", (dir / "pairs.tsv").string()} + model);
    REQUIRE(greedy.status == 0);
    REQUIRE(beam.status == 0);
    REQUIRE(scores.status == 0);
    runs.push_back({read_file(ckpt), read_file(losses), greedy.out, beam.out, scores.out});
  }
  REQUIRE(!runs.front().checkpoint.empty());
  REQUIRE(lines_of(runs.front().losses).size() == 40);
  for (size_t i = 1; i < runs.size(); ++i) {
    INFO(counts[i] << " threads against " << counts.front());
    CHECK(runs[i].losses == runs.front().losses);
    CHECK(runs[i].checkpoint == runs.front().checkpoint);
    CHECK(runs[i].greedy == runs.front().greedy);
    CHECK(runs[i].beam == runs.front().beam);
    CHECK(runs[i].scores == runs.front().scores);
  }
}

TEST_CASE("threads: toy translation training and evaluation give the same bytes at 1, 2, 3, 4, 8",
          "[cli][threads]") {
  TempDir dir;
  const fs::path toy = dir / "toy";
  REQUIRE(transformer(words("generate --train 1500 --dev 50 --test 50 --seed 4") +
                      Args{"--out", toy.string()})
              .status == 0);
  std::string first_checkpoint, first_hypotheses;
  for (const std::string& threads : thread_counts()) {
    const fs::path ckpt = dir / ("toy" + threads + ".safetensors");
    const fs::path hypotheses = dir / ("hyp" + threads + ".txt");
    const Result t = transformer(
        words("train --task translate --d-model 64 --d-ff 128 --heads 4 --layers 1 --steps 30 "
              "--warmup 20 --lr 0.5 --batch-tokens 1500 --dropout 0.1 --seed 2 --snapshots 3") +
        Args{"--threads", threads, "--data", (toy / "train.tsv").string(), "--dev",
             (toy / "dev.tsv").string(), "--save", ckpt.string()});
    INFO(threads << " threads\n" << t);
    REQUIRE(t.status == 0);
    const Result e =
        transformer(Args{"eval", "--ckpt", ckpt.string(), "--data", (toy / "test.tsv").string(),
                         "--beam", "4", "--threads", threads, "--hypotheses", hypotheses.string()});
    INFO(e);
    REQUIRE(e.status == 0);
    if (first_checkpoint.empty()) {
      first_checkpoint = read_file(ckpt);
      first_hypotheses = read_file(hypotheses);
      REQUIRE(lines_of(first_hypotheses).size() == 50);
      continue;
    }
    CHECK(read_file(ckpt) == first_checkpoint);
    CHECK(read_file(hypotheses) == first_hypotheses);
  }
}

namespace {

// The data a run's page inlines (viz/run_page.h, docs/run-page.md).
nlohmann::json page_data(const fs::path& page) {
  const std::string html = read_file(page);
  const std::string open = "<script type=\"application/json\" id=\"run-data\">";
  const size_t start = html.find(open);
  REQUIRE(start != std::string::npos);
  const size_t end = html.find("</script>", start);
  REQUIRE(end != std::string::npos);
  return nlohmann::json::parse(html.substr(start + open.size(), end - start - open.size()));
}

}  // namespace

// One test case for both, so that the copy model is trained once: under qemu a training run
// takes more than a minute.
TEST_CASE("train writes the run's page beside the checkpoint, and report one for any checkpoint",
          "[cli][page]") {
  SECTION("train's page") {
    const TrainedCopy& copy = trained_copy();
    const fs::path page = copy.dir / "copy.html";
    CHECK_THAT(copy.result.out, Contains("saved: " + page.string() + " (the run's page"));
    const nlohmann::json data = page_data(page);
    CHECK(data["format"] == "gradformer-run-page/1");
    CHECK(data["title"] == (copy.dir / "copy.safetensors").string());
    // The training loss, the learning rate and the dev metric, one loss per step.
    REQUIRE(data["curves"].size() == 3);
    CHECK(data["curves"][0]["series"][0]["y"].size() == 300);
    // 25 snapshots of 300 steps: 0, 12, 24, ..., 300, each of every layer and head.
    REQUIRE(data["snapshots"].size() == 25);
    CHECK(data["snapshots"][0]["step"] == 0);
    CHECK(data["snapshots"][24]["step"] == 300);
    REQUIRE(data["attention"].size() == 3);
    const nlohmann::json& first = data["attention"][0];
    const size_t src = first["source_tokens"].size(), tgt = first["target_next"].size();
    CHECK(src == 7);  // 6 symbols and </s>
    CHECK(first["target_read"][0] == "<s>");
    CHECK(first["target_next"][tgt - 1] == "</s>");
    for (const char* kind : {"encoder", "decoder", "cross"}) {
      REQUIRE(first[kind].size() == kLayers);
      REQUIRE(first[kind][0].size() == kHeads);
    }
    CHECK(first["encoder"][0][0].size() == src * src);
    CHECK(first["cross"][0][0].size() == tgt * src);
    // The trained model copies: in its one cross-attention layer, some head puts most of each
    // row's weight on the source position it copies (weights in thousandths).
    int diagonal_rows = 0;
    for (const auto& head : first["cross"][0]) {
      int rows = 0;
      for (size_t i = 0; i + 1 < tgt; ++i) rows += head[i * src + i].get<int>() > 500;
      diagonal_rows = std::max(diagonal_rows, rows);
    }
    CHECK(diagonal_rows == static_cast<int>(tgt) - 1);
    // Every sample was copied exactly, and the last dev-metric point says so too.
    REQUIRE(data["samples"].size() == 8);
    for (const auto& sample : data["samples"]) {
      CHECK(sample["output"] == sample["reference"]);
      CHECK(sample["score"] == 1.0);
    }
    CHECK(data["curves"][2]["series"][0]["y"].back() == 100.0);
  }

  SECTION("report's page") {
    const TrainedCopy& copy = trained_copy();
    const fs::path out = copy.dir / "report.html";
    const Result r = transformer(Args{"report", "--ckpt", copy.ckpt.string(), "--src",
                                      "5 6 7 8 9 10 2", "--out", out.string()});
    INFO(r);
    REQUIRE(r.status == 0);
    CHECK_THAT(r.out, Contains("wrote " + out.string()));
    const nlohmann::json data = page_data(out);
    REQUIRE(data["attention"].size() == 1);
    CHECK(data["attention"][0]["label"] == "5 6 7 8 9 10 2");
    CHECK(data["attention"][0]["target_next"] ==
          nlohmann::json::array({"5", "6", "7", "8", "9", "10", "</s>"}));
    CHECK(data["samples"][0]["output"] == "5 6 7 8 9 10");
    CHECK(data["snapshots"].size() == 25);  // from the training state beside the checkpoint
    CHECK(data["curves"].size() == 3);

    SECTION("without its training state, the page has no curves and needs --src") {
      TempDir dir;
      fs::copy_file(copy.ckpt, dir / "alone.safetensors");
      expect_refused(
          {{Args{"report", "--ckpt", (dir / "alone.safetensors").string()},
            "has no training state with snapshots beside it; give a sentence with "
            "--src"},
           {Args{"report", "--ckpt", (dir / "alone.safetensors").string(), "--src", "5 99 2"},
            "--src \"5 99 2\": token id 99 is out of range [0, 11)"}});
      const Result alone = transformer(
          Args{"report", "--ckpt", (dir / "alone.safetensors").string(), "--src", "4 5 2"});
      INFO(alone);
      REQUIRE(alone.status == 0);
      const nlohmann::json page = page_data(dir / "alone.html");  // the default: beside it
      CHECK(page["curves"].empty());
      CHECK(page["snapshots"].empty());
      CHECK(page["attention"].size() == 1);
    }
  }
}

// Sentence pairs with as many distinct words as real text has (the recipe is for corpora of
// 2000 or more): "w17 w342 w5" -> "v17 v342 v5", which a model can learn to copy word by word.
std::string made_up_pairs(int count, uint64_t seed) {
  std::string text;
  uint64_t state = seed;
  auto next_word = [&state] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int>((state >> 33) % 1500);
  };
  for (int i = 0; i < count; ++i) {
    std::string source, target;
    for (int w = 0; w < 3; ++w) {
      const std::string n = std::to_string(next_word());
      source += (w ? " w" : "w") + n;
      target += (w ? " v" : "v") + n;
    }
    text += source + "\t" + target + "\n";
  }
  return text;
}

TEST_CASE("train --task translate on real text follows the recipe and keeps the best weights",
          "[cli][train][recipe]") {
  TempDir dir;
  write_file(dir / "train.tsv", made_up_pairs(1200, 1));
  write_file(dir / "dev.tsv", made_up_pairs(30, 2));
  const fs::path ckpt = dir / "m.safetensors";
  const Args data = {"--data", (dir / "train.tsv").string(), "--dev", (dir / "dev.tsv").string()};
  const Result r = transformer(
      words("train --task translate --d-model 16 --d-ff 32 --layers 1 --steps 40 --threads 2") +
      data + Args{"--save", ckpt.string()});
  INFO(r);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.err, Contains("recipe for 1200 pairs of 7200 words ("));
  CHECK_THAT(r.err, Contains("pre-norm, dropout 0.1, label smoothing 0.1, cosine schedule"));
  CHECK_THAT(r.err, Contains("warm-up 200 steps (at most a tenth of the run)"));
  CHECK_THAT(r.err, Contains("\nstep 4: BLEU "));  // ten checks: every 4 steps
  CHECK_THAT(r.err, Contains("\nstep 36: BLEU "));
  CHECK_THAT(r.out, Contains("BLEU on 30 dev pairs (greedy): the last step's weights (40) "));
  CHECK_THAT(r.out, Contains("the average of the last 5 checkpoints "));

  SECTION("the training state continues from the last weights, whatever the checkpoint holds") {
    const Result more = transformer(Args{"train", "--resume", ckpt.string(), "--steps", "41"});
    INFO(more);
    CHECK(more.status != 0);  // the cosine ended at 40
    CHECK_THAT(more.err, Contains("falls to zero at step 40, so --steps 41 would train at a rate "
                                  "of zero"));
    CHECK_THAT(more.err, !Contains("holds other weights than its training state"));
  }
}

TEST_CASE("train --minutes plans a number of steps, and --steps with it repeats the run exactly",
          "[cli][train][budget]") {
  TempDir dir;
  const Args run = words(
      "train --length 4 --layers 1 --d-model 16 --d-ff 16 --heads 2 "
      "--batch 8 --warmup 5 --dropout 0.1 --threads 2");
  const Result planned =
      transformer(run + Args{"--minutes", "0.02", "--save", (dir / "a.safetensors").string()});
  INFO(planned);
  REQUIRE(planned.status == 0);
  const std::string marker = "--steps ";
  const size_t at = planned.err.find(" repeats this run exactly");
  REQUIRE(at != std::string::npos);
  const size_t from = planned.err.rfind(marker, at) + marker.size();
  const std::string steps = planned.err.substr(from, at - from);
  CHECK(std::stoll(steps) >= 6);  // at least the warm-up and one more
  const Result repeated =
      transformer(run + Args{"--steps", steps, "--save", (dir / "b.safetensors").string()});
  INFO(repeated);
  REQUIRE(repeated.status == 0);
  CHECK(read_file(dir / "a.safetensors") == read_file(dir / "b.safetensors"));

  const Result resumed =
      transformer(Args{"train", "--resume", (dir / "a.safetensors").string(), "--steps",
                       std::to_string(std::stoll(steps) + 10), "--minutes", "1"});
  INFO(resumed);
  CHECK(resumed.status != 0);
  CHECK_THAT(resumed.err, Contains("--minutes plans a new run; to continue one with --resume, give "
                                   "--steps, the total to reach"));
}

TEST_CASE("train --task lm makes a decoder-only model whose text sample prints, seeded",
          "[cli][train][sample]") {
  const TempDir dir("cli_lm");
  std::string text;
  for (int i = 0; i < 40; ++i) text += "a cat sat.\na dog ran.\n";
  write_file(dir / "train.txt", text);
  const fs::path ckpt = dir / "lm.safetensors";
  const Result trained = transformer(
      words("train --task lm --tokenizer char --d-model 32 --d-ff 64 --heads 2 --layers 1 "
            "--max-len 16 --batch 8 --steps 30 --warmup 5 --snapshots 2 --eval-count 4") +
      Args{"--data", (dir / "train.txt").string(), "--save", ckpt.string()});
  INFO(trained);
  REQUIRE(trained.status == 0);
  CHECK_THAT(trained.err, Contains("1 layers, decoder-only"));
  CHECK_THAT(trained.out, Contains("on the training text's"));
  CHECK_THAT(trained.out, Contains("the bigram model's"));

  const Args sample =
      words("sample --length 12 --seed 3 --top-k 5") + Args{"--ckpt", ckpt.string()};
  const Result first = transformer(sample + Args{"--prompt", "a c"});
  INFO(first);
  REQUIRE(first.status == 0);
  CHECK_THAT(first.out, StartsWith("a c"));
  CHECK(transformer(sample + Args{"--prompt", "a c"}).out == first.out);  // the seed decides
  const Result two = transformer(sample + Args{"--prompt", "a c", "--count", "2"});
  CHECK(lines_of(two.out).size() >= 3);  // two samples and the empty line between them
  expect_refused({
      {sample + Args{"--temperature", "0"}, "--temperature must be positive"},
      {sample + Args{"--top-p", "2"}, "--top-p must be in (0, 1]"},
      {words("decode") + Args{"--ckpt", ckpt.string()}, "the model is decoder-only", "5 6 2\n"},
      {words("sample --ckpt") + Args{tiny_checkpoint(dir).string()}, "holds an encoder-decoder"},
      {words("train --task lm --steps 2"), "--task lm needs --data"},
      {words("train --task lm --steps 2") +
           Args{"--data", (dir / "train.txt").string(), "--init", tiny_checkpoint(dir).string()},
       "holds no tokenizer"},
  });
}
