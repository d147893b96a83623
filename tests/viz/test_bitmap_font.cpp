// The built-in bitmap font, and text drawn with it alone, as on a machine without font files.
#include <catch2/catch.hpp>
#include <string>

#include "tests/viz/viz_testing.h"
#include "viz/bitmap_font.h"
#include "viz/text.h"

using namespace gf::viz;
using namespace gf::viz::bitmap;
using gf::viz::testing::BuiltinFont;
using gf::viz::testing::ink;

namespace {

// The letter T as the font draws it: a bar across the top, a stem down the middle.
const char* const kLetterT[kGlyphHeight] = {
    "#####", "..#..", "..#..", "..#..", "..#..", "..#..", "..#..", ".....", ".....",
};

// Sizes whose bitmap scale is 1, 2 and 3.
constexpr TextStyle kScale1{.size = 12}, kScale2{.size = 18}, kScale3{.size = 28};

}  // namespace

TEST_CASE("the bitmap font draws a known glyph's pixels", "[viz][font]") {
  const BuiltinFont builtin;
  CHECK(font_files().empty());
  for (int row = 0; row < kGlyphHeight; ++row)
    for (int col = 0; col < kGlyphWidth; ++col)
      CHECK(glyph_pixel('T', col, row) == (kLetterT[row][col] == '#'));

  Image image(12, 14);
  draw_text(image, 3, 4, "T", kBlack, kScale1);
  for (int y = 0; y < image.height(); ++y)
    for (int x = 0; x < image.width(); ++x) {
      const int col = x - 3, row = y - 4;
      const bool inside = col >= 0 && col < kGlyphWidth && row >= 0 && row < kGlyphHeight;
      INFO("pixel (" << x << ", " << y << ")");
      CHECK(image.at(x, y) == (inside && kLetterT[row][col] == '#' ? kBlack : kWhite));
    }
}

TEST_CASE("without font files, sizes map to whole bitmap scales", "[viz][font]") {
  const BuiltinFont builtin;
  CHECK(bitmap_scale(1) == 1);
  CHECK(bitmap_scale(12) == 1);
  CHECK(bitmap_scale(14) == 1);  // DejaVu's capitals at 14 pixels: 10.2, nearer 7 than 14
  CHECK(bitmap_scale(15) == 2);
  CHECK(bitmap_scale(20) == 2);
  CHECK(bitmap_scale(28) == 3);
  const TextMetrics m = text_metrics(kScale2);
  CHECK(m.ascent == 14);
  CHECK(m.cap_height == 14);
  CHECK(m.line_height == 18);
  CHECK(m.cap_middle() == 7);

  Image image(20, 30);
  draw_text(image, 0, 0, "T", kBlack, kScale3);  // each font pixel a 3 x 3 block
  CHECK(image.at(0, 0) == kBlack);               // the bar, font pixel (0, 0)
  CHECK(image.at(14, 2) == kBlack);              // font pixel (4, 0)
  CHECK(image.at(14, 3) == kWhite);              // font pixel (4, 1)
  CHECK(image.at(8, 20) == kBlack);              // the stem's last row, font pixel (2, 6)
  CHECK(image.at(5, 20) == kWhite);
  CHECK(image.at(8, 21) == kWhite);
  CHECK(ink(image, 0, 0, 20, 30) == 11 * 9);  // 11 font pixels of ink, 9 image pixels each
  REQUIRE_THROWS_WITH(text_width("a", {.size = 0}),
                      Catch::Matchers::Contains("text: size 0 is not a number of pixels"));
}

