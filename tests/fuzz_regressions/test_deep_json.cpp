// Inputs that crashed a parser while it was being fuzzed (fuzz/README.md), kept as tests.
//
// Deeply nested JSON: nlohmann's parser is iterative, but dump() recurses once per level, and
// the tokenizer reader prints the offending value with dump() in its error messages. A
// "type" of a million nested arrays overflowed the stack (AddressSanitizer: stack-overflow in
// serializer::dump). tokenizer_from_json now refuses nesting deeper than a valid document's
// three levels while parsing. (The safetensors reader had the same fault; its tests are in
// tests/nn/test_safetensors_hostile.cpp.)
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "autograd/errors.h"
#include "data/tokenizer.h"

using Catch::Matchers::Contains;
using gf::FormatError;
using gf::data::tokenizer_from_json;

TEST_CASE("fuzz regression: tokenizer_from_json refuses deep nesting without recursing",
          "[data][tokenizer][fuzz]") {
  const size_t depth = 1'000'000;
  const std::string deep = std::string(depth, '[') + std::string(depth, ']');
  for (const std::string& json :
       {R"({"type": )" + deep + "}", R"({"type": "word", "version": )" + deep + "}",
        R"({"type": "bpe", "version": 1, "size": 4, "byte_fallback": false, "characters": [],
            "merges": [)" +
            deep + "]}",
        deep}) {
    REQUIRE_THROWS_AS(tokenizer_from_json(json), FormatError);
    REQUIRE_THROWS_WITH(tokenizer_from_json(json),
                        Contains("tokenizer json: nested deeper than 3 levels"));
  }
}

TEST_CASE("fuzz regression: tokenizer JSON at the deepest valid nesting still reads",
          "[data][tokenizer][fuzz]") {
  // Three levels: the object, "merges", one merge.
  const auto bpe = tokenizer_from_json(
      R"({"type": "bpe", "version": 1, "size": 10, "byte_fallback": false,
          "characters": [" ", "l", "o", "w"], "merges": [["l", "o"], ["lo", "w"]]})");
  CHECK(bpe->encode(" low") == std::vector<int32_t>{4, 9});
  REQUIRE_THROWS_WITH(
      tokenizer_from_json(R"({"type": "bpe", "version": 1, "size": 10, "byte_fallback": false,
          "characters": [" "], "merges": [[["l"], "o"]]})"),
      Contains("nested deeper than 3 levels"));
}
