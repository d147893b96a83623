#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

#include "autograd/errors.h"
#include "autograd/tensor.h"
#include "tests/viz/viz_testing.h"
#include "viz/regions.h"
#include "viz/text.h"

using namespace gf::viz;
using Catch::Matchers::Contains;
using gf::IndexTensor;
using gf::Tensor;
using gf::viz::testing::ink;

TEST_CASE("region pixel centres run row by row from the top left", "[viz][regions]") {
  const std::vector<float> centres = region_pixel_centres({.lo = -1.0f, .hi = 1.0f, .size = 4});
  REQUIRE(centres.size() == 2 * 4 * 4);
  CHECK(centres[0] == -0.75f);  // the top-left pixel: smallest x, largest y
  CHECK(centres[1] == 0.75f);
  CHECK(centres[2] == -0.25f);  // the next one to its right
  CHECK(centres[3] == 0.75f);
  CHECK(centres[2 * 4 + 1] == 0.25f);  // the first of the second row, one pixel lower
  CHECK(centres[30] == 0.75f);         // the bottom-right pixel
  CHECK(centres[31] == -0.75f);
}

TEST_CASE("regions colour each pixel by its class and draw the points on top", "[viz][regions]") {
  const RegionsOptions options{.title = "two classes", .lo = -1.0f, .hi = 1.0f, .size = 20};
  std::vector<int32_t> classes;  // class 0 in the left half, class 1 in the right
  for (int row = 0; row < 20; ++row)
    for (int col = 0; col < 20; ++col) classes.push_back(col < 10 ? 0 : 1);
  // One point of class 0 at (0.5, 0.5), in class 1's region; one far outside the square.
  const Tensor points = Tensor::from({2, 2}, {0.5f, 0.5f, 5.0f, 5.0f});
  const IndexTensor labels = IndexTensor::from({2}, {0, 1});
  const Image image = regions(classes, points, labels, options);
  const Rect square = region_square(options);
  // The title is wider than the square: the image is as wide as the title plus margins of
  // 10, with the square centred under it.
  CHECK(image.width() == text_width("two classes", {.size = 15, .bold = true}) + 20);
  CHECK(image.width() - (square.x + 20) - square.x <= 1);
  CHECK(image.width() - (square.x + 20) - square.x >= 0);
  CHECK(region_square({.size = 20}).x == 10);  // no title: margins of 10
  CHECK(image.height() > square.y + 20);
  const auto pixel = [&](int col, int row) {
    return image.at(square.x + col, square.y + row);
  };
  const Rgb light0 = mix(kWhite, options.colours[0], 0.25f);
  const Rgb light1 = mix(kWhite, options.colours[1], 0.25f);
  CHECK(pixel(2, 15) == light0);
  CHECK(pixel(9, 0) == light0);
  CHECK(pixel(10, 0) == light1);
  CHECK(pixel(19, 19) == light1);
  // (0.5, 0.5) is 3/4 of the way across and 1/4 of the way down: pixel (15, 5).
  CHECK(pixel(15, 5) == options.colours[0]);
  CHECK(pixel(17, 5) == options.colours[0]);  // a dot is 5 pixels across
  CHECK(pixel(18, 5) == light1);
  int strong1 = 0;  // the point outside the square leaves no trace in it
  for (int row = 0; row < 20; ++row)
    for (int col = 0; col < 20; ++col) strong1 += pixel(col, row) == options.colours[1];
  CHECK(strong1 == 0);
  CHECK(image.at(square.x - 1, square.y - 1) == kBlack);  // the frame
  CHECK(image.at(square.x + 20, square.y + 20) == kBlack);
  CHECK(ink(image, 0, 0, image.width(), square.y - 2) > 20);  // the title
}

TEST_CASE("regions rejects classes and points it cannot draw", "[viz][regions]") {
  const RegionsOptions options{.size = 2};
  const Tensor points = Tensor::from({1, 2}, {0.0f, 0.0f});
  const IndexTensor labels = IndexTensor::from({1}, {0});
  CHECK_THROWS_WITH(regions(std::vector<int32_t>(3, 0), points, labels, options),
                    Contains("3 classes for 2 x 2 pixels"));
  CHECK_THROWS_WITH(regions(std::vector<int32_t>{0, 1, 2, 0}, points, labels, options),
                    Contains("class 2 has no colour"));
  CHECK_THROWS_AS(
      regions(std::vector<int32_t>(4, 0), Tensor::from({2}, {0.0f, 0.0f}), labels, options),
      gf::ShapeError);
  CHECK_THROWS_WITH(
      regions(std::vector<int32_t>(4, 0), points, labels, {.lo = 1.0f, .hi = -1.0f, .size = 2}),
      Contains("cannot show [1, -1] in 2 pixels"));
}
