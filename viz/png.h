// Images in memory and as PNG files: an RGB pixel grid with the few drawing primitives the
// heatmaps and plots need, and write_png, the one place that talks to stb_image_write.
// Coordinates are pixels, x to the right and y down, (0, 0) the top-left corner. Drawing
// outside the image is clipped silently, so a long label never crashes a program; reading
// outside it (at) throws, because that is a bug in the caller.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gf::viz {

struct Rgb {
  uint8_t r = 0, g = 0, b = 0;
  friend bool operator==(const Rgb&, const Rgb&) = default;
};

// A rectangle of pixels: top-left corner (x, y), w wide and h tall.
struct Rect {
  int x = 0, y = 0, w = 0, h = 0;
};

inline constexpr Rgb kWhite{255, 255, 255};
inline constexpr Rgb kBlack{0, 0, 0};

// The colour a fraction alpha of the way from a to b (alpha 0 gives a, 1 gives b).
Rgb mix(Rgb a, Rgb b, float alpha);

class Image {
 public:
  // A width x height image filled with background. Throws std::invalid_argument for an empty
  // or absurdly large size ("image: size 0 x 10 is empty").
  Image(int width, int height, Rgb background = kWhite);

  int width() const { return width_; }
  int height() const { return height_; }
  const uint8_t* data() const { return pixels_.data(); }  // r, g, b per pixel, row by row

  Rgb at(int x, int y) const;  // throws std::out_of_range outside the image
  void set(int x, int y, Rgb colour);
  void blend(int x, int y, Rgb colour, float alpha);  // alpha in [0, 1]: how much colour covers
  void fill_rect(int x, int y, int w, int h, Rgb colour);
  void stroke_rect(int x, int y, int w, int h, Rgb colour);  // a 1-pixel outline
  void blit(const Image& source, int x, int y);              // source's top-left lands on (x, y)

 private:
  int width_;
  int height_;
  std::vector<uint8_t> pixels_;
};

// The PNG file's bytes (signature, IHDR, compressed pixels, IEND), built in memory.
std::vector<uint8_t> encode_png(const Image& image);

// Writes image to path as a PNG, creating missing parent directories. The bytes go to a
// temporary file that is then renamed, so a reader never sees half an image. Throws
// std::runtime_error("png: cannot write out/x.png: <reason>").
void write_png(const Image& image, const std::string& path);

}  // namespace gf::viz
