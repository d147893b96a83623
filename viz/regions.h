// What a classifier of points in the plane has learned: a square of the plane drawn pixel by
// pixel in a light colour for the class predicted there, with the training points on top as
// dots in the strong colour of their class, inside a frame, centred under a title (a title
// wider than the square widens the image). The caller runs its model on
// region_pixel_centres() and passes one class per pixel.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "autograd/tensor.h"
#include "viz/png.h"

namespace gf::viz {

// Every member has an initializer, so designated initializers may name any subset of them
// (GCC's -Wmissing-field-initializers asks for that).
struct RegionsOptions {
  std::string title{};
  float lo = -1.2f, hi = 1.2f;  // the square [lo, hi] x [lo, hi] of the plane that is shown
  int size = 360;               // its side in pixels
  std::vector<Rgb> colours = {{31, 119, 180}, {214, 39, 40}};  // class 0 blue, class 1 red
};

// The centre of every pixel of the square as a point (x, y), row by row from the top (largest
// y) and left to right in a row: size * size points, x and y interleaved.
std::vector<float> region_pixel_centres(const RegionsOptions& options = {});

// Where regions() draws the square in its image: pixel (col, row) of the square, the one
// centred on point col + row * size of region_pixel_centres(), is image pixel
// (square.x + col, square.y + row).
Rect region_square(const RegionsOptions& options = {});

// classes holds the class predicted at each of those points, in their order; points [N, 2]
// the training points and labels [N] their classes; dots are clipped to the square.
// Throws std::invalid_argument when classes has not size * size entries, when a class has
// no colour, or for options.size < 1 or lo >= hi; gf::ShapeError when points is not [N, 2]
// or labels not [N].
Image regions(std::span<const int32_t> classes, const Tensor& points, const IndexTensor& labels,
              const RegionsOptions& options = {});

}  // namespace gf::viz
