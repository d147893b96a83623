#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <vector>

#include "tests/viz/viz_testing.h"
#include "viz/line_plot.h"

using namespace gf::viz;
using Catch::Matchers::Contains;
using gf::viz::testing::ink;

namespace {

constexpr Rgb kRed{200, 0, 0};

// The pixel nearest to data point (x, y).
Rgb pixel_at(const Image& image, const PlotArea& area, double x, double y) {
  return image.at(static_cast<int>(std::lround(area.x_pixel(x))),
                  static_cast<int>(std::lround(area.y_pixel(y))));
}

}  // namespace

TEST_CASE("the plot area maps the data range onto the frame", "[viz][line_plot]") {
  const std::vector<Series> series = {{.xs = {0, 10}, .ys = {0, 1}}};
  const PlotArea area = line_plot_area(series);
  const Rect& f = area.frame;
  CHECK(area.x_min == 0);
  CHECK(area.x_max == 10);
  CHECK(area.y_min == 0);
  CHECK(area.y_max == 1);
  CHECK(area.x_pixel(0) == f.x);
  CHECK(area.x_pixel(10) == f.x + f.w - 1);
  CHECK(area.x_pixel(5) == Approx(f.x + (f.w - 1) / 2.0));
  CHECK(area.y_pixel(0) == f.y + f.h - 1);  // y grows upwards
  CHECK(area.y_pixel(1) == f.y);
  CHECK(f.x > 20);  // room for tick labels
  CHECK(f.x + f.w < 720);
  CHECK(f.y + f.h < 440);
}

TEST_CASE("a line plot draws each point on its expected pixel", "[viz][line_plot]") {
  const std::vector<Series> series = {
      {.name = "loss", .xs = {0, 5, 10}, .ys = {0.0f, 0.5f, 1.0f}, .colour = kRed}};
  const LinePlotOptions options{.title = "loss", .y_label = "cross-entropy"};
  const PlotArea area = line_plot_area(series, options);
  const Image image = line_plot(series, options);
  CHECK(image.width() == 720);
  CHECK(image.height() == 440);
  CHECK(pixel_at(image, area, 0, 0.0) == kRed);
  CHECK(pixel_at(image, area, 5, 0.5) == kRed);
  CHECK(pixel_at(image, area, 10, 1.0) == kRed);
  CHECK(pixel_at(image, area, 2.5, 0.25) == kRed);  // on the line between two points
  CHECK(pixel_at(image, area, 8, 0.2) != kRed);     // far from it
  // Tick labels below and left of the frame, a title above it.
  const Rect& f = area.frame;
  CHECK(ink(image, f.x, f.y + f.h + 6, f.w, image.height() - f.y - f.h - 6) > 100);
  CHECK(ink(image, 0, f.y, f.x - 6, f.h) > 100);
  CHECK(ink(image, 0, 0, image.width(), f.y - 2) > 50);
}

TEST_CASE("a logarithmic y axis spaces powers of ten evenly", "[viz][line_plot]") {
  const std::vector<Series> series = {{.ys = {100, 10, 1, 0.1f}, .colour = kRed}};
  const PlotArea area = line_plot_area(series, {.log_y = true});
  CHECK(area.log_y);
  CHECK(area.y_min < 0.1);
  CHECK(area.y_max > 100);
  const double decade = area.y_pixel(1) - area.y_pixel(10);
  CHECK(decade > 20);
  CHECK(area.y_pixel(0.1) - area.y_pixel(1) == Approx(decade));
  CHECK(area.y_pixel(10) - area.y_pixel(100) == Approx(decade));
  const Image image = line_plot(series, {.log_y = true});
  for (int i = 0; i < 4; ++i)
    CHECK(pixel_at(image, area, i, series[0].ys[static_cast<size_t>(i)]) == kRed);
}

