#include <unistd.h>

#include <atomic>
#include <bit>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "autograd/errors.h"
#include "autograd/random.h"
#include "autograd/tensor.h"
#include "nn/safetensors.h"
#include "tests/support/temp_dir.h"

using namespace gf;
using namespace gf::nn;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;
using gf::testing::TempDir;

namespace {

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// The 8-byte little-endian length field, spelled out byte by byte (independent of the host).
std::string length_field(uint64_t n) {
  std::string bytes;
  for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  return bytes;
}

// A file made by hand from the specification: length, header text, data.
std::string raw_file(const std::string& header, const std::string& data) {
  return length_field(header.size()) + header + data;
}

// n bytes of float data (the values do not matter to the refusal tests).
std::string zero_bytes(size_t n) {
  return std::string(n, '\0');
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() &&
         std::memcmp(a.data(), b.data(), static_cast<size_t>(a.numel()) * sizeof(float)) == 0;
}

// A file written by hand from header text and data bytes, in a directory of its own.
struct HandMade {
  TempDir dir;
  std::string path = dir.file("bad.safetensors");
  HandMade(const std::string& header, const std::string& data) {
    write_bytes(path, raw_file(header, data));
  }
};

}  // namespace

// ---- Round trip and layout ------------------------------------------------------------

TEST_CASE("safetensors: a round trip keeps names, order, shapes, metadata and every bit",
          "[nn][checkpoint]") {
  TempDir dir;
  Rng rng(7);
  const float denormal = std::numeric_limits<float>::denorm_min();
  const NamedTensors tensors = {
      {"z.weight", Tensor::randn({2, 3}, rng)},  // not in alphabetical order on purpose
      {"scalar", Tensor::scalar(-1.25f)},
      {"empty", Tensor::zeros({0, 3})},
      {"a.bias", Tensor::from({6}, {std::numeric_limits<float>::quiet_NaN(), -0.0f,
                                    std::numeric_limits<float>::infinity(), denormal,
                                    std::numeric_limits<float>::max(), 1.0f / 3.0f})},
      {"deep", Tensor::randn({2, 1, 3, 2}, rng)},
  };
  const Metadata metadata = {{"d_model", "512"}, {"norm_eps", "1e-05"}, {"note", "Grüße"}};
  const std::string path = dir.file("model.safetensors");
  save_safetensors(path, tensors, metadata);

  const SafetensorsFile loaded = load_safetensors(path);
  CHECK(loaded.metadata == metadata);
  REQUIRE(loaded.tensors.size() == tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    INFO(tensors[i].first);
    CHECK(loaded.tensors[i].first == tensors[i].first);
    CHECK(loaded.tensors[i].second.shape() == tensors[i].second.shape());
    CHECK(same_bits(loaded.tensors[i].second, tensors[i].second));
    CHECK_FALSE(loaded.tensors[i].second.requires_grad());
  }
  CHECK(loaded.tensors[1].second.rank() == 0);
  CHECK(loaded.tensors[2].second.numel() == 0);
}

TEST_CASE("safetensors: the bytes on disk follow the specification", "[nn][checkpoint]") {
  TempDir dir;
  const std::string path = dir.file("tiny.safetensors");
  save_safetensors(path, {{"x", Tensor::from({2}, {1.0f, -2.5f})}, {"s", Tensor::scalar(0.5f)}},
                   {{"k", "v"}});
  const std::string bytes = read_bytes(path);
  REQUIRE(bytes.size() >= 8);

  // 8-byte little-endian header length; the data starts at a multiple of 8.
  uint64_t n = 0;
  for (size_t i = 0; i < 8; ++i) n |= uint64_t{static_cast<unsigned char>(bytes[i])} << (8 * i);
  CHECK((8 + n) % 8 == 0);
  REQUIRE(bytes.size() == 8 + n + 12);  // 3 floats of data

  // The header: JSON padded with trailing spaces only.
  const std::string header = bytes.substr(8, static_cast<size_t>(n));
  CHECK(header.front() == '{');
  const size_t json_end = header.find_last_not_of(' ') + 1;
  CHECK(header.back() == (json_end == header.size() ? '}' : ' '));
  CHECK(header[json_end - 1] == '}');
  const auto json = nlohmann::json::parse(header);
  CHECK(json.size() == 3);
  CHECK(json["__metadata__"] == nlohmann::json({{"k", "v"}}));
  CHECK(json["x"]["dtype"] == "F32");
  CHECK(json["x"]["shape"] == nlohmann::json::array({2}));
  CHECK(json["x"]["data_offsets"] == nlohmann::json::array({0, 8}));
  CHECK(json["s"]["dtype"] == "F32");
  CHECK(json["s"]["shape"] == nlohmann::json::array());
  CHECK(json["s"]["data_offsets"] == nlohmann::json::array({8, 12}));

  // IEEE-754 binary32, little-endian: 1.0 = 0x3f800000, -2.5 = 0xc0200000, 0.5 = 0x3f000000.
  const std::string expected_data(
      "\x00\x00\x80\x3f"
      "\x00\x00\x20\xc0"
      "\x00\x00\x00\x3f",
      12);
  CHECK(bytes.substr(static_cast<size_t>(8 + n)) == expected_data);
}

