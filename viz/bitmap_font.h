// A built-in bitmap font, the fallback of viz/text.h when no font file can be loaded: printable
// ASCII (32..126) and the tokenizers' word-start marker U+2581 (drawn as an open box, like a
// visible space), each glyph 5 x 9 pixels (7 above the baseline, 2 for descenders), drawn
// 6 pixels apart. A code point the font lacks (an accented letter, a control character, a
// broken byte) has the glyph of a chequered box, so that it stays visible; text.h draws that
// box for code points no font file has either.
//
// Also here: the UTF-8 decoder that every text drawing shares.
#pragma once

#include <cstddef>
#include <string_view>

namespace gf::viz {

namespace bitmap {

inline constexpr int kGlyphWidth = 5;       // font pixels
inline constexpr int kGlyphHeight = 9;      // including the descender
inline constexpr int kCapHeight = 7;        // from the top of a capital to the baseline
inline constexpr int kAdvance = 6;          // from one glyph's left edge to the next
inline constexpr char32_t kMissing = 0x7F;  // DEL has no glyph: its cell holds the box

// Whether the font has a glyph of its own for c (else c draws as the box).
bool has_glyph(char32_t c);

// Whether font pixel (col, row) of the glyph for code point c is ink; col in [0, 5),
// row in [0, 9); false outside. Code points the font lacks give the chequered box.
bool glyph_pixel(char32_t c, int col, int row);

}  // namespace bitmap

// What next_code_point returns for a byte that does not start a well-formed UTF-8 sequence.
// It is a control character, which no font draws, so a broken byte shows as the box.
inline constexpr char32_t kBrokenByte = bitmap::kMissing;

// Reads the UTF-8 code point that starts at text[i] (i < text.size()) and moves i past it.
// A malformed or cut-off sequence reads as kBrokenByte and moves i by one byte, so every
// broken byte shows as one box.
char32_t next_code_point(std::string_view text, size_t& i);

}  // namespace gf::viz
