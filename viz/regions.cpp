#include "viz/regions.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "autograd/errors.h"
#include "viz/text.h"

namespace gf::viz {

namespace {

constexpr TextStyle kTitle{.size = 15, .bold = true};
constexpr int kTitleTop = 8;
constexpr int kMargin = 10;           // around the rest of it
constexpr int kDotRadiusSquared = 5;  // a dot: the pixels within sqrt(5) of the point's
constexpr float kLightness = 0.25f;   // how much of a class's colour tints its region

void check_arguments(std::span<const int32_t> classes, const Tensor& points,
                     const IndexTensor& labels, const RegionsOptions& options) {
  if (options.size < 1 || !(options.lo < options.hi))
    throw std::invalid_argument(fmt::format("regions: cannot show [{}, {}] in {} pixels",
                                            options.lo, options.hi, options.size));
  const auto pixels = static_cast<size_t>(options.size) * static_cast<size_t>(options.size);
  if (classes.size() != pixels)
    throw std::invalid_argument(fmt::format("regions: {} classes for {} x {} pixels",
                                            classes.size(), options.size, options.size));
  if (points.rank() != 2 || points.dim(1) != 2 || labels.shape().rank() != 1 ||
      labels.numel() != points.dim(0))
    throw ShapeError(fmt::format("regions: expected points [N, 2] and labels [N], got {} and {}",
                                 points.shape(), labels.shape()));
  const auto colours = static_cast<int32_t>(options.colours.size());
  const auto has_colour = [&](int32_t c) {
    return c >= 0 && c < colours;
  };
  for (const int32_t c : classes)
    if (!has_colour(c))
      throw std::invalid_argument(fmt::format("regions: class {} has no colour", c));
  for (int64_t i = 0; i < labels.numel(); ++i)
    if (!has_colour(labels.data()[i]))
      throw std::invalid_argument(fmt::format("regions: class {} has no colour", labels.data()[i]));
}

// The square sits under the title, centred in an image as wide as the wider of the two.
Rect square_of(const RegionsOptions& options) {
  const int width = std::max(options.size, text_width(options.title, kTitle)) + 2 * kMargin;
  return {(width - options.size) / 2, kTitleTop + text_metrics(kTitle).line_height + 6,
          options.size, options.size};
}

}  // namespace

Rect region_square(const RegionsOptions& options) {
  return square_of(options);
}

std::vector<float> region_pixel_centres(const RegionsOptions& options) {
  const int size = options.size;
  const float lo = options.lo, hi = options.hi, side = static_cast<float>(size);
  std::vector<float> centres;
  centres.reserve(2 * static_cast<size_t>(size) * static_cast<size_t>(size));
  for (int r = 0; r < size; ++r)
    for (int c = 0; c < size; ++c) {
      centres.push_back(lo + (hi - lo) * (static_cast<float>(c) + 0.5f) / side);
      centres.push_back(hi - (hi - lo) * (static_cast<float>(r) + 0.5f) / side);
    }
  return centres;
}

Image regions(std::span<const int32_t> classes, const Tensor& points, const IndexTensor& labels,
              const RegionsOptions& options) {
  check_arguments(classes, points, labels, options);
  const int size = options.size;
  const float lo = options.lo, hi = options.hi, side = static_cast<float>(size);
  const std::vector<Rgb>& strong = options.colours;
  const Rect square = square_of(options);
  const int left = square.x, top = square.y;
  Image image(std::max(size, text_width(options.title, kTitle)) + 2 * kMargin,
              top + size + kMargin);
  for (int i = 0; i < size * size; ++i)
    image.set(
        left + i % size, top + i / size,
        mix(kWhite, strong[static_cast<size_t>(classes[static_cast<size_t>(i)])], kLightness));
  for (int64_t i = 0; i < labels.numel(); ++i) {
    const float px = points.data()[2 * i], py = points.data()[2 * i + 1];
    const int x = left + static_cast<int>((px - lo) / (hi - lo) * side);
    const int y = top + static_cast<int>((hi - py) / (hi - lo) * side);
    for (int dy = -2; dy <= 2; ++dy)
      for (int dx = -2; dx <= 2; ++dx)
        if (dx * dx + dy * dy <= kDotRadiusSquared && x + dx >= left && x + dx < left + size &&
            y + dy >= top && y + dy < top + size)
          image.set(x + dx, y + dy, strong[static_cast<size_t>(labels.data()[i])]);
  }
  image.stroke_rect(left - 1, top - 1, size + 2, size + 2, kBlack);
  draw_text(image, (image.width() - text_width(options.title, kTitle)) / 2, kTitleTop,
            options.title, kBlack, kTitle);
  return image;
}

}  // namespace gf::viz