TEST_CASE("safetensors: reads a file written by hand, in data-offset order", "[nn][checkpoint]") {
  // Entries listed out of buffer order, with the whitespace any JSON writer may use.
  HandMade file(
      "{ \"b\": {\"shape\": [1], \"dtype\": \"F32\", \"data_offsets\": [8, 12]},\n"
      "  \"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]},\n"
      "  \"e\": {\"dtype\": \"F32\", \"shape\": [0, 3], \"data_offsets\": [12, 12]} }   ",
      std::string("\x00\x00\x80\x3f"
                  "\x00\x00\x20\xc0"
                  "\x00\x00\x00\x3f",
                  12));
  const SafetensorsFile loaded = load_safetensors(file.path);
  CHECK(loaded.metadata.empty());
  REQUIRE(loaded.tensors.size() == 3);
  CHECK(loaded.tensors[0].first == "a");
  CHECK(loaded.tensors[0].second.to_vector() == std::vector<float>{1.0f, -2.5f});
  CHECK(loaded.tensors[1].first == "b");
  CHECK(loaded.tensors[1].second.to_vector() == std::vector<float>{0.5f});
  CHECK(loaded.tensors[2].first == "e");
  CHECK(loaded.tensors[2].second.shape() == Shape{0, 3});
}

// ---- Atomic writes --------------------------------------------------------------------

TEST_CASE("safetensors: saving leaves no temporary file and replaces an existing file",
          "[nn][checkpoint]") {
  TempDir dir;
  const std::string path = dir.file("model.safetensors");
  save_safetensors(path, {{"w", Tensor::full({3}, 1.0f)}});
  CHECK(dir.listing() == std::vector<std::string>{"model.safetensors"});

  save_safetensors(path, {{"v", Tensor::full({2}, 2.0f)}}, {{"step", "2"}});
  CHECK(dir.listing() == std::vector<std::string>{"model.safetensors"});
  const SafetensorsFile loaded = load_safetensors(path);
  REQUIRE(loaded.tensors.size() == 1);
  CHECK(loaded.tensors[0].first == "v");
  CHECK(loaded.tensors[0].second.to_vector() == std::vector<float>{2.0f, 2.0f});
  CHECK(loaded.metadata.at("step") == "2");
}

TEST_CASE("safetensors: saving into a missing directory names the path and the reason",
          "[nn][checkpoint]") {
  TempDir dir;
  const std::string path = dir.file("no/such/dir/model.safetensors");
  const NamedTensors tensors = {{"w", Tensor::ones({2})}};
  REQUIRE_THROWS_AS(save_safetensors(path, tensors), std::runtime_error);
  REQUIRE_THROWS_WITH(save_safetensors(path, tensors), Contains("checkpoint: " + path + ": ") &&
                                                           Contains("No such file or directory"));
}

TEST_CASE("safetensors: a failed rename removes the temporary file", "[nn][checkpoint]") {
  TempDir dir;
  const std::string path = dir.file("taken");
  fs::create_directories(fs::path(path) / "child");  // a non-empty directory cannot be replaced
  REQUIRE_THROWS_WITH(save_safetensors(path, {{"w", Tensor::ones({2})}}),
                      Contains("checkpoint: " + path + ": cannot rename"));
  CHECK(dir.listing() == std::vector<std::string>{"taken"});
}

