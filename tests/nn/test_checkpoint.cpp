#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "autograd/errors.h"
#include "autograd/random.h"
#include "autograd/tensor.h"
#include "nn/checkpoint.h"
#include "nn/module.h"
#include "nn/safetensors.h"
#include "tests/support/temp_dir.h"

using namespace gf;
using namespace gf::nn;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;
using gf::testing::TempDir;

namespace {

// Two parameters of its own and one in a child: "weight", "bias", "child.weight".
struct Child : Module {
  explicit Child(Rng& rng) { weight = register_parameter("weight", Tensor::randn({4}, rng)); }
  Tensor weight;
};

struct Tiny : Module {
  explicit Tiny(uint64_t seed) : rng(seed), child(rng) {
    weight = register_parameter("weight", Tensor::randn({2, 3}, rng));
    bias = register_parameter("bias", Tensor::randn({3}, rng));
    register_module("child", child);
  }
  Rng rng;
  Child child;
  Tensor weight;
  Tensor bias;
};

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() &&
         std::memcmp(a.data(), b.data(), static_cast<size_t>(a.numel()) * sizeof(float)) == 0;
}

// A copy of every parameter's values, to show that a refused load changed nothing.
std::vector<Tensor> snapshot(const Module& m) {
  std::vector<Tensor> values;
  for (const Tensor& p : m.parameters()) values.push_back(p.clone());
  return values;
}

bool unchanged(const Module& m, const std::vector<Tensor>& before) {
  const std::vector<Tensor> now = m.parameters();
  if (now.size() != before.size()) return false;
  for (size_t i = 0; i < now.size(); ++i)
    if (!same_bits(now[i], before[i])) return false;
  return true;
}

}  // namespace

TEST_CASE("checkpoint: a module loads back bit-identical, in place", "[nn][checkpoint]") {
  TempDir dir;
  const std::string path = dir.file("tiny.safetensors");
  Tiny saved(1);
  Metadata metadata;
  set_metadata_int(metadata, "d_model", 3);
  set_metadata_bool(metadata, "tied", false);
  save_checkpoint(path, saved, metadata);

  Tiny fresh(2);
  REQUIRE_FALSE(same_bits(fresh.weight, saved.weight));
  const float* weight_storage = fresh.weight.data();
  const Metadata loaded = load_checkpoint(path, fresh);
  CHECK(loaded == metadata);
  CHECK(same_bits(fresh.weight, saved.weight));
  CHECK(same_bits(fresh.bias, saved.bias));
  CHECK(same_bits(fresh.child.weight, saved.child.weight));
  // The layer's own handles see the new values: the storage was overwritten, not replaced.
  CHECK(fresh.weight.data() == weight_storage);
  CHECK(fresh.weight.requires_grad());
}

TEST_CASE("checkpoint: the file holds the parameters under their dotted names, in order",
          "[nn][checkpoint]") {
  TempDir dir;
  const std::string path = dir.file("tiny.safetensors");
  Tiny model(3);
  save_checkpoint(path, model, {});
  const SafetensorsFile file = load_safetensors(path);
  REQUIRE(file.tensors.size() == 3);
  CHECK(file.tensors[0].first == "weight");
  CHECK(file.tensors[1].first == "bias");
  CHECK(file.tensors[2].first == "child.weight");
  CHECK(file.tensors[0].second.shape() == Shape{2, 3});
  CHECK(file.metadata.empty());
}

TEST_CASE("checkpoint: refuses a file missing a parameter, leaving the module unchanged",
          "[nn][checkpoint]") {
  TempDir dir;
  const std::string path = dir.file("partial.safetensors");
  Tiny source(1);
  save_safetensors(path, {{"weight", source.weight}, {"bias", source.bias}});
  Tiny model(2);
  const auto before = snapshot(model);
  REQUIRE_THROWS_AS(load_checkpoint(path, model), FormatError);
  REQUIRE_THROWS_WITH(load_checkpoint(path, model),
                      Contains("checkpoint: " + path + ": missing tensor \"child.weight\""));
  CHECK(unchanged(model, before));
}

TEST_CASE("checkpoint: refuses an unexpected extra tensor, leaving the module unchanged",
          "[nn][checkpoint]") {
  TempDir dir;
  const std::string path = dir.file("extra.safetensors");
  Tiny source(1);
  NamedTensors tensors = source.named_parameters();
  tensors.emplace_back("foo", Tensor::ones({1}));
  save_safetensors(path, tensors);
  Tiny model(2);
  const auto before = snapshot(model);
  REQUIRE_THROWS_WITH(load_checkpoint(path, model),
                      Contains("checkpoint: " + path +
                               ": unexpected tensor \"foo\" (the model has no such "
                               "parameter)"));
  CHECK(unchanged(model, before));
}

