// Lines and arrows: where they put ink, the antialiased edges of a slanted line, the head of
// an arrow, and clipping at the image's edges.
#include <catch2/catch.hpp>

#include "tests/viz/viz_testing.h"
#include "viz/arrow.h"

using namespace gf::viz;
using gf::viz::testing::ink;

TEST_CASE("a vertical line covers exactly its pixel columns, with square ends", "[viz][arrow]") {
  Image image(20, 20);
  draw_line(image, 10.0f, 5.0f, 10.0f, 15.0f, kBlack, 2.0f);
  // Columns 9 and 10, rows 4 .. 15: the square ends reach one pixel (width / 2) past 5 and 15.
  CHECK(ink(image, 9, 4, 2, 12) == 24);
  CHECK(ink(image, 0, 0, 20, 20) == 24);
  CHECK(image.at(9, 4) == kBlack);
  CHECK(image.at(10, 15) == kBlack);
}

TEST_CASE("two lines meeting at a corner leave no notch", "[viz][arrow]") {
  Image image(20, 20);
  draw_line(image, 4.0f, 10.0f, 14.0f, 10.0f, kBlack, 2.0f);
  draw_line(image, 14.0f, 10.0f, 14.0f, 2.0f, kBlack, 2.0f);
  CHECK(image.at(14, 10) == kBlack);  // the outer corner pixel
  CHECK(image.at(14, 9) == kBlack);
}

TEST_CASE("a slanted line has antialiased edges", "[viz][arrow]") {
  Image image(30, 30);
  draw_line(image, 3.0f, 4.0f, 26.0f, 20.0f, kBlack, 3.0f);
  int partial = 0, full = 0;
  for (int y = 0; y < 30; ++y)
    for (int x = 0; x < 30; ++x) {
      const Rgb c = image.at(x, y);
      full += c == kBlack;
      partial += c != kBlack && c != kWhite;
    }
  CHECK(full > 40);
  CHECK(partial > 20);
  CHECK(image.at(14, 12) == kBlack);  // on the line
  CHECK(image.at(26, 4) == kWhite);   // far from it
}

TEST_CASE("an arrow ends in a head wider than its shaft, its tip at the end point",
          "[viz][arrow]") {
  Image image(40, 40);
  draw_arrow(image, 20.0f, 35.0f, 20.0f, 5.0f, kBlack,
             {.width = 2.0f, .head_length = 10.0f, .head_width = 10.0f});
  CHECK(ink(image, 0, 0, 40, 5) == 0);   // nothing beyond the tip
  CHECK(ink(image, 0, 5, 40, 2) > 0);    // the tip itself
  CHECK(ink(image, 0, 14, 40, 1) >= 8);  // near the head's base: about 10 pixels wide
  CHECK(ink(image, 0, 25, 40, 1) == 2);  // the shaft: columns 19 and 20
  CHECK(image.at(19, 25) == kBlack);
  CHECK(image.at(22, 25) == kWhite);
  CHECK(ink(image, 0, 37, 40, 3) == 0);  // the square end reaches y = 36
}

TEST_CASE("arrows and lines are clipped at the image's edges", "[viz][arrow]") {
  Image image(10, 10);
  draw_arrow(image, -50.0f, 5.0f, 60.0f, 5.0f, kBlack);
  draw_line(image, 5.0f, -100.0f, 5.0f, 100.0f, kBlack, 4.0f);
  CHECK(image.at(0, 5) == kBlack);
  CHECK(image.at(5, 0) == kBlack);
  Image unchanged(10, 10);
  draw_arrow(unchanged, 3.0f, 3.0f, 3.0f, 3.0f, kBlack);  // length 0: nothing
  CHECK(ink(unchanged, 0, 0, 10, 10) == 0);
}
