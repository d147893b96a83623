// Horizontal bar charts: one row per label, each bar a stack of segments (one colour per kind
// of segment, named in a legend), optional dashed vertical reference lines (a machine's peak,
// say) named in the legend with their values, and each row's total printed after its bar.
// The value axis starts at 0 and ends 2% past the longest bar or line, with round ticks.
//
// Bars may also start at another origin and go either way from it: a ratio to a baseline
// drawn from 1, longer to the left the further below 1 it is. Each bar then ends at origin +
// its total, and the axis spans the origin, every bar's end and every line, 2% to spare.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "viz/png.h"

namespace gf::viz {

// Every member has an initializer, so designated initializers may name any subset of them
// (GCC's -Wmissing-field-initializers asks for that).
struct BarRow {
  std::string label{};
  std::vector<double> segments{};  // stacked left to right; segment k in kBarColours[k % 3]
};

struct ReferenceLine {
  std::string name{};
  double value = 0;
};

struct BarChart {
  std::string title{};
  std::string x_label{};
  std::vector<std::string> segment_names{};  // shown in the legend when there are two or more
  std::vector<BarRow> rows{};
  std::vector<ReferenceLine> lines{};   // line k drawn in kLineColours[k % 2]
  std::string value_format = "{:.1f}";  // fmt's format of the totals and the lines' values
  double origin = 0;  // where every bar starts; a row's printed value is where it ends
};

inline constexpr std::array<Rgb, 3> kBarColours = {
    {{31, 119, 180}, {255, 127, 14}, {150, 150, 150}}};
inline constexpr std::array<Rgb, 2> kLineColours = {{{200, 30, 30}, {110, 30, 160}}};

// Where bar_chart() puts things. Value v lies at pixel column x_pixel(v): x_min at `left`, x_max
// at left + plot_width. Row i's bar fills rows bar_top(i) to bar_top(i) + bar_height - 1.
struct BarChartLayout {
  int width = 0, height = 0;  // the image
  int left = 0, plot_width = 0;
  int top = 0, row_height = 0, bar_height = 0;
  double x_min = 0, x_max = 1;
  std::vector<double> ticks{};  // the labelled values on the axis below the bars

  int x_pixel(double value) const;
  int bar_top(size_t row) const;
};

// Throws std::invalid_argument for a chart without rows.
BarChartLayout bar_chart_layout(const BarChart& chart, int width = 760);
Image bar_chart(const BarChart& chart, int width = 760);

}  // namespace gf::viz
