#include "viz/font.h"

#include <fmt/format.h>

#include <array>
#include <cstdint>
#include <stdexcept>

namespace gf::viz {

namespace {

// The glyphs, drawn as they look ('#' is ink), twelve to a band in code order. The last
// cell of the last band (code 127, which has no glyph of its own) is the chequered box drawn
// for every code point the font lacks. Rows 0 to 6 stand on the baseline; g, j, p, q, y,
// the comma and the underscore reach below it into rows 7 and 8.
constexpr int kBands = 8;
constexpr int kGlyphsPerBand = 12;
constexpr size_t kGlyphCount = kBands * kGlyphsPerBand;
constexpr size_t kArtRows = kBands * kGlyphHeight;
constexpr char32_t kFirst = 32;  // the space
constexpr char32_t kMissing = 127;
constexpr std::array<std::string_view, kArtRows> kArt = {
    // space ! " # $ % & ' ( ) * +
    "..... ..#.. .#.#. .#.#. ..#.. ##... .##.. ..#.. ...#. .#... ..... .....",
    "..... ..#.. .#.#. .#.#. .#### ##..# #..#. ..#.. ..#.. ..#.. ..#.. ..#..",
    "..... ..#.. .#.#. ##### #.#.. ...#. #.#.. .#... .#... ...#. #.#.# ..#..",
    "..... ..#.. ..... .#.#. .###. ..#.. .#... ..... .#... ...#. .###. #####",
    "..... ..#.. ..... ##### ..#.# .#... #.#.# ..... .#... ...#. #.#.# ..#..",
    "..... ..... ..... .#.#. ####. #..## #..#. ..... ..#.. ..#.. ..#.. ..#..",
    "..... ..#.. ..... .#.#. ..#.. ...## .##.# ..... ...#. .#... ..... .....",
    "..... ..... ..... ..... ..... ..... ..... ..... ..... ..... ..... .....",
    "..... ..... ..... ..... ..... ..... ..... ..... ..... ..... ..... .....",
    // , - . / 0 1 2 3 4 5 6 7
    "..... ..... ..... ....# .###. ..#.. .###. .###. ...#. ##### ..##. #####",
    "..... ..... ..... ...#. #...# .##.. #...# #...# ..##. #.... .#... ....#",
    "..... ..... ..... ...#. #..## ..#.. ....# ....# .#.#. ####. #.... ...#.",
    "..... ##### ..... ..#.. #.#.# ..#.. ...#. ..##. #..#. ....# ####. ..#..",
    "..... ..... ..... .#... ##..# ..#.. ..#.. ....# ##### ....# #...# .#...",
    ".##.. ..... .##.. .#... #...# ..#.. .#... #...# ...#. #...# #...# .#...",
    ".##.. ..... .##.. #.... .###. .###. ##### .###. ...#. .###. .###. .#...",
    "..#.. ..... ..... ..... ..... ..... ..... ..... ..... ..... ..... .....",
    ".#... ..... ..... ..... ..... ..... ..... ..... ..... ..... ..... .....",
    // 8 9 : ; < = > ? @ A B C
    ".###. .###. ..... ..... ..... ..... ..... .###. .###. .###. ####. .###.",
    "#...# #...# .##.. .##.. ...## ..... ##... #...# #...# #...# #...# #...#",
    "#...# #...# .##.. .##.. .##.. ##### ..##. ....# #.### #...# #...# #....",
    ".###. .#### ..... ..... #.... ..... ....# ...#. #.#.# ##### ####. #....",
    "#...# ....# .##.. .##.. .##.. ##### ..##. ..#.. #.### #...# #...# #....",
    "#...# ...#. .##.. .##.. ...## ..... ##... ..... #.... #...# #...# #...#",
    ".###. .##.. ..... ..#.. ..... ..... ..... ..#.. .#### #...# ####. .###.",
    "..... ..... ..... .#... ..... ..... ..... ..... ..... ..... ..... .....",
    "..... ..... ..... ..... ..... ..... ..... ..... ..... ..... ..... .....",
    // D E F G H I J K L M N O
    "####. ##### ##### .###. #...# .###. ..### #...# #.... #...# #...# .###.",
    "#...# #.... #.... #...# #...# ..#.. ...#. #..#. #.... ##.## #...# #...#",
    "#...# #.... #.... #.... #...# ..#.. ...#. #.#.. #.... #.#.# ##..# #...#",
    "#...# ####. ####. #.### ##### ..#.. ...#. ##... #.... #.#.# #.#.# #...#",
    "#...# #.... #.... #...# #...# ..#.. ...#. #.#.. #.... #...# #..## #...#",
    "#...# #.... #.... #...# #...# ..#.. #..#. #..#. #.... #...# #...# #...#",
    "####. ##### #.... .#### #...# .###. .##.. #...# ##### #...# #...# .###.",
    "..... ..... ..... ..... ..... ..... ..... ..... ..... ..... ..... .....",
    "..... ..... ..... ..... ..... ..... ..... ..... ..... ..... ..... .....",
    // P Q R S T U V W X Y Z [
    "####. .###. ####. .#### ##### #...# #...# #...# #...# #...# ##### .###.",
    "#...# #...# #...# #.... ..#.. #...# #...# #...# #...# #...# ....# .#...",
    "#...# #...# #...# #.... ..#.. #...# #...# #...# .#.#. .#.#. ...#. .#...",
    "####. #...# ####. .###. ..#.. #...# #...# #.#.# ..#.. ..#.. ..#.. .#...",
    "#.... #.#.# #.#.. ....# ..#.. #...# #...# #.#.# .#.#. ..#.. .#... .#...",
    "#.... #..#. #..#. ....# ..#.. #...# .#.#. #.#.# #...# ..#.. #.... .#...",
    "#.... .##.# #...# ####. ..#.. .###. ..#.. .#.#. #...# ..#.. ##### .###.",
    "..... ..... ..... ..... ..... ..... ..... ..... ..... ..... ..... .....",
    "..... ..... ..... ..... ..... ..... ..... ..... ..... ..... ..... .....",
    // \ ] ^ _ ` a b c d e f g
    "#.... .###. ..#.. ..... .#... ..... #.... ..... ....# ..... ..##. .....",
    ".#... ...#. .#.#. ..... ..#.. ..... #.... ..... ....# ..... .#..# .....",
    ".#... ...#. #...# ..... ..... .###. ####. .###. .#### .###. .#... .####",
    "..#.. ...#. ..... ..... ..... ....# #...# #...# #...# #...# ###.. #...#",
    "...#. ...#. ..... ..... ..... .#### #...# #.... #...# ##### .#... #...#",
    "...#. ...#. ..... ..... ..... #...# #...# #...# #...# #.... .#... #...#",
    "....# .###. ..... ..... ..... .#### ####. .###. .#### .###. .#... .####",
    "..... ..... ..... ##### ..... ..... ..... ..... ..... ..... ..... ....#",
    "..... ..... ..... ..... ..... ..... ..... ..... ..... ..... ..... .###.",
    // h i j k l m n o p q r s
    "#.... ..#.. ...#. #.... .##.. ..... ..... ..... ..... ..... ..... .....",
    "#.... ..... ..... #.... ..#.. ..... ..... ..... ..... ..... ..... .....",
    "#.##. .##.. ..##. #..#. ..#.. ##.#. #.##. .###. ####. .#### #.##. .####",
    "##..# ..#.. ...#. #.#.. ..#.. #.#.# ##..# #...# #...# #...# ##..# #....",
    "#...# ..#.. ...#. ##... ..#.. #.#.# #...# #...# #...# #...# #.... .###.",
    "#...# ..#.. ...#. #.#.. ..#.. #.#.# #...# #...# #...# #...# #.... ....#",
    "#...# .###. ...#. #..#. .###. #.#.# #...# .###. ####. .#### #.... ####.",
    "..... ..... #..#. ..... ..... ..... ..... ..... #.... ....# ..... .....",
    "..... ..... .##.. ..... ..... ..... ..... ..... #.... ....# ..... .....",
    // t u v w x y z { | } ~ missing
    ".#... ..... ..... ..... ..... ..... ..... ...## ..#.. ##... ..... #####",
    ".#... ..... ..... ..... ..... ..... ..... ..#.. ..#.. ..#.. ..... #.#.#",
    "###.. #...# #...# #...# #...# #...# ##### ..#.. ..#.. ..#.. ..... ##.##",
    ".#... #...# #...# #...# .#.#. #...# ...#. .#... ..#.. ...#. .##.# #.#.#",
    ".#... #...# #...# #.#.# ..#.. #...# ..#.. ..#.. ..#.. ..#.. #..#. ##.##",
    ".#..# #..## .#.#. #.#.# .#.#. #...# .#... ..#.. ..#.. ..#.. ..... #.#.#",
    "..##. .##.# ..#.. .#.#. #...# .#### ##### ...## ..#.. ##... ..... #####",
    "..... ..... ..... ..... ..... ....# ..... ..... ..#.. ..... ..... .....",
    "..... ..... ..... ..... ..... .###. ..... ..... ..... ..... ..... .....",
};

// Each glyph as 9 rows of 5 bits, bit 4 the leftmost column, unpacked from kArt at compile
// time: a typo in the drawing (a row of the wrong length) stops the build.
using Glyph = std::array<uint8_t, kGlyphHeight>;

constexpr std::array<Glyph, kGlyphCount> unpack_font() {
  std::array<Glyph, kGlyphCount> font{};
  for (int band = 0; band < kBands; ++band) {
    for (int row = 0; row < kGlyphHeight; ++row) {
      const std::string_view line = kArt[static_cast<size_t>(band * kGlyphHeight + row)];
      if (line.size() != kGlyphsPerBand * kAdvance - 1) throw "font: a row of the wrong length";
      for (int k = 0; k < kGlyphsPerBand; ++k) {
        uint8_t bits = 0;
        for (int col = 0; col < kGlyphWidth; ++col) {
          const char c = line[static_cast<size_t>(k * kAdvance + col)];
          if (c != '#' && c != '.') throw "font: a pixel that is neither '#' nor '.'";
          bits = static_cast<uint8_t>(bits << 1 | (c == '#' ? 1 : 0));
        }
        font[static_cast<size_t>(band * kGlyphsPerBand + k)][static_cast<size_t>(row)] = bits;
      }
    }
  }
  return font;
}

constexpr std::array<Glyph, kGlyphCount> kFont = unpack_font();

// Beyond ASCII, one glyph: the word-start marker "▁" (U+2581) that tokenizers show in labels
// (data/tokenizer.h), drawn as the open box of a visible space so that it cannot be read as
// an underscore.
constexpr char32_t kWordStart = 0x2581;
constexpr Glyph kWordStartGlyph = {0, 0, 0, 0, 0, 0, 0b10001, 0b11111, 0};

const Glyph& glyph(char32_t c) {
  if (c == kWordStart) return kWordStartGlyph;
  if (c < kFirst || c > kMissing) c = kMissing;
  return kFont[static_cast<size_t>(c - kFirst)];
}

// Reads the UTF-8 code point that starts at text[i] and moves i past it. A malformed
// sequence reads as kMissing and moves i by one byte, so every broken byte shows as a box.
char32_t next_code_point(std::string_view text, size_t& i) {
  const auto byte = [&text](size_t k) {
    return static_cast<uint8_t>(text[k]);
  };
  const uint8_t lead = byte(i);
  if (lead < 0x80) {
    ++i;
    return lead;
  }
  const size_t length = lead >= 0xF0 && lead < 0xF8 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 0;
  if (length == 0 || i + length > text.size()) {
    ++i;
    return kMissing;
  }
  char32_t c = lead & (0x7F >> length);
  for (size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) {
      ++i;
      return kMissing;
    }
    c = c << 6 | (byte(i + k) & 0x3F);
  }
  i += length;
  return c;
}

void check_scale(int scale) {
  if (scale < 1)
    throw std::invalid_argument(
        fmt::format("font: scale {} is not a positive whole number", scale));
}

int count_code_points(std::string_view text) {
  int n = 0;
  for (size_t i = 0; i < text.size(); ++n) next_code_point(text, i);
  return n;
}

// Calls plot(u, v) for every inked image pixel of text laid out horizontally, u along the
// text and v down, relative to the bounding box's top-left corner.
template <typename Plot>
void for_each_ink(std::string_view text, int scale, Plot plot) {
  check_scale(scale);
  int pen = 0;
  for (size_t i = 0; i < text.size(); pen += kAdvance * scale) {
    const Glyph& g = glyph(next_code_point(text, i));
    for (int row = 0; row < kGlyphHeight; ++row)
      for (int col = 0; col < kGlyphWidth; ++col)
        if (g[static_cast<size_t>(row)] >> (kGlyphWidth - 1 - col) & 1)
          for (int dy = 0; dy < scale; ++dy)
            for (int dx = 0; dx < scale; ++dx) plot(pen + col * scale + dx, row * scale + dy);
  }
}

}  // namespace

