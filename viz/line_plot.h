// Line plots for training curves: loss against step (often on a logarithmic y axis, where a
// steady fall looks like a straight line), the learning-rate schedule, accuracy. Axes carry
// round tick values, a legend names the series when there is more than one, and points
// that cannot be drawn (NaN, infinities, y <= 0 on a log axis) leave a gap in their line.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "viz/png.h"

namespace gf::viz {

// Every member has an initializer, so designated initializers may name any subset of them
// (GCC's -Wmissing-field-initializers asks for that).
struct Series {
  std::string name{};       // shown in the legend; "": not listed (lines that share a colour)
  std::vector<float> xs{};  // empty: 0, 1, 2, ... (the index of each y)
  std::vector<float> ys{};
  std::optional<Rgb> colour{};  // empty: the next colour of a built-in palette
};

struct LinePlotOptions {
  std::string title{};
  std::string x_label = "step";
  std::string y_label{};
  bool log_y = false;  // a logarithmic y axis (base 10)
  int width = 720;     // of the whole image, in pixels
  int height = 440;
};

// Where line_plot() draws: the frame of the plotting area and the data range it shows, with
// the map from data to pixel coordinates. x_min is at the frame's left column, x_max at
// its right column; y_min at its bottom row, y_max at its top row.
struct PlotArea {
  Rect frame{};
  double x_min = 0, x_max = 1;
  double y_min = 0, y_max = 1;  // data values, also when log_y
  bool log_y = false;

  double x_pixel(double x) const;  // a (fractional) pixel column
  double y_pixel(double y) const;  // a (fractional) pixel row; y > 0 when log_y
};

// Draws each series as a smooth (anti-aliased) line 2.5 pixels wide, a point with no drawable
// neighbour as a dot, over grid lines at round tick values. The axes span the drawable
// points, widened to the next round ticks (on a log axis, by 5% of the range instead).
// Throws std::invalid_argument for a series whose xs and ys differ in length (and xs is not
// empty), and for an image smaller than 200 x 150 pixels.
PlotArea line_plot_area(const std::vector<Series>& series, const LinePlotOptions& options = {});
Image line_plot(const std::vector<Series>& series, const LinePlotOptions& options = {});

}  // namespace gf::viz