TEST_CASE("safetensors: saving refuses bad names and undefined tensors", "[nn][checkpoint]") {
  TempDir dir;
  const std::string path = dir.file("model.safetensors");
  const Tensor w = Tensor::ones({2});
  REQUIRE_THROWS_AS(save_safetensors(path, {{"w", w}, {"w", w}}), std::invalid_argument);
  REQUIRE_THROWS_WITH(save_safetensors(path, {{"w", w}, {"w", w}}),
                      Contains("duplicate tensor name \"w\""));
  REQUIRE_THROWS_WITH(save_safetensors(path, {{"__metadata__", w}}),
                      Contains("\"__metadata__\" is reserved"));
  REQUIRE_THROWS_WITH(save_safetensors(path, {{"w", Tensor()}}),
                      Contains("tensor \"w\" is undefined"));
  REQUIRE_THROWS_WITH(save_safetensors(path, {{"bad\xff", w}}), Contains("UTF-8"));
  CHECK(dir.listing().empty());
}

// ---- Refusals: each corruption gets a clear message -----------------------------------

TEST_CASE("safetensors: refuses a missing file or a directory", "[nn][checkpoint]") {
  TempDir dir;
  const std::string path = dir.file("absent.safetensors");
  REQUIRE_THROWS_AS(load_safetensors(path), FormatError);
  REQUIRE_THROWS_WITH(
      load_safetensors(path),
      Contains("checkpoint: " + path + ": cannot open the file (No such file or directory)"));
  REQUIRE_THROWS_WITH(load_safetensors(dir.path().string()), Contains("not a regular file"));
}

TEST_CASE("safetensors: refuses a file shorter than the length field", "[nn][checkpoint]") {
  TempDir dir;
  const std::string path = dir.file("short.safetensors");
  write_bytes(path, std::string("\x10\x00\x00", 3));
  REQUIRE_THROWS_WITH(load_safetensors(path),
                      Contains(path + ": the file has 3 bytes, too few for the 8-byte header"));
}

TEST_CASE("safetensors: refuses a header length beyond the file", "[nn][checkpoint]") {
  TempDir dir;
  const std::string path = dir.file("long.safetensors");
  write_bytes(path, length_field(1000) + "{}");
  REQUIRE_THROWS_WITH(load_safetensors(path),
                      Contains("the header length 1000 exceeds the 2 bytes that follow it"));
}

TEST_CASE("safetensors: refuses an absurd header length before allocating it", "[nn][checkpoint]") {
  TempDir dir;
  const std::string path = dir.file("huge.safetensors");
  write_bytes(path, length_field(uint64_t{1} << 62) + "{}");
  REQUIRE_THROWS_WITH(load_safetensors(path),
                      Contains("not a safetensors file? The header length it starts with, "
                               "4611686018427387904, exceeds the limit of 100000000 bytes"));
  write_bytes(path, length_field(std::numeric_limits<uint64_t>::max()) + "{}");
  REQUIRE_THROWS_WITH(load_safetensors(path), Contains("exceeds the limit"));
}

TEST_CASE("safetensors: refuses a truncated file", "[nn][checkpoint]") {
  TempDir dir;
  const std::string path = dir.file("cut.safetensors");
  save_safetensors(path, {{"w", Tensor::ones({4})}});
  const std::string whole = read_bytes(path);

  write_bytes(path, whole.substr(0, whole.size() - 4));  // loses the last float
  REQUIRE_THROWS_WITH(load_safetensors(path),
                      Contains("tensor \"w\": data_offsets [0, 16] reach past the end of the "
                               "12-byte data buffer"));
  write_bytes(path, whole.substr(0, 20));  // cut inside the header
  REQUIRE_THROWS_WITH(load_safetensors(path), Contains("exceeds the 12 bytes that follow it"));
}