bool glyph_pixel(char32_t c, int col, int row) {
  if (col < 0 || col >= kGlyphWidth || row < 0 || row >= kGlyphHeight) return false;
  return glyph(c)[static_cast<size_t>(row)] >> (kGlyphWidth - 1 - col) & 1;
}

int text_width(std::string_view text, int scale) {
  check_scale(scale);
  const int n = count_code_points(text);
  return n == 0 ? 0 : (n * kAdvance - (kAdvance - kGlyphWidth)) * scale;
}

int text_height(int scale) {
  check_scale(scale);
  return kGlyphHeight * scale;
}

void draw_text(Image& image, int x, int y, std::string_view text, Rgb colour, int scale,
               bool bold) {
  for_each_ink(text, scale, [&](int u, int v) {
    image.set(x + u, y + v, colour);
    if (bold) image.set(x + u + 1, y + v, colour);
  });
}

void draw_text_vertical(Image& image, int x, int y, std::string_view text, Rgb colour, int scale) {
  // Turning counter-clockwise sends the text's start to the bottom: (u, v) -> (v, W - 1 - u).
  const int w = text_width(text, scale);
  for_each_ink(text, scale, [&](int u, int v) { image.set(x + v, y + w - 1 - u, colour); });
}

std::string elide(std::string_view text, int max_width, int scale) {
  if (text_width(text, scale) <= max_width) return std::string(text);
  const int marker = text_width("..", scale) + (kAdvance - kGlyphWidth) * scale;
  size_t end = 0;
  for (size_t i = 0; i < text.size();) {
    next_code_point(text, i);
    if (text_width(text.substr(0, i), scale) + marker > max_width) break;
    end = i;
  }
  return std::string(text.substr(0, end)) + "..";
}

}  // namespace gf::viz
