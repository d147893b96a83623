#include <catch2/catch.hpp>
#include <stdexcept>
#include <vector>

#include "tests/viz/viz_testing.h"
#include "viz/bar_chart.h"
#include "viz/text.h"

using namespace gf::viz;
using Catch::Matchers::Contains;
using gf::viz::testing::ink;

namespace {

// Two rows of two stacked segments, and one reference line past the longer bar.
const BarChart kChart{.title = "time per step",
                      .x_label = "ms",
                      .segment_names = {"forward", "backward"},
                      .rows = {{"small", {2.0, 1.0}}, {"large model", {4.0, 4.0}}},
                      .lines = {{"budget", 9.0}}};

}  // namespace

TEST_CASE("bar chart layout: a row per label, the axis from 0 to past the longest bar or line",
          "[viz][bar_chart]") {
  const BarChartLayout layout = bar_chart_layout(kChart, 500);
  CHECK(layout.width == 500);
  // Above the bars the title and the legend, a line each; below them the tick values and
  // the axis name.
  const int line = text_metrics({.size = 14}).line_height;
  const int title = text_metrics({.size = 18, .bold = true}).line_height;
  CHECK(layout.top == 10 + title + 6 + line + 10);
  CHECK(layout.height == layout.top + 2 * layout.row_height + 2 * line + 28);
  CHECK(layout.ticks.front() == 0.0);
  CHECK(layout.x_max == Approx(9.0 * 1.02));  // the line at 9, with 2% to spare
  CHECK(layout.ticks.back() <= layout.x_max);
  CHECK(layout.x_pixel(0.0) == layout.left);
  CHECK(layout.x_pixel(layout.x_max) == layout.left + layout.plot_width);
  CHECK(layout.left > 24);  // the labels sit left of the bars
  CHECK(layout.bar_top(1) - layout.bar_top(0) == layout.row_height);
}

TEST_CASE("a bar chart stacks each row's segments in the bar colours", "[viz][bar_chart]") {
  const BarChartLayout layout = bar_chart_layout(kChart, 500);
  const Image image = bar_chart(kChart, 500);
  REQUIRE(image.width() == layout.width);
  REQUIRE(image.height() == layout.height);
  const auto pixel_at = [&](double value, size_t row) {
    return image.at(layout.x_pixel(value), layout.bar_top(row) + layout.bar_height / 2);
  };
  CHECK(pixel_at(1.0, 0) == kBarColours[0]);  // inside the first segment, [0, 2)
  CHECK(pixel_at(2.5, 0) == kBarColours[1]);  // inside the second, [2, 3)
  CHECK(image.at(layout.x_pixel(3.0) + 2, layout.bar_top(0) + layout.bar_height / 2) ==
        kWhite);                              // between the bar's end and its total
  CHECK(pixel_at(3.9, 1) == kBarColours[0]);  // the second row: [0, 4) and [4, 8)
  CHECK(pixel_at(7.9, 1) == kBarColours[1]);
  // The bar fills exactly bar_height rows of pixels.
  const int x = layout.x_pixel(1.0);
  CHECK(image.at(x, layout.bar_top(0)) == kBarColours[0]);
  CHECK(image.at(x, layout.bar_top(0) + layout.bar_height - 1) == kBarColours[0]);
  CHECK(image.at(x, layout.bar_top(0) + layout.bar_height) != kBarColours[0]);
  // The reference line, dashed, over the rows; its name and value in the legend above them.
  const int line_x = layout.x_pixel(9.0);
  int dashes = 0;
  for (int y = layout.top - 6; y < layout.height - 50; ++y)
    dashes += image.at(line_x, y) == kLineColours[0];
  CHECK(dashes > 10);
  CHECK(ink(image, 0, 30, image.width(), 20) > 100);
  // Each row's total right of its bar, and each label left of it.
  CHECK(ink(image, layout.x_pixel(3.0) + 4, layout.bar_top(0), 40, layout.bar_height) > 10);
  CHECK(ink(image, 0, layout.bar_top(1), layout.left - 4, layout.bar_height) > 10);
}

TEST_CASE("bar_chart rejects a chart without rows", "[viz][bar_chart]") {
  CHECK_THROWS_WITH(bar_chart(BarChart{.title = "empty"}), Contains("no rows"));
}

TEST_CASE("bars from another origin go left below it and right above it", "[viz][bar_chart]") {
  // Ratios to a baseline of 1: one row below it, one above, and a band of lines around 1.
  const BarChart ratios{.title = "ratio to the base",
                        .rows = {{"better", {0.8 - 1.0}}, {"worse", {1.25 - 1.0}}},
                        .lines = {{"floor, below", 0.95}, {"floor, above", 1.05}},
                        .value_format = "{:.2f}",
                        .origin = 1.0};
  const BarChartLayout layout = bar_chart_layout(ratios, 500);
  CHECK(layout.x_min == Approx(0.8 - 0.02 * 0.45));  // 2% of the span to spare on each side
  CHECK(layout.x_max == Approx(1.25 + 0.02 * 0.45));
  CHECK(layout.x_pixel(layout.x_min) == layout.left);
  const Image image = bar_chart(ratios, 500);
  const auto pixel_at = [&](double value, size_t row) {
    return image.at(layout.x_pixel(value), layout.bar_top(row) + layout.bar_height / 2);
  };
  CHECK(pixel_at(0.85, 0) == kBarColours[0]);  // the first bar spans [0.8, 1)
  CHECK(pixel_at(1.15, 0) != kBarColours[0]);  // and nothing right of the origin but its value
  CHECK(pixel_at(0.85, 1) != kBarColours[0]);  // the second spans [1, 1.25)
  CHECK(pixel_at(1.2, 1) == kBarColours[0]);
  // The first row's value, 0.80, is printed right of the origin, clear of its bar.
  CHECK(ink(image, layout.x_pixel(1.0) + 4, layout.bar_top(0), 40, layout.bar_height) > 10);
}