TEST_CASE("checkpoint: refuses a tensor of the wrong shape, leaving the module unchanged",
          "[nn][checkpoint]") {
  TempDir dir;
  const std::string path = dir.file("shape.safetensors");
  Tiny source(1);
  // child.weight comes last, so weight and bias would already have been copied by a loader
  // that copied while it checked.
  save_safetensors(
      path,
      {{"weight", source.weight}, {"bias", source.bias}, {"child.weight", Tensor::ones({5})}});
  Tiny model(2);
  const auto before = snapshot(model);
  REQUIRE_THROWS_WITH(
      load_checkpoint(path, model),
      Contains("checkpoint: " + path +
               ": tensor \"child.weight\" has shape [5] but the model expects [4]"));
  CHECK(unchanged(model, before));
}

TEST_CASE("checkpoint: a corrupt file is refused before the module is touched",
          "[nn][checkpoint]") {
  TempDir dir;
  const std::string path = dir.file("cut.safetensors");
  Tiny source(1);
  save_checkpoint(path, source, {});
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size() - 1));
  }
  Tiny model(2);
  const auto before = snapshot(model);
  REQUIRE_THROWS_WITH(load_checkpoint(path, model), Contains("reach past the end"));
  REQUIRE_THROWS_WITH(load_checkpoint(dir.file("absent"), model), Contains("cannot open the file"));
  CHECK(unchanged(model, before));
}

TEST_CASE("checkpoint: metadata values round-trip exactly", "[nn][checkpoint]") {
  Metadata m;
  set_metadata_int(m, "d_model", 512);
  set_metadata_int(m, "neg", -3);
  set_metadata_int(m, "big", std::numeric_limits<int64_t>::max());
  set_metadata_bool(m, "yes", true);
  set_metadata_bool(m, "no", false);
  CHECK(m.at("d_model") == "512");
  CHECK(m.at("yes") == "true");
  CHECK(metadata_int(m, "d_model", "p") == 512);
  CHECK(metadata_int(m, "neg", "p") == -3);
  CHECK(metadata_int(m, "big", "p") == std::numeric_limits<int64_t>::max());
  CHECK(metadata_bool(m, "yes", "p"));
  CHECK_FALSE(metadata_bool(m, "no", "p"));

  // Shortest text that reads back to the same float, bit for bit.
  for (float x : {1e-5f, 1e-9f, 0.1f, 1.0f / 3.0f, 6.0f, -2.5f, std::numeric_limits<float>::max(),
                  std::numeric_limits<float>::denorm_min()}) {
    set_metadata_float(m, "x", x);
    INFO(m.at("x"));
    const float back = metadata_float(m, "x", "p");
    CHECK(std::memcmp(&back, &x, sizeof x) == 0);
  }
  set_metadata_float(m, "eps", 1e-6f);
  CHECK(m.at("eps") == "1e-06");
  set_metadata_float(m, "half", 0.5f);
  CHECK(m.at("half") == "0.5");
}

TEST_CASE("checkpoint: bad or missing metadata values name the key and the value",
          "[nn][checkpoint]") {
  const Metadata m = {{"d_model", "abc"},  {"heads", "8x"}, {"layers", " 6"}, {"pad_id", "1.5"},
                      {"too_big", "1e99"}, {"tied", "yes"}, {"eps", "1e-6f"}};
  REQUIRE_THROWS_AS(metadata_int(m, "vocab_size", "m.st"), FormatError);
  REQUIRE_THROWS_WITH(metadata_int(m, "vocab_size", "m.st"),
                      Contains("checkpoint: m.st: metadata \"vocab_size\" is missing"));
  REQUIRE_THROWS_WITH(
      metadata_int(m, "d_model", "m.st"),
      Contains("checkpoint: m.st: metadata \"d_model\" is \"abc\", not an integer"));
  REQUIRE_THROWS_WITH(metadata_int(m, "heads", "m.st"), Contains("\"8x\", not an integer"));
  REQUIRE_THROWS_WITH(metadata_int(m, "layers", "m.st"), Contains("\" 6\", not an integer"));
  REQUIRE_THROWS_WITH(metadata_int(m, "pad_id", "m.st"), Contains("\"1.5\", not an integer"));
  REQUIRE_THROWS_WITH(metadata_float(m, "too_big", "m.st"), Contains("\"1e99\", not a number"));
  REQUIRE_THROWS_WITH(metadata_float(m, "eps", "m.st"), Contains("\"1e-6f\", not a number"));
  REQUIRE_THROWS_WITH(metadata_float(m, "norm_eps", "m.st"), Contains("\"norm_eps\" is missing"));
  REQUIRE_THROWS_WITH(metadata_bool(m, "tied", "m.st"),
                      Contains("metadata \"tied\" is \"yes\", not true or false"));
  REQUIRE_THROWS_WITH(metadata_bool(m, "norm_first", "m.st"),
                      Contains("\"norm_first\" is missing"));
}
