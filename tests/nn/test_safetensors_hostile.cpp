// load_safetensors against headers written to do harm: sizes that would need terabytes,
// offsets that overlap or leave the file, dtypes it cannot read, names given twice, and JSON
// nested or repeated far beyond what a checkpoint needs. Each must be refused with a
// FormatError that says why, before anything the size of the claim is allocated: the peak
// resident memory of the process is measured around each load.
#include <catch2/catch.hpp>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "autograd/errors.h"
#include "nn/safetensors.h"
#include "tests/support/temp_dir.h"

using namespace gf;
using namespace gf::nn;
using Catch::Matchers::Contains;
using gf::testing::TempDir;

namespace {

// A safetensors file from header text and data bytes: the length field, little-endian byte by
// byte, then the two.
struct Hostile {
  TempDir dir{"hostile"};
  std::string path = dir.file("hostile.safetensors");
  Hostile(const std::string& header, const std::string& data) {
    std::string bytes;
    for (int i = 0; i < 8; ++i)
      bytes.push_back(static_cast<char>((uint64_t{header.size()} >> (8 * i)) & 0xff));
    bytes += header + data;
    std::ofstream(path, std::ios::binary)
        .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
};

std::string entry(const std::string& name, const std::string& dtype, const std::string& shape,
                  const std::string& offsets) {
  return "\"" + name + "\": {\"dtype\": \"" + dtype + "\", \"shape\": " + shape +
         ", \"data_offsets\": " + offsets + "}";
}

// The peak resident set size of this process in KiB (VmHWM in /proc/self/status), after
// resetting it to the current size by writing 5 to /proc/self/clear_refs. Returns -1 where
// either is unavailable (not Linux, or a restricted /proc).
int64_t reset_peak_rss_kib() {
  std::ofstream("/proc/self/clear_refs") << "5";
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6));
  return -1;
}

int64_t peak_rss_kib() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6));
  return -1;
}

// Loads path, expecting a FormatError containing message, and returns how much the peak
// resident memory grew meanwhile, in MiB (0 where it cannot be measured).
double refused_growth_mib(const std::string& path, const std::string& message) {
  const int64_t before = reset_peak_rss_kib();
  REQUIRE_THROWS_AS(load_safetensors(path), FormatError);
  REQUIRE_THROWS_WITH(load_safetensors(path), Contains(message));
  const int64_t after = peak_rss_kib();
  return before < 0 || after < 0 ? 0.0 : static_cast<double>(after - before) / 1024.0;
}

// More than reading a small file costs, far less than any claim below.
constexpr double kSmallMib = 48.0;

}  // namespace

TEST_CASE("safetensors hostile: a header claiming a 1 TB tensor is refused before allocating",
          "[nn][checkpoint][hostile]") {
  // 2^18 x 2^20 floats = 2^40 bytes, in a file that holds 8.
  Hostile file("{" + entry("w", "F32", "[262144, 1048576]", "[0, 1099511627776]") + "}",
               std::string(8, '\0'));
  CHECK(refused_growth_mib(file.path,
                           "tensor \"w\": data_offsets [0, 1099511627776] reach past the end "
                           "of the 8-byte data buffer") < kSmallMib);
}

TEST_CASE("safetensors hostile: sizes near 2^64 are refused, not wrapped around",
          "[nn][checkpoint][hostile]") {
  const auto load_entry = [](const std::string& shape, const std::string& offsets) {
    Hostile file("{" + entry("w", "F32", shape, offsets) + "}", std::string(8, '\0'));
    load_safetensors(file.path);
  };
  // A product that wraps to 0 modulo 2^64, with an empty byte range to match it.
  REQUIRE_THROWS_WITH(load_entry("[4294967296, 4294967296, 0]", "[0, 0]"),
                      Contains("has too many elements"));
  REQUIRE_THROWS_WITH(load_entry("[4611686018427387904]", "[0, 0]"),
                      Contains("has too many elements"));
  // Offsets beyond int64, and a range whose end minus begin would wrap.
  REQUIRE_THROWS_WITH(load_entry("[2]", "[0, 18446744073709551615]"),
                      Contains("is not a pair of non-negative integers"));
  REQUIRE_THROWS_WITH(load_entry("[2]", "[9223372036854775807, 8]"),
                      Contains("end before they begin"));
  REQUIRE_THROWS_WITH(load_entry("[2]", "[9223372036854775800, 9223372036854775807]"),
                      Contains("reach past the end of the 8-byte data buffer"));
}

