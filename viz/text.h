// Text in the pictures: labels, titles and tick values, antialiased, in any script the fonts
// cover. Text is UTF-8 and is drawn from TrueType fonts by stb_truetype: DejaVu Sans first
// (DejaVu Sans Bold for bold text), then a CJK face (WenQuanYi Micro Hei, or another one
// listed in text.cpp), glyph by glyph: each code point comes from the first face that has it.
// A code point no face has (a control character, a broken byte) draws as the chequered box
// of the built-in bitmap font (viz/bitmap_font.h), which stays visible. When no font file is
// found at all, every text is drawn with that bitmap font instead, at the scale nearest the
// size.
//
// Font files are read lazily, once per process, and only from the system's font folders or
// from use_font_files(): stb_truetype trusts the files it parses, so a path never comes from
// an environment variable or from data. Drawing may be called from several threads; the
// same text always gives the same pixels.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "viz/png.h"

namespace gf::viz {

struct TextStyle {
  int size = 14;  // pixels per em, as in CSS; DejaVu Sans' capitals are 0.73 of it
  bool bold = false;
};

// The line box that draw_text places: `ascent` pixels from its top to the baseline and
// `line_height` pixels tall in all (descenders included). Accents and CJK glyphs may ink a
// pixel or two outside it; nothing is clipped.
struct TextMetrics {
  int ascent = 0;
  int line_height = 0;
  int cap_height = 0;  // of a capital letter, above the baseline

  // From the top of the line box to the middle of the capitals, which is what the eye
  // centres on: text whose capitals are centred on row y goes at top y - cap_middle().
  int cap_middle() const { return ascent - cap_height / 2; }
};

// Throws std::invalid_argument for a size outside [1, 512] ("text: size 0 is not ...").
TextMetrics text_metrics(TextStyle style = {});

// The width of text's line box: the glyphs' advances, kerned. 0 for "".
int text_width(std::string_view text, TextStyle style = {});

// Draws text with its line box's top-left corner at (x, y), blending its antialiased edges
// into what is there. Pixels outside the image are clipped.
void draw_text(Image& image, int x, int y, std::string_view text, Rgb colour, TextStyle style = {});

// Draws text turned 90 degrees counter-clockwise (it reads from bottom to top, as a y-axis
// label does), with its line box (line_height wide, text_width tall) at (x, y).
void draw_text_vertical(Image& image, int x, int y, std::string_view text, Rgb colour,
                        TextStyle style = {});

// text itself if it is at most max_width pixels wide, otherwise as many leading code points
// as fit followed by an ellipsis ("…", or ".." in the bitmap font): "attention" -> "atten…".
std::string elide(std::string_view text, int max_width, TextStyle style = {});

// Which fonts draw text. Until one of these is called, the system's fonts are looked for on
// first use. Each takes effect for text drawn after it returns.
void use_system_fonts();
// Only the built-in bitmap font, as on a machine without font files (for tests).
void use_builtin_font();
// These files, in this order of preference (the first also gives the line metrics; bold is
// then drawn by thickening). Throws std::runtime_error naming a file that cannot be read or
// is not a font ("text: /tmp/x.ttf is not a TrueType or OpenType font"), and keeps the fonts
// it had.
void use_font_files(const std::vector<std::string>& paths);

// The font files in use, primary first; empty when the bitmap font draws everything.
std::vector<std::string> font_files();

// The bitmap font's scale for a size: the one whose capitals (7 pixels a step) come nearest
// to DejaVu Sans' at that size, at least 1.
int bitmap_scale(int size);

}  // namespace gf::viz