TEST_CASE("safetensors: refuses a header that is not JSON or not an object", "[nn][checkpoint]") {
  {
    HandMade file("{\"w\": {\"dtype\": \"F32\",", "");
    REQUIRE_THROWS_AS(load_safetensors(file.path), FormatError);
    REQUIRE_THROWS_WITH(
        load_safetensors(file.path),
        Contains(file.path + ": the header is not valid JSON (") && Contains("parse error"));
  }
  {
    HandMade file("{} trailing", "");
    REQUIRE_THROWS_WITH(load_safetensors(file.path), Contains("the header is not valid JSON"));
  }
  {
    HandMade file("[1, 2]", "");
    REQUIRE_THROWS_WITH(load_safetensors(file.path),
                        Contains(file.path + ": the header is not a JSON object"));
  }
}

TEST_CASE("safetensors: refuses entries with missing keys or wrong JSON types",
          "[nn][checkpoint]") {
  const auto load_entry = [](const std::string& entry) {
    HandMade file("{\"w\": " + entry + "}", zero_bytes(8));
    load_safetensors(file.path);
  };
  REQUIRE_THROWS_WITH(load_entry("[1]"),
                      Contains("tensor \"w\": the entry is not a JSON object ([1])"));
  REQUIRE_THROWS_WITH(load_entry(R"({"shape": [2], "data_offsets": [0, 8]})"),
                      Contains("tensor \"w\": missing \"dtype\""));
  REQUIRE_THROWS_WITH(load_entry(R"({"dtype": "F32", "data_offsets": [0, 8]})"),
                      Contains("tensor \"w\": missing \"shape\""));
  REQUIRE_THROWS_WITH(load_entry(R"({"dtype": "F32", "shape": [2]})"),
                      Contains("tensor \"w\": missing \"data_offsets\""));
  REQUIRE_THROWS_WITH(load_entry(R"({"dtype": 32, "shape": [2], "data_offsets": [0, 8]})"),
                      Contains("tensor \"w\": \"dtype\" is not a string (32)"));
  REQUIRE_THROWS_WITH(load_entry(R"({"dtype": "F32", "shape": "2", "data_offsets": [0, 8]})"),
                      Contains("tensor \"w\": \"shape\" is not an array (\"2\")"));
  REQUIRE_THROWS_WITH(
      load_entry(R"({"dtype": "F32", "shape": [2], "data_offsets": [0, 8], "x": 1})"),
      Contains("tensor \"w\": unknown key \"x\""));
}

TEST_CASE("safetensors: refuses a dtype other than F32, naming it and the tensor",
          "[nn][checkpoint]") {
  HandMade file(R"({"w": {"dtype": "F16", "shape": [4], "data_offsets": [0, 8]}})", zero_bytes(8));
  REQUIRE_THROWS_WITH(
      load_safetensors(file.path),
      Contains(file.path + ": tensor \"w\": dtype is F16, but only F32 (float32) can be read"));
}

TEST_CASE("safetensors: refuses negative, fractional, too many or too large dimensions",
          "[nn][checkpoint]") {
  const auto load_shape = [](const std::string& shape) {
    HandMade file(R"({"w": {"dtype": "F32", "shape": )" + shape + R"(, "data_offsets": [0, 8]}})",
                  zero_bytes(8));
    load_safetensors(file.path);
  };
  REQUIRE_THROWS_WITH(
      load_shape("[2, -1]"),
      Contains("tensor \"w\": shape [2,-1] is not a list of non-negative integers"));
  REQUIRE_THROWS_WITH(load_shape("[2.5]"), Contains("is not a list of non-negative integers"));
  REQUIRE_THROWS_WITH(load_shape("[2.0]"), Contains("is not a list of non-negative integers"));
  REQUIRE_THROWS_WITH(load_shape("[\"2\"]"), Contains("is not a list of non-negative integers"));
  REQUIRE_THROWS_WITH(load_shape("[18446744073709551615]"),
                      Contains("is not a list of non-negative integers"));
  // 2^32 * 2^32 elements would overflow int64 (and 2^31 * 2^31 bytes of F32 too).
  REQUIRE_THROWS_WITH(load_shape("[4294967296, 4294967296]"),
                      Contains("shape [4294967296,4294967296] has too many elements"));
  REQUIRE_THROWS_WITH(load_shape("[2147483648, 2147483648]"), Contains("has too many elements"));
  REQUIRE_THROWS_WITH(load_shape("[1, 1, 1, 1, 1, 1, 1, 1, 2]"),
                      Contains("tensor \"w\": rank 9 exceeds the maximum of 8"));
}

