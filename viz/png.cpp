#include "viz/png.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "viz/atomic_file.h"

// stb_image_write is a single-header library: the implementation is compiled here and
// nowhere else. STATIC keeps its symbols private to this file; NO_STDIO because we write
// the file ourselves (viz/atomic_file.h), to get atomic replacement and real error messages.
#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STB_IMAGE_WRITE_STATIC
#define STBI_WRITE_NO_STDIO
#include <stb_image_write.h>

namespace gf::viz {

namespace {
// Large enough for any plot a learner draws, small enough that a bad argument cannot
// allocate gigabytes.
constexpr int kMaxSide = 16384;
}  // namespace

Rgb mix(Rgb a, Rgb b, float alpha) {
  alpha = std::clamp(alpha, 0.0f, 1.0f);
  auto channel = [alpha](uint8_t from, uint8_t to) {
    const float v = static_cast<float>(from) + alpha * (static_cast<float>(to) - from);
    return static_cast<uint8_t>(std::lround(v));
  };
  return {channel(a.r, b.r), channel(a.g, b.g), channel(a.b, b.b)};
}

Image::Image(int width, int height, Rgb background) : width_(width), height_(height) {
  if (width <= 0 || height <= 0)
    throw std::invalid_argument(fmt::format("image: size {} x {} is empty", width, height));
  if (width > kMaxSide || height > kMaxSide)
    throw std::invalid_argument(fmt::format(
        "image: size {} x {} exceeds the maximum of {} pixels a side", width, height, kMaxSide));
  pixels_.resize(static_cast<size_t>(width) * static_cast<size_t>(height) * 3);
  fill_rect(0, 0, width, height, background);
}

Rgb Image::at(int x, int y) const {
  if (x < 0 || x >= width_ || y < 0 || y >= height_)
    throw std::out_of_range(
        fmt::format("image: pixel ({}, {}) is outside the {} x {} image", x, y, width_, height_));
  const size_t i =
      (static_cast<size_t>(y) * static_cast<size_t>(width_) + static_cast<size_t>(x)) * 3;
  return {pixels_[i], pixels_[i + 1], pixels_[i + 2]};
}

void Image::set(int x, int y, Rgb colour) {
  if (x < 0 || x >= width_ || y < 0 || y >= height_) return;
  const size_t i =
      (static_cast<size_t>(y) * static_cast<size_t>(width_) + static_cast<size_t>(x)) * 3;
  pixels_[i] = colour.r;
  pixels_[i + 1] = colour.g;
  pixels_[i + 2] = colour.b;
}

void Image::blend(int x, int y, Rgb colour, float alpha) {
  if (x < 0 || x >= width_ || y < 0 || y >= height_ || !(alpha > 0.0f)) return;
  set(x, y, mix(at(x, y), colour, alpha));
}

void Image::fill_rect(int x, int y, int w, int h, Rgb colour) {
  const int x0 = std::max(x, 0), x1 = std::min(x + w, width_);
  const int y0 = std::max(y, 0), y1 = std::min(y + h, height_);
  for (int py = y0; py < y1; ++py)
    for (int px = x0; px < x1; ++px) set(px, py, colour);
}

void Image::stroke_rect(int x, int y, int w, int h, Rgb colour) {
  if (w <= 0 || h <= 0) return;
  fill_rect(x, y, w, 1, colour);
  fill_rect(x, y + h - 1, w, 1, colour);
  fill_rect(x, y, 1, h, colour);
  fill_rect(x + w - 1, y, 1, h, colour);
}

void Image::blit(const Image& source, int x, int y) {
  for (int sy = 0; sy < source.height(); ++sy)
    for (int sx = 0; sx < source.width(); ++sx) set(x + sx, y + sy, source.at(sx, sy));
}

std::vector<uint8_t> encode_png(const Image& image) {
  std::vector<uint8_t> bytes;
  auto append = [](void* context, void* data, int size) {
    auto* out = static_cast<std::vector<uint8_t>*>(context);
    const auto* begin = static_cast<const uint8_t*>(data);
    out->insert(out->end(), begin, begin + size);
  };
  const int ok = stbi_write_png_to_func(append, &bytes, image.width(), image.height(), /*comp=*/3,
                                        image.data(), /*stride_in_bytes=*/image.width() * 3);
  if (!ok) throw std::runtime_error("png: stb_image_write could not encode the image");
  return bytes;
}

void write_png(const Image& image, const std::string& path) {
  const std::vector<uint8_t> bytes = encode_png(image);
  write_file_atomically({reinterpret_cast<const char*>(bytes.data()), bytes.size()}, path, "png");
}

}  // namespace gf::viz
