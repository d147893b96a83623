#include <catch2/catch.hpp>
#include <string>

#include "tests/viz/viz_testing.h"
#include "viz/font.h"

using namespace gf::viz;
using gf::viz::testing::ink;

namespace {

// The letter T as the font draws it: a bar across the top, a stem down the middle.
const char* const kLetterT[kGlyphHeight] = {
    "#####", "..#..", "..#..", "..#..", "..#..", "..#..", "..#..", ".....", ".....",
};

}  // namespace

TEST_CASE("the font draws a known glyph's pixels", "[viz][font]") {
  for (int row = 0; row < kGlyphHeight; ++row)
    for (int col = 0; col < kGlyphWidth; ++col)
      CHECK(glyph_pixel('T', col, row) == (kLetterT[row][col] == '#'));

  Image image(12, 14);
  draw_text(image, 3, 4, "T", kBlack);
  for (int y = 0; y < image.height(); ++y)
    for (int x = 0; x < image.width(); ++x) {
      const int col = x - 3, row = y - 4;
      const bool inside = col >= 0 && col < kGlyphWidth && row >= 0 && row < kGlyphHeight;
      INFO("pixel (" << x << ", " << y << ")");
      CHECK(image.at(x, y) == (inside && kLetterT[row][col] == '#' ? kBlack : kWhite));
    }
}

TEST_CASE("scale draws each font pixel as a square block", "[viz][font]") {
  Image image(20, 24);
  draw_text(image, 0, 0, "T", kBlack, /*scale=*/3);
  CHECK(image.at(0, 0) == kBlack);   // the bar, font pixel (0, 0)
  CHECK(image.at(14, 2) == kBlack);  // font pixel (4, 0)
  CHECK(image.at(14, 3) == kWhite);  // font pixel (4, 1)
  CHECK(image.at(8, 20) == kBlack);  // the stem's last row, font pixel (2, 6)
  CHECK(image.at(5, 20) == kWhite);
  CHECK(image.at(8, 21) == kWhite);
  CHECK(ink(image, 0, 0, 20, 24) == 11 * 9);  // 11 font pixels of ink, 9 image pixels each
}

TEST_CASE("text width counts code points, not bytes", "[viz][font]") {
  CHECK(text_width("") == 0);
  CHECK(text_width("a") == 5);
  CHECK(text_width("abc") == 17);  // 3 glyphs, 2 one-pixel gaps
  CHECK(text_width("abc", 2) == 34);
  CHECK(text_width("caf\xc3\xa9") == text_width("cafe"));  // é is two bytes, one glyph
  CHECK(text_width("\xe2\x96\x81") == 5);                  // U+2581, three bytes
  CHECK(text_width("\xff\xfe") == 11);                     // two broken bytes, two boxes
  CHECK(text_width("\xe2\x96") == 11);                     // a cut-off sequence, likewise
  CHECK(text_height() == 9);
  CHECK(text_height(2) == 18);
  REQUIRE_THROWS_WITH(text_width("a", 0),
                      Catch::Matchers::Contains("font: scale 0 is not a positive whole number"));
}

TEST_CASE("characters the font lacks draw as a visible box, never crash", "[viz][font]") {
  const char32_t missing = 0x7F;
  int box_ink = 0;
  for (int row = 0; row < kGlyphHeight; ++row)
    for (int col = 0; col < kGlyphWidth; ++col) {
      box_ink += glyph_pixel(missing, col, row);
      CHECK(glyph_pixel(U'\u00e9', col, row) == glyph_pixel(missing, col, row));
      CHECK(glyph_pixel(U'\n', col, row) == glyph_pixel(missing, col, row));
    }
  CHECK(box_ink > 10);
  for (const std::string text : {"\xc3\xa9", "\xff", "\t"}) {
    Image image(8, 10);
    draw_text(image, 0, 0, text, kBlack);
    CHECK(ink(image, 0, 0, 8, 10) == box_ink);
  }
  CHECK(!glyph_pixel('T', 5, 0));  // outside the cell
}

TEST_CASE("the word-start marker of token labels has a glyph of its own", "[viz][font]") {
  const char32_t marker = 0x2581, underscore = '_';
  int differ = 0, marker_ink = 0;
  for (int row = 0; row < kGlyphHeight; ++row)
    for (int col = 0; col < kGlyphWidth; ++col) {
      differ += glyph_pixel(marker, col, row) != glyph_pixel(underscore, col, row);
      marker_ink += glyph_pixel(marker, col, row);
    }
  CHECK(differ > 0);
  CHECK(marker_ink == 7);  // the open box: two uprights and a floor of five
  CHECK(glyph_pixel(marker, 0, 6));
  CHECK(glyph_pixel(marker, 2, 7));
  CHECK(!glyph_pixel(marker, 2, 6));
}

TEST_CASE("vertical text reads from bottom to top", "[viz][font]") {
  Image image(12, 8);
  draw_text_vertical(image, 0, 0, "T", kBlack);
  // Turned counter-clockwise, T's bar becomes the left column (x = 0, y = 0..4) and its
  // stem the middle row (y = 2, x = 0..6).
  for (int y = 0; y < 5; ++y) CHECK(image.at(0, y) == kBlack);
  for (int x = 0; x < 7; ++x) CHECK(image.at(x, 2) == kBlack);
  CHECK(image.at(3, 0) == kWhite);
  CHECK(ink(image, 0, 0, 12, 8) == 11);

  // The first letter is at the bottom.
  Image word(12, 20);
  draw_text_vertical(word, 0, 0, "T.", kBlack);  // box 9 wide, 11 tall; "." at the top
  CHECK(word.at(0, 10) == kBlack);               // T's bar, bottom glyph
  CHECK(ink(word, 0, 0, 12, 5) == 4);            // the full stop's 2 x 2 dot
}

TEST_CASE("elide shortens long text with a marker and keeps code points whole", "[viz][font]") {
  CHECK(elide("short", 100) == "short");
  CHECK(elide("attention", 40) == "atte..");
  CHECK(text_width(elide("attention", 40)) <= 40);
  CHECK(elide("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", 20) == "\xc3\xa9..");
}
