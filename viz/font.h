// A built-in bitmap font for labels: printable ASCII (32..126) and the tokenizers' word-start
// marker U+2581 (drawn as an open box, like a visible space), each glyph 5 x 9 pixels
// (7 above the baseline, 2 for descenders), drawn 6 pixels apart. scale s draws every
// font pixel as an s x s block; s < 1 throws std::invalid_argument. Text is UTF-8: a code
// point the font lacks (an accented letter, a control character, a broken byte) draws as
// one chequered box, so that it stays visible.
#pragma once

#include <string>
#include <string_view>

#include "viz/png.h"

namespace gf::viz {

inline constexpr int kGlyphWidth = 5;   // font pixels
inline constexpr int kGlyphHeight = 9;  // including the descender
inline constexpr int kCapHeight = 7;    // from the top of a capital to the baseline
inline constexpr int kAdvance = 6;      // from one glyph's left edge to the next

// Whether font pixel (col, row) of the glyph for code point c is ink; col in [0, 5),
// row in [0, 9). Unknown code points give the chequered box.
bool glyph_pixel(char32_t c, int col, int row);

// The size of text's bounding box in image pixels (no trailing gap after the last glyph).
int text_width(std::string_view text, int scale = 1);
int text_height(int scale = 1);  // kGlyphHeight * scale, whatever the text

// Draws text with its bounding box's top-left corner at (x, y). bold draws every glyph a
// second time one pixel to the right (one pixel wider in all), for titles.
void draw_text(Image& image, int x, int y, std::string_view text, Rgb colour, int scale = 1,
               bool bold = false);

// Draws text turned 90 degrees counter-clockwise (it reads from bottom to top, as a y-axis
// label does), with its bounding box (text_height wide, text_width tall) at (x, y).
void draw_text_vertical(Image& image, int x, int y, std::string_view text, Rgb colour,
                        int scale = 1);

// text itself if it is at most max_width pixels wide, otherwise as many leading code
// points as fit followed by "..", e.g. "attention" -> "atten..".
std::string elide(std::string_view text, int max_width, int scale = 1);

}  // namespace gf::viz
