#include "viz/arrow.h"

#include <algorithm>
#include <cmath>

namespace gf::viz {

namespace {

// A point's position in a frame whose origin is the start of a segment: `along` the segment
// and `across` it.
struct Frame {
  float x0, y0, ux, uy;  // start and unit direction
  float along(float x, float y) const { return (x - x0) * ux + (y - y0) * uy; }
  float across(float x, float y) const { return (x - x0) * -uy + (y - y0) * ux; }
};

constexpr int kSamples = 4;  // per pixel side: 16 samples decide how much of a pixel is covered

// Blends colour into every pixel of the box [x_lo, x_hi] x [y_lo, y_hi] (image coordinates) by
// the fraction of its sample points for which inside(x, y) holds.
template <typename Inside>
void paint(Image& image, float x_lo, float y_lo, float x_hi, float y_hi, Rgb colour,
           Inside inside) {
  const int px_lo = std::max(0, static_cast<int>(std::floor(x_lo)));
  const int py_lo = std::max(0, static_cast<int>(std::floor(y_lo)));
  const int px_hi = std::min(image.width() - 1, static_cast<int>(std::ceil(x_hi)));
  const int py_hi = std::min(image.height() - 1, static_cast<int>(std::ceil(y_hi)));
  for (int py = py_lo; py <= py_hi; ++py)
    for (int px = px_lo; px <= px_hi; ++px) {
      int hits = 0;
      for (int sy = 0; sy < kSamples; ++sy)
        for (int sx = 0; sx < kSamples; ++sx)
          hits += inside(static_cast<float>(px) + (static_cast<float>(sx) + 0.5f) / kSamples,
                         static_cast<float>(py) + (static_cast<float>(sy) + 0.5f) / kSamples);
      image.blend(px, py, colour, static_cast<float>(hits) / (kSamples * kSamples));
    }
}

}  // namespace

void draw_line(Image& image, float x0, float y0, float x1, float y1, Rgb colour, float width) {
  const float length = std::hypot(x1 - x0, y1 - y0);
  const float half = width / 2.0f;
  // A line of length 0 is a width x width square; its direction does not matter.
  const Frame f = length > 0.0f ? Frame{x0, y0, (x1 - x0) / length, (y1 - y0) / length}
                                : Frame{x0, y0, 1.0f, 0.0f};
  paint(image, std::min(x0, x1) - width, std::min(y0, y1) - width, std::max(x0, x1) + width,
        std::max(y0, y1) + width, colour, [&](float x, float y) {
          const float a = f.along(x, y), c = f.across(x, y);
          return a >= -half && a <= length + half && std::abs(c) <= half;
        });
}

void draw_arrow(Image& image, float x0, float y0, float x1, float y1, Rgb colour,
                ArrowStyle style) {
  const float length = std::hypot(x1 - x0, y1 - y0);
  if (!(length > 0.0f)) return;
  const Frame f{x0, y0, (x1 - x0) / length, (y1 - y0) / length};
  const float half = style.width / 2.0f;
  const float base = length - style.head_length;  // where the head begins, along the arrow
  const float reach = std::max(style.width, style.head_width) + style.head_length;
  paint(image, std::min(x0, x1) - reach, std::min(y0, y1) - reach, std::max(x0, x1) + reach,
        std::max(y0, y1) + reach, colour, [&](float x, float y) {
          const float a = f.along(x, y), c = std::abs(f.across(x, y));
          const bool shaft = a >= -half && a <= std::max(base, 0.0f) && c <= half;
          // The head narrows linearly from head_width / 2 at its base to 0 at the tip.
          const bool head = a >= base && a <= length &&
                            c <= style.head_width / 2.0f * (length - a) / style.head_length;
          return shaft || head;
        });
}

}  // namespace gf::viz
