// UTF-8 (RFC 3629, §3): checking text and splitting it into code points, for the tokenizers
// and chrF. A code point is what this project calls a character: "ü" typed as one code point
// (U+00FC) is one character, "u" followed by a combining diaeresis (U+0308) is two. Grapheme
// clusters would need Unicode's segmentation tables, which a toy tokenizer does not need.
//
// Valid UTF-8 encodes each code point in the shortest of these forms (x are payload bits):
//
//   U+0000  .. U+007F     0xxxxxxx
//   U+0080  .. U+07FF     110xxxxx 10xxxxxx
//   U+0800  .. U+FFFF     1110xxxx 10xxxxxx 10xxxxxx          (not U+D800 .. U+DFFF)
//   U+10000 .. U+10FFFF   11110xxx 10xxxxxx 10xxxxxx 10xxxxxx
//
// Everything else is refused: a continuation byte (10xxxxxx) with no lead byte, a sequence
// cut short, a longer form than needed ("overlong", e.g. C0 AF for '/'), a UTF-16 surrogate
// (U+D800 .. U+DFFF) and anything above U+10FFFF.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "autograd/errors.h"

namespace gf::data {

// Invalid UTF-8. what() names the byte offset and the problem, e.g.
//   invalid UTF-8 at byte 3: 0x80 is a continuation byte with no lead byte before it
// offset() lets a caller that knows where the text came from say "corpus.de:17: ...".
class Utf8Error : public FormatError {
 public:
  Utf8Error(size_t offset, const std::string& problem);
  size_t offset() const { return offset_; }
  const std::string& problem() const { return problem_; }

 private:
  size_t offset_;
  std::string problem_;
};

// Throws Utf8Error for the first invalid byte of text; returns normally for valid UTF-8.
void check_utf8(std::string_view text);
bool is_valid_utf8(std::string_view text);

// The code points of valid UTF-8 text, in order. Throws Utf8Error.
std::u32string decode_utf8(std::string_view text);

// The UTF-8 bytes of one code point. Throws std::invalid_argument for a surrogate or a value
// above U+10FFFF, which have no UTF-8 form.
std::string encode_utf8(char32_t code_point);
std::string encode_utf8(std::u32string_view code_points);

// bytes with each byte that does not start a valid sequence replaced by U+FFFD, the
// replacement character "\uFFFD"; valid text comes back unchanged. For showing bytes that a
// model produced, which need not be UTF-8.
std::string repair_utf8(std::string_view bytes);

// text cut into its characters, each a view of the 1 to 4 bytes of one code point; joining
// them gives text back. Throws Utf8Error.
std::vector<std::string_view> split_utf8(std::string_view text);

}  // namespace gf::data
