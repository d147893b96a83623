#include "data/utf8.h"

#include <fmt/format.h>

#include <stdexcept>

namespace gf::data {

Utf8Error::Utf8Error(size_t offset, const std::string& problem)
    : FormatError(fmt::format("invalid UTF-8 at byte {}: {}", offset, problem)),
      offset_(offset),
      problem_(problem) {}

namespace {

// One decoded code point and how many bytes it took.
struct Decoded {
  char32_t code_point;
  size_t length;
};

bool is_continuation(unsigned char byte) {
  return (byte & 0xC0) == 0x80;
}

// Decodes the code point that starts at text[pos], or throws Utf8Error naming pos.
Decoded decode_at(std::string_view text, size_t pos) {
  const auto lead = static_cast<unsigned char>(text[pos]);
  if (lead < 0x80) return {lead, 1};
  if (is_continuation(lead))
    throw Utf8Error(
        pos, fmt::format("0x{:02X} is a continuation byte with no lead byte before it", lead));

  // The lead byte says how many bytes follow and holds the top payload bits; `lowest` is the
  // smallest code point that needs this many bytes (anything below it is an overlong form).
  size_t length = 0;
  char32_t code_point = 0;
  char32_t lowest = 0;
  if ((lead & 0xE0) == 0xC0) {
    length = 2, code_point = lead & 0x1Fu, lowest = 0x80;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3, code_point = lead & 0x0Fu, lowest = 0x800;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4, code_point = lead & 0x07u, lowest = 0x10000;
  } else {
    throw Utf8Error(pos, fmt::format("0x{:02X} can never appear in UTF-8", lead));
  }

  for (size_t k = 1; k < length; ++k) {
    if (pos + k >= text.size())
      throw Utf8Error(
          pos, fmt::format("the text ends inside a {}-byte sequence (lead byte 0x{:02X})", length,
                           lead));
    const auto byte = static_cast<unsigned char>(text[pos + k]);
    if (!is_continuation(byte))
      throw Utf8Error(pos, fmt::format("the {}-byte sequence starting with 0x{:02X} is cut short "
                                       "by 0x{:02X} at byte {}",
                                       length, lead, byte, pos + k));
    code_point = (code_point << 6) | (byte & 0x3Fu);
  }
  if (code_point < lowest)
    throw Utf8Error(pos, fmt::format("overlong {}-byte encoding of U+{:04X}", length,
                                     static_cast<uint32_t>(code_point)));
  if (code_point >= 0xD800 && code_point <= 0xDFFF)
    throw Utf8Error(pos, fmt::format("U+{:04X} is a UTF-16 surrogate, not a character",
                                     static_cast<uint32_t>(code_point)));
  if (code_point > 0x10FFFF)
    throw Utf8Error(pos, fmt::format("U+{:X} is above U+10FFFF, the last code point",
                                     static_cast<uint32_t>(code_point)));
  return {code_point, length};
}

}  // namespace

void check_utf8(std::string_view text) {
  for (size_t pos = 0; pos < text.size();) pos += decode_at(text, pos).length;
}

bool is_valid_utf8(std::string_view text) {
  try {
    check_utf8(text);
    return true;
  } catch (const Utf8Error&) {
    return false;
  }
}

std::u32string decode_utf8(std::string_view text) {
  std::u32string code_points;
  for (size_t pos = 0; pos < text.size();) {
    const Decoded d = decode_at(text, pos);
    code_points.push_back(d.code_point);
    pos += d.length;
  }
  return code_points;
}

std::string encode_utf8(char32_t code_point) {
  const auto cp = static_cast<uint32_t>(code_point);
  if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
    throw std::invalid_argument(fmt::format(
        "encode_utf8: U+{:04X} is not a character (a surrogate or above U+10FFFF)", cp));
  const auto byte = [](uint32_t bits) {
    return static_cast<char>(static_cast<unsigned char>(bits));
  };
  if (cp < 0x80) return {byte(cp)};
  if (cp < 0x800) return {byte(0xC0 | (cp >> 6)), byte(0x80 | (cp & 0x3F))};
  if (cp < 0x10000)
    return {byte(0xE0 | (cp >> 12)), byte(0x80 | ((cp >> 6) & 0x3F)), byte(0x80 | (cp & 0x3F))};
  return {byte(0xF0 | (cp >> 18)), byte(0x80 | ((cp >> 12) & 0x3F)),
          byte(0x80 | ((cp >> 6) & 0x3F)), byte(0x80 | (cp & 0x3F))};
}

std::string encode_utf8(std::u32string_view code_points) {
  std::string text;
  for (const char32_t cp : code_points) text += encode_utf8(cp);
  return text;
}

std::string repair_utf8(std::string_view bytes) {
  std::string text;
  for (size_t pos = 0; pos < bytes.size();) {
    try {
      const size_t length = decode_at(bytes, pos).length;
      text += bytes.substr(pos, length);
      pos += length;
    } catch (const Utf8Error&) {
      text += "\uFFFD";
      ++pos;
    }
  }
  return text;
}

std::vector<std::string_view> split_utf8(std::string_view text) {
  std::vector<std::string_view> characters;
  for (size_t pos = 0; pos < text.size();) {
    const size_t length = decode_at(text, pos).length;
    characters.push_back(text.substr(pos, length));
    pos += length;
  }
  return characters;
}

}  // namespace gf::data
