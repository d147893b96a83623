#include "viz/bar_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

#include "viz/text.h"
#include "viz/ticks.h"

namespace gf::viz {

namespace {

constexpr TextStyle kText{.size = 14};  // of the legend, labels and ticks
constexpr TextStyle kTitle{.size = 18, .bold = true};
constexpr int kRowHeight = 26, kBarHeight = 18;
constexpr int kTitleTop = 10;
constexpr int kRight = 70;  // room for the longest bar's total
constexpr Rgb kInk{40, 40, 40};
constexpr Rgb kGridLine{225, 225, 225};

double total(const BarRow& row) {
  double sum = 0;
  for (double v : row.segments) sum += v;
  return sum;
}

std::string format_value(const BarChart& chart, double value) {
  return fmt::format(fmt::runtime(chart.value_format), value);
}

// The legend's line of text sits under the title, the first bar under the legend.
int legend_top() {
  return kTitleTop + text_metrics(kTitle).line_height + 6;
}

// Below the last bar: the grid lines reach 6 pixels past it, then the tick labels and the
// axis name, a line each.
int bottom_room() {
  return 6 + 6 + 2 * text_metrics(kText).line_height + 6 + 10;
}

// The segment kinds (when there are several), then the reference lines, in a row under the
// title.
void draw_legend(Image& image, const BarChart& chart) {
  const int y = legend_top(), middle = y + text_metrics(kText).cap_middle();
  int x = 10;
  for (size_t k = 0; k < chart.segment_names.size() && chart.segment_names.size() > 1; ++k) {
    image.fill_rect(x, middle - 7, 14, 14, kBarColours[k % kBarColours.size()]);
    draw_text(image, x + 20, y, chart.segment_names[k], kInk, kText);
    x += 20 + text_width(chart.segment_names[k], kText) + 24;
  }
  for (size_t k = 0; k < chart.lines.size(); ++k) {
    const Rgb colour = kLineColours[k % kLineColours.size()];
    for (int dash = x; dash < x + 18; dash += 6) image.fill_rect(dash, middle - 1, 3, 2, colour);
    const std::string text = chart.lines[k].name + ": " + format_value(chart, chart.lines[k].value);
    draw_text(image, x + 24, y, text, colour, kText);
    x += 24 + text_width(text, kText) + 24;
  }
}

}  // namespace

int BarChartLayout::x_pixel(double value) const {
  return left + static_cast<int>((value - x_min) / (x_max - x_min) * plot_width);
}

int BarChartLayout::bar_top(size_t row) const {
  return top + static_cast<int>(row) * row_height;
}

BarChartLayout bar_chart_layout(const BarChart& chart, int width) {
  if (chart.rows.empty()) throw std::invalid_argument("bar_chart: the chart has no rows");
  BarChartLayout layout;
  int label_width = 0;
  for (const BarRow& r : chart.rows)
    label_width = std::max(label_width, text_width(r.label, kText));
  layout.top = legend_top() + text_metrics(kText).line_height + 10;
  layout.width = width;
  layout.height = layout.top + kRowHeight * static_cast<int>(chart.rows.size()) + bottom_room();
  layout.left = label_width + 24;
  layout.plot_width = width - layout.left - kRight;
  layout.row_height = kRowHeight;
  layout.bar_height = kBarHeight;
  double lo = chart.origin, hi = chart.origin;
  for (const BarRow& r : chart.rows) {
    lo = std::min(lo, chart.origin + total(r));
    hi = std::max(hi, chart.origin + total(r));
  }
  for (const ReferenceLine& l : chart.lines) {
    lo = std::min(lo, l.value);
    hi = std::max(hi, l.value);
  }
  // 2% to spare past the bars and lines on each side that reaches beyond the origin.
  const double spare = 0.02 * (hi - lo);
  if (lo < chart.origin) lo -= spare;
  if (hi > chart.origin) hi += spare;
  if (hi <= lo) hi = lo + 1;
  layout.ticks = nice_ticks(lo, hi, 5);
  layout.x_min = lo;
  layout.x_max = std::max(layout.ticks.back(), hi);
  return layout;
}

Image bar_chart(const BarChart& chart, int width) {
  const BarChartLayout layout = bar_chart_layout(chart, width);
  Image image(layout.width, layout.height);
  // The grid lines and the axis reach a little past the first and the last bar.
  const int plot_top = layout.top - 6, plot_bottom = layout.height - bottom_room() + 6;
  const TextMetrics m = text_metrics(kText);
  const std::vector<double>& ticks = layout.ticks;
  const double step = ticks.size() > 1 ? ticks[1] - ticks[0] : 1.0;
  for (double t : ticks) {
    const int x = layout.x_pixel(t);
    image.fill_rect(x, plot_top, 1, plot_bottom - plot_top, kGridLine);
    const std::string text = format_tick(t, step);
    draw_text(image, x - text_width(text, kText) / 2, plot_bottom + 6, text, kInk, kText);
  }
  draw_text(image, layout.left + (layout.plot_width - text_width(chart.x_label, kText)) / 2,
            plot_bottom + 6 + m.line_height + 6, chart.x_label, kInk, kText);
  draw_text(image, 10, kTitleTop, chart.title, kInk, kTitle);
  draw_legend(image, chart);
  for (size_t i = 0; i < chart.rows.size(); ++i) {
    const BarRow& r = chart.rows[i];
    const int y = layout.bar_top(i), text_y = y + kBarHeight / 2 - m.cap_middle();
    draw_text(image, layout.left - 12 - text_width(r.label, kText), text_y, r.label, kInk, kText);
    double at = chart.origin;
    int right = layout.x_pixel(at);  // the value goes right of the bar and of the origin
    for (size_t k = 0; k < r.segments.size(); ++k) {
      const int x0 = layout.x_pixel(at), x1 = layout.x_pixel(at + r.segments[k]);
      image.fill_rect(std::min(x0, x1), y, std::max(std::abs(x1 - x0), 1), kBarHeight,
                      kBarColours[k % kBarColours.size()]);
      at += r.segments[k];
      right = std::max(right, std::max(x0, x1));
    }
    draw_text(image, right + 6, text_y, format_value(chart, at), kInk, kText);
  }
  // Dashed, over the bars; line k is moved k * 3 pixels right, so that equal values stay apart.
  for (size_t k = 0; k < chart.lines.size(); ++k) {
    const int x = layout.x_pixel(chart.lines[k].value) + 3 * static_cast<int>(k);
    for (int y = plot_top; y < plot_bottom; y += 6)
      image.fill_rect(x - 1, y, 2, 3, kLineColours[k % kLineColours.size()]);
  }
  return image;
}

}  // namespace gf::viz