TEST_CASE("safetensors hostile: overlapping and out-of-range offsets are refused",
          "[nn][checkpoint][hostile]") {
  const std::string data(16, '\0');
  {
    INFO("two names for the same bytes");
    Hostile file("{" + entry("a", "F32", "[2]", "[0, 8]") + ", " +
                     entry("b", "F32", "[2]", "[0, 8]") + ", " +
                     entry("c", "F32", "[2]", "[8, 16]") + "}",
                 data);
    REQUIRE_THROWS_WITH(load_safetensors(file.path), Contains("overlap"));
  }
  {
    INFO("one tensor inside another");
    Hostile file("{" + entry("outer", "F32", "[4]", "[0, 16]") + ", " +
                     entry("inner", "F32", "[1]", "[4, 8]") + "}",
                 data);
    REQUIRE_THROWS_WITH(load_safetensors(file.path),
                        Contains("tensors \"outer\" (bytes [0, 16)) and \"inner\" (bytes [4, 8)) "
                                 "overlap"));
  }
  {
    INFO("a range that starts inside the buffer and ends outside");
    Hostile file("{" + entry("a", "F32", "[2]", "[12, 20]") + "}", data);
    REQUIRE_THROWS_WITH(load_safetensors(file.path),
                        Contains("reach past the end of the 16-byte data buffer"));
  }
  {
    INFO("a range wholly past the end");
    Hostile file("{" + entry("a", "F32", "[1]", "[1000, 1004]") + "}", data);
    REQUIRE_THROWS_WITH(load_safetensors(file.path), Contains("reach past the end"));
  }
}

TEST_CASE("safetensors hostile: every dtype but F32 is refused by name",
          "[nn][checkpoint][hostile]") {
  for (const std::string dtype : {"f32", "F64", "BF16", "I32", "U8", "F32 ", ""}) {
    INFO(dtype);
    Hostile file("{" + entry("w", dtype, "[2]", "[0, 8]") + "}", std::string(8, '\0'));
    REQUIRE_THROWS_WITH(load_safetensors(file.path),
                        Contains("dtype is " + dtype + ", but only F32 (float32) can be read"));
  }
  Hostile null_dtype(R"({"w": {"dtype": null, "shape": [2], "data_offsets": [0, 8]}})",
                     std::string(8, '\0'));
  REQUIRE_THROWS_WITH(load_safetensors(null_dtype.path),
                      Contains("\"dtype\" is not a string (null)"));
}

TEST_CASE("safetensors hostile: a name given twice is refused, however it is spelled",
          "[nn][checkpoint][hostile]") {
  {
    INFO("\\u0061 is another spelling of a");
    Hostile file("{" + entry("a", "F32", "[1]", "[0, 4]") + ", " +
                     entry("\\u0061", "F32", "[1]", "[4, 8]") + "}",
                 std::string(8, '\0'));
    REQUIRE_THROWS_WITH(load_safetensors(file.path),
                        Contains("the header has the key \"a\" twice"));
  }
  {
    INFO("two metadata objects");
    Hostile file(R"({"__metadata__": {"a": "1"}, "__metadata__": {"a": "2"}})", "");
    REQUIRE_THROWS_WITH(load_safetensors(file.path),
                        Contains("the header has the key \"__metadata__\" twice"));
  }
  {
    INFO("a metadata key twice");
    Hostile file(R"({"__metadata__": {"d_model": "4", "d_model": "512"}})", "");
    REQUIRE_THROWS_WITH(load_safetensors(file.path),
                        Contains("the header has the key \"d_model\" twice"));
  }
}

TEST_CASE("safetensors hostile: deeply nested JSON is refused without recursing",
          "[nn][checkpoint][hostile]") {
  // A million levels: enough to overflow any stack if a parser, a destructor or an error
  // message's dump() recursed once per level.
  const size_t depth = 1'000'000;
  const std::string deep = std::string(depth, '[') + std::string(depth, ']');
  for (const std::string& header :
       {"{" + entry("w", "F32", deep, "[0, 8]") + "}", "{" + entry("w", "F32", "[2]", deep) + "}",
        "{\"w\": " + deep + "}", "{\"__metadata__\": {\"k\": " + deep + "}}", deep}) {
    Hostile file(header, std::string(8, '\0'));
    CHECK(refused_growth_mib(file.path, "the header nests deeper than 3 levels") < kSmallMib);
  }
  // One level too many is enough to be refused; a valid header needs three.
  Hostile nested_shape("{" + entry("w", "F32", "[[2]]", "[0, 8]") + "}", std::string(8, '\0'));
  REQUIRE_THROWS_WITH(load_safetensors(nested_shape.path),
                      Contains("the header nests deeper than 3 levels"));
}

TEST_CASE("safetensors hostile: enormous JSON arrays are refused while parsing",
          "[nn][checkpoint][hostile]") {
  // 8 MB of "0,": parsed into a tree, four million JSON values would take over 64 MB.
  std::string zeros = "[";
  for (int i = 0; i < 4'000'000; ++i) zeros += "0,";
  zeros += "0]";
  for (const std::string& header : {"{" + entry("w", "F32", zeros, "[0, 8]") + "}",
                                    "{" + entry("w", "F32", "[2]", zeros) + "}", zeros}) {
    Hostile file(header, std::string(8, '\0'));
    CHECK(refused_growth_mib(file.path, "the header has an array of more than 1024 items") <
          kSmallMib);
  }
  // The longest array a valid header has is a shape, far below the limit.
  Hostile rank_nine("{" + entry("w", "F32", "[1, 1, 1, 1, 1, 1, 1, 1, 2]", "[0, 8]") + "}",
                    std::string(8, '\0'));
  REQUIRE_THROWS_WITH(load_safetensors(rank_nine.path), Contains("rank 9 exceeds the maximum"));
}