TEST_CASE("points that cannot be drawn leave gaps, tiny series do not crash", "[viz][line_plot]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  // Index 2 sits between two gaps: it has no neighbour and is drawn as a dot.
  const std::vector<Series> gaps = {{.ys = {1, nan, 3, inf, 2, 2}, .colour = kRed}};
  const PlotArea area = line_plot_area(gaps);
  CHECK(area.y_max >= 3);
  CHECK(area.y_max < 10);  // the infinity did not stretch the axis
  const Image image = line_plot(gaps);
  CHECK(pixel_at(image, area, 2, 3) == kRed);
  CHECK(pixel_at(image, area, 4.5, 2) == kRed);
  CHECK(pixel_at(image, area, 1.5, 2.0) != kRed);  // no line through the gap at index 1

  // Zero, one or only undrawable points: an empty frame or a dot, never a crash.
  CHECK_NOTHROW(line_plot({}));
  CHECK_NOTHROW(line_plot({{.name = "empty"}}));
  CHECK_NOTHROW(line_plot({{.ys = {nan, inf}}}));
  CHECK_NOTHROW(line_plot({{.ys = {-1, 0}}}, {.log_y = true}));  // nothing positive
  const std::vector<Series> one = {{.xs = {3}, .ys = {7}, .colour = kRed}};
  const PlotArea single = line_plot_area(one);
  CHECK(single.x_min < 3);
  CHECK(single.x_max > 3);
  CHECK(pixel_at(line_plot(one), single, 3, 7) == kRed);
}

TEST_CASE("several series get distinct colours and a legend", "[viz][line_plot]") {
  const std::vector<Series> two = {{.name = "train", .ys = {2, 1, 0.5f}},
                                   {.name = "validation", .ys = {2.2f, 1.3f, 0.9f}}};
  const Image with_legend = line_plot(two);
  const Image without = line_plot({two[0]});
  const PlotArea area = line_plot_area(two);
  const Rgb first = pixel_at(with_legend, area, 0, 2);
  const Rgb second = pixel_at(with_legend, area, 2, 0.9);
  CHECK(first != second);
  CHECK(first != kWhite);
  CHECK(second != kWhite);
  // The legend adds ink inside the frame beyond the second line.
  const Rect& f = area.frame;
  CHECK(ink(with_legend, f.x, f.y, f.w, f.h) > ink(without, f.x, f.y, f.w, f.h) + 500);
}

TEST_CASE("a series without a name is drawn but not listed in the legend", "[viz][line_plot]") {
  // Three runs of one kind in one colour, with one legend entry between them.
  const std::vector<Series> named = {{.name = "base", .ys = {2, 1, 0.5f}, .colour = kRed},
                                     {.name = "seed 2", .ys = {2.1f, 1.1f, 0.6f}, .colour = kRed},
                                     {.name = "seed 3", .ys = {2.2f, 1.2f, 0.7f}, .colour = kRed}};
  std::vector<Series> one_entry = named;
  one_entry[1].name = one_entry[2].name = "";
  std::vector<Series> no_entry = one_entry;
  no_entry[0].name = "";
  const Rect f = line_plot_area(named).frame;
  const int64_t lines = ink(line_plot(no_entry), f.x, f.y, f.w, f.h);
  const int64_t one = ink(line_plot(one_entry), f.x, f.y, f.w, f.h);
  CHECK(one > lines + 200);
  CHECK(ink(line_plot(named), f.x, f.y, f.w, f.h) > one + 200);
}

TEST_CASE("line_plot rejects series and sizes it cannot draw", "[viz][line_plot]") {
  REQUIRE_THROWS_WITH(line_plot({{.name = "loss", .xs = {1, 2}, .ys = {1, 2, 3}}}),
                      Contains("line_plot: series \"loss\" has 2 xs but 3 ys"));
  REQUIRE_THROWS_WITH(line_plot({}, {.width = 100, .height = 80}),
                      Contains("line_plot: a 100 x 80 image is too small (at least 200 x 150)"));
}
