#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "data/utf8.h"

using namespace gf::data;
using Catch::Matchers::Contains;

TEST_CASE("decode_utf8 gives the code points of umlauts, accents, CJK and emoji", "[data][utf8]") {
  CHECK(decode_utf8("Grüße") == std::u32string{U'G', U'r', 0xFC, 0xDF, U'e'});
  CHECK(decode_utf8("Ça") == std::u32string{0xC7, U'a'});
  CHECK(decode_utf8("北京") == std::u32string{0x5317, 0x4EAC});
  CHECK(decode_utf8("\xF0\x9F\x98\x80") == std::u32string{0x1F600});  // 😀, 4 bytes
  CHECK(decode_utf8("").empty());
  // 'u' + combining diaeresis is two code points: characters here are code points.
  CHECK(decode_utf8("u\xCC\x88").size() == 2);
}

TEST_CASE("encode_utf8 and decode_utf8 are inverse on every code point", "[data][utf8]") {
  int64_t checked = 0;
  for (char32_t c = 0; c <= 0x10FFFF; ++c) {
    if (c >= 0xD800 && c <= 0xDFFF) continue;
    const std::string bytes = encode_utf8(c);
    // 1 byte up to U+007F, 2 up to U+07FF, 3 up to U+FFFF, 4 beyond (RFC 3629 §3)
    const size_t expected_length = c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
    if (bytes.size() != expected_length || decode_utf8(bytes) != std::u32string(1, c)) {
      FAIL("U+" << std::hex << static_cast<uint32_t>(c) << " does not round-trip");
    }
    ++checked;
  }
  CHECK(checked == 0x110000 - 0x800);  // all code points minus the 2048 surrogates
  REQUIRE_THROWS_WITH(encode_utf8(char32_t{0xD800}), Contains("U+D800 is not a character"));
  REQUIRE_THROWS_WITH(encode_utf8(char32_t{0x110000}), Contains("U+110000 is not a character"));
}

TEST_CASE("invalid UTF-8 is refused with the byte offset and the problem", "[data][utf8]") {
  // A continuation byte with no lead byte.
  REQUIRE_THROWS_AS(check_utf8("ab\x80"
                               "c"),
                    Utf8Error);
  REQUIRE_THROWS_WITH(check_utf8("ab\x80"
                                 "c"),
                      "invalid UTF-8 at byte 2: 0x80 is a continuation byte with no lead byte "
                      "before it");
  // Truncated: the text ends inside a sequence, or an ASCII byte interrupts one.
  REQUIRE_THROWS_WITH(check_utf8("Gr\xC3"),
                      "invalid UTF-8 at byte 2: the text ends inside a 2-byte sequence (lead "
                      "byte 0xC3)");
  REQUIRE_THROWS_WITH(check_utf8("x\xE2\x82"
                                 "y"),
                      Contains("at byte 1: the 3-byte sequence starting with 0xE2 is cut short by "
                               "0x79 at byte 3"));
  // Overlong forms: '/' as 2 bytes, '/' as 3 bytes, '€' (U+20AC) as 4 bytes.
  REQUIRE_THROWS_WITH(check_utf8("\xC0\xAF"),
                      "invalid UTF-8 at byte 0: overlong 2-byte encoding of U+002F");
  REQUIRE_THROWS_WITH(check_utf8("ok\xE0\x80\xAF"), Contains("at byte 2: overlong 3-byte"));
  REQUIRE_THROWS_WITH(check_utf8("\xF0\x82\x82\xAC"),
                      Contains("overlong 4-byte encoding of U+20AC"));
  // A UTF-16 surrogate encoded as if it were a character (CESU-8 style).
  REQUIRE_THROWS_WITH(check_utf8("a\xED\xA0\x80"),
                      "invalid UTF-8 at byte 1: U+D800 is a UTF-16 surrogate, not a character");
  // Above U+10FFFF.
  REQUIRE_THROWS_WITH(check_utf8("\xF4\x90\x80\x80"),
                      Contains("at byte 0: U+110000 is above U+10FFFF"));
  REQUIRE_THROWS_WITH(check_utf8("\xFF"), Contains("0xFF can never appear in UTF-8"));

  try {
    decode_utf8("K\xC3\xB6ln \xB6");
    FAIL("no exception");
  } catch (const Utf8Error& e) {
    CHECK(e.offset() ==
          6);  // K C3 B6 l n space B6: so that a caller can say "corpus.de:17: byte 5: ..."
    CHECK(e.problem() == "0xB6 is a continuation byte with no lead byte before it");
  }
  CHECK(is_valid_utf8("Köln 北京 😀"));
  CHECK_FALSE(is_valid_utf8("K\xF6ln"));  // Latin-1, not UTF-8
}

TEST_CASE("split_utf8 cuts text into characters that join back to it", "[data][utf8]") {
  const std::string text = "aü我\xF0\x9F\x98\x80";
  const std::vector<std::string_view> chars = split_utf8(text);
  REQUIRE(chars.size() == 4);
  CHECK(chars[0].size() == 1);
  CHECK(chars[1].size() == 2);
  CHECK(chars[2].size() == 3);
  CHECK(chars[3].size() == 4);
  std::string joined;
  for (const auto c : chars) joined += c;
  CHECK(joined == text);
  REQUIRE_THROWS_AS(split_utf8("a\xC3"), Utf8Error);
}

TEST_CASE("repair_utf8 keeps valid text and marks each bad byte with U+FFFD", "[data][utf8]") {
  CHECK(repair_utf8("Grüße 北京") == "Grüße 北京");
  CHECK(repair_utf8("a\x80"
                    "b") ==
        "a\uFFFD"
        "b");
  CHECK(repair_utf8("\xC3") == "\uFFFD");  // truncated at the end
  CHECK(repair_utf8("\xE2\x82"
                    "x") ==
        "\uFFFD\uFFFD"
        "x");  // each byte of a cut sequence
}
