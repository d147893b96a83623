// Helpers shared by the viz tests: Catch2 prints an Rgb as "rgb(68, 1, 84)" when a check
// fails, ink() counts the pixels that are not the background, and BuiltinFont draws with the
// bitmap font for as long as it lives.
#pragma once

#include <catch2/catch.hpp>
#include <string>

#include "viz/png.h"
#include "viz/text.h"

namespace Catch {
template <>
struct StringMaker<gf::viz::Rgb> {
  static std::string convert(const gf::viz::Rgb& c) {
    return "rgb(" + std::to_string(c.r) + ", " + std::to_string(c.g) + ", " + std::to_string(c.b) +
           ")";
  }
};
}  // namespace Catch

namespace gf::viz::testing {

// The number of pixels in the rectangle [x, x + w) x [y, y + h) that differ from background.
inline int ink(const Image& image, int x, int y, int w, int h, Rgb background = kWhite) {
  int n = 0;
  for (int py = y; py < y + h; ++py)
    for (int px = x; px < x + w; ++px) n += image.at(px, py) != background;
  return n;
}

// While one lives, text is drawn with the built-in bitmap font, as on a machine without font
// files; afterwards with the system's fonts again.
struct BuiltinFont {
  BuiltinFont() { use_builtin_font(); }
  ~BuiltinFont() { use_system_fonts(); }
  BuiltinFont(const BuiltinFont&) = delete;
  BuiltinFont& operator=(const BuiltinFont&) = delete;
};

}  // namespace gf::viz::testing