TEST_CASE("safetensors: refuses malformed data_offsets", "[nn][checkpoint]") {
  const auto load_offsets = [](const std::string& offsets) {
    HandMade file(R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": )" + offsets + "}}",
                  zero_bytes(8));
    load_safetensors(file.path);
  };
  for (const char* bad : {"[0]", "[0, 8, 8]", "[-1, 7]", "[0, \"8\"]", "[0, 8.0]", "{}"}) {
    INFO(bad);
    REQUIRE_THROWS_WITH(load_offsets(bad), Contains("is not a pair of non-negative integers"));
  }
  REQUIRE_THROWS_WITH(load_offsets("[8, 0]"),
                      Contains("tensor \"w\": data_offsets [8, 0] end before they begin"));
}

TEST_CASE("safetensors: refuses offsets past the end of the data buffer", "[nn][checkpoint]") {
  HandMade file(R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})", zero_bytes(8));
  REQUIRE_THROWS_WITH(
      load_safetensors(file.path),
      Contains(file.path + ": tensor \"w\": data_offsets [0, 16] reach past the end of the "
                           "8-byte data buffer"));
}

TEST_CASE("safetensors: refuses a byte size that does not match the shape", "[nn][checkpoint]") {
  HandMade file(R"({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})", zero_bytes(8));
  REQUIRE_THROWS_WITH(
      load_safetensors(file.path),
      Contains("tensor \"w\": shape [3] needs 12 bytes of F32, but data_offsets [0, 8] hold 8"));
}

TEST_CASE("safetensors: refuses overlapping tensors", "[nn][checkpoint]") {
  HandMade file(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                   "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
                zero_bytes(12));
  REQUIRE_THROWS_WITH(load_safetensors(file.path),
                      Contains("tensors \"a\" (bytes [0, 8)) and \"b\" (bytes [4, 12)) overlap"));
}

TEST_CASE("safetensors: refuses gaps in the data buffer", "[nn][checkpoint]") {
  {
    HandMade file(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
                     "b": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]}})",
                  zero_bytes(12));
    REQUIRE_THROWS_WITH(load_safetensors(file.path),
                        Contains("bytes [4, 8) of the data buffer belong to no tensor"));
  }
  {  // trailing bytes after the last tensor
    HandMade file(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})",
                  zero_bytes(8));
    REQUIRE_THROWS_WITH(load_safetensors(file.path),
                        Contains("bytes [4, 8) of the data buffer belong to no tensor"));
  }
  {  // data but no tensors
    HandMade file("{}", zero_bytes(4));
    REQUIRE_THROWS_WITH(load_safetensors(file.path),
                        Contains("bytes [0, 4) of the data buffer belong to no tensor"));
  }
}

TEST_CASE("safetensors: refuses duplicate keys, which a JSON parser would silently merge",
          "[nn][checkpoint]") {
  {
    HandMade file(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
                     "a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})",
                  zero_bytes(8));
    REQUIRE_THROWS_WITH(load_safetensors(file.path),
                        Contains(file.path + ": the header has the key \"a\" twice"));
  }
  {
    HandMade file(
        R"({"a": {"dtype": "F16", "dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})",
        zero_bytes(4));
    REQUIRE_THROWS_WITH(load_safetensors(file.path), Contains("the key \"dtype\" twice"));
  }
}

TEST_CASE("safetensors: refuses metadata that is not string to string", "[nn][checkpoint]") {
  {
    HandMade file(R"({"__metadata__": {"d_model": 512}})", "");
    REQUIRE_THROWS_WITH(load_safetensors(file.path),
                        Contains("\"__metadata__\" value of \"d_model\" is not a string (512)"));
  }
  {
    HandMade file(R"({"__metadata__": ["d_model"]})", "");
    REQUIRE_THROWS_WITH(load_safetensors(file.path),
                        Contains("\"__metadata__\" is not a JSON object"));
  }
}