TEST_CASE("bitmap text width counts code points, not bytes", "[viz][font]") {
  const BuiltinFont builtin;
  CHECK(text_width("", kScale1) == 0);
  CHECK(text_width("a", kScale1) == 5);
  CHECK(text_width("abc", kScale1) == 17);  // 3 glyphs, 2 one-pixel gaps
  CHECK(text_width("abc", kScale2) == 34);
  CHECK(text_width("abc", {.size = 12, .bold = true}) == 18);  // bold is a pixel wider
  CHECK(text_width("caf\xc3\xa9", kScale1) == text_width("cafe", kScale1));  // é: one glyph
  CHECK(text_width("\xe2\x96\x81", kScale1) == 5);                           // U+2581
  CHECK(text_width("\xff\xfe", kScale1) == 11);  // two broken bytes, two boxes
  CHECK(text_width("\xe2\x96", kScale1) == 11);  // a cut-off sequence, likewise
}

TEST_CASE("characters the bitmap font lacks draw as a visible box, never crash", "[viz][font]") {
  const BuiltinFont builtin;
  int box_ink = 0;
  for (int row = 0; row < kGlyphHeight; ++row)
    for (int col = 0; col < kGlyphWidth; ++col) {
      box_ink += glyph_pixel(kMissing, col, row);
      CHECK(glyph_pixel(U'\u00e9', col, row) == glyph_pixel(kMissing, col, row));
      CHECK(glyph_pixel(U'\n', col, row) == glyph_pixel(kMissing, col, row));
    }
  CHECK(box_ink > 10);
  CHECK(!has_glyph(U'\u00e9'));
  CHECK(has_glyph('e'));
  for (const std::string text : {"\xc3\xa9", "\xff", "\t", "\xe6\xb3\xa8"}) {  // é, 0xFF, tab, 注
    Image image(8, 10);
    draw_text(image, 0, 0, text, kBlack, kScale1);
    CHECK(ink(image, 0, 0, 8, 10) == box_ink);
  }
  CHECK(!glyph_pixel('T', 5, 0));  // outside the cell
}

TEST_CASE("the word-start marker of token labels has a bitmap glyph of its own", "[viz][font]") {
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

TEST_CASE("vertical bitmap text reads from bottom to top", "[viz][font]") {
  const BuiltinFont builtin;
  Image image(12, 8);
  draw_text_vertical(image, 0, 0, "T", kBlack, kScale1);
  // Turned counter-clockwise, T's bar becomes the left column (x = 0, y = 0..4) and its
  // stem the middle row (y = 2, x = 0..6).
  for (int y = 0; y < 5; ++y) CHECK(image.at(0, y) == kBlack);
  for (int x = 0; x < 7; ++x) CHECK(image.at(x, 2) == kBlack);
  CHECK(image.at(3, 0) == kWhite);
  CHECK(ink(image, 0, 0, 12, 8) == 11);

  // The first letter is at the bottom.
  Image word(12, 20);
  draw_text_vertical(word, 0, 0, "T.", kBlack, kScale1);  // box 9 wide, 11 tall; "." on top
  CHECK(word.at(0, 10) == kBlack);                        // T's bar, bottom glyph
  CHECK(ink(word, 0, 0, 12, 5) == 4);                     // the full stop's 2 x 2 dot
}

TEST_CASE("bitmap elide shortens long text with '..' and keeps code points whole", "[viz][font]") {
  const BuiltinFont builtin;
  CHECK(elide("short", 100, kScale1) == "short");
  CHECK(elide("attention", 40, kScale1) == "atte..");
  CHECK(text_width(elide("attention", 40, kScale1), kScale1) <= 40);
  CHECK(elide("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", 20, kScale1) == "\xc3\xa9..");
}

TEST_CASE("broken UTF-8 decodes one byte at a time", "[viz][font]") {
  const std::string text = "a\xc3\xa9\xff\xe2\x96";  // a, é, a stray byte, a cut-off sequence
  size_t i = 0;
  CHECK(next_code_point(text, i) == U'a');
  CHECK(next_code_point(text, i) == U'\u00e9');
  CHECK(i == 3);
  CHECK(next_code_point(text, i) == kBrokenByte);
  CHECK(next_code_point(text, i) == kBrokenByte);
  CHECK(next_code_point(text, i) == kBrokenByte);
  CHECK(i == text.size());
}
