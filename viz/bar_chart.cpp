#include "viz/bar_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "viz/font.h"
#include "viz/ticks.h"

namespace gf::viz {

namespace {

constexpr int kScale = 2;  // of every text: title, legend, labels, ticks
constexpr int kRowHeight = 26, kBarHeight = 18;
constexpr int kTop = 58;     // the title and the legend above the first bar
constexpr int kBottom = 56;  // the tick labels and the axis name below the last
constexpr int kRight = 70;   // room for the longest bar's total
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

// The segment kinds (when there are several), then the reference lines, in a row under the
// title.
void draw_legend(Image& image, const BarChart& chart) {
  int x = 10;
  for (size_t k = 0; k < chart.segment_names.size() && chart.segment_names.size() > 1; ++k) {
    image.fill_rect(x, 34, 14, 14, kBarColours[k % kBarColours.size()]);
    draw_text(image, x + 20, 36, chart.segment_names[k], kInk, kScale);
    x += 20 + text_width(chart.segment_names[k], kScale) + 24;
  }
  for (size_t k = 0; k < chart.lines.size(); ++k) {
    const Rgb colour = kLineColours[k % kLineColours.size()];
    for (int dash = x; dash < x + 18; dash += 6) image.fill_rect(dash, 40, 3, 2, colour);
    const std::string text = chart.lines[k].name + ": " + format_value(chart, chart.lines[k].value);
    draw_text(image, x + 24, 36, text, colour, kScale);
    x += 24 + text_width(text, kScale) + 24;
  }
}

}  // namespace

int BarChartLayout::x_pixel(double value) const {
  return left + static_cast<int>(value / x_max * plot_width);
}

int BarChartLayout::bar_top(size_t row) const {
  return top + static_cast<int>(row) * row_height;
}

BarChartLayout bar_chart_layout(const BarChart& chart, int width) {
  if (chart.rows.empty()) throw std::invalid_argument("bar_chart: the chart has no rows");
  BarChartLayout layout;
  int label_width = 0;
  for (const BarRow& r : chart.rows)
    label_width = std::max(label_width, text_width(r.label, kScale));
  layout.width = width;
  layout.height = kTop + kRowHeight * static_cast<int>(chart.rows.size()) + kBottom;
  layout.left = label_width + 24;
  layout.plot_width = width - layout.left - kRight;
  layout.top = kTop;
  layout.row_height = kRowHeight;
  layout.bar_height = kBarHeight;
  double max_value = 0;
  for (const BarRow& r : chart.rows) max_value = std::max(max_value, total(r));
  for (const ReferenceLine& l : chart.lines) max_value = std::max(max_value, l.value);
  layout.ticks = nice_ticks(0, max_value * 1.02, 5);
  layout.x_max = std::max(layout.ticks.back(), max_value * 1.02);
  return layout;
}

Image bar_chart(const BarChart& chart, int width) {
  const BarChartLayout layout = bar_chart_layout(chart, width);
  Image image(layout.width, layout.height);
  // The grid lines and the axis reach a little past the first and the last bar.
  const int plot_top = layout.top - 6, plot_bottom = layout.height - kBottom + 6;
  const std::vector<double>& ticks = layout.ticks;
  const double step = ticks.size() > 1 ? ticks[1] - ticks[0] : 1.0;
  for (double t : ticks) {
    const int x = layout.x_pixel(t);
    image.fill_rect(x, plot_top, 1, plot_bottom - plot_top, kGridLine);
    const std::string text = format_tick(t, step);
    draw_text(image, x - text_width(text, kScale) / 2, plot_bottom + 6, text, kInk, kScale);
  }
  draw_text(image, layout.left + (layout.plot_width - text_width(chart.x_label, kScale)) / 2,
            plot_bottom + 6 + text_height(kScale) + 6, chart.x_label, kInk, kScale);
  draw_text(image, 10, 10, chart.title, kInk, kScale, /*bold=*/true);
  draw_legend(image, chart);
  for (size_t i = 0; i < chart.rows.size(); ++i) {
    const BarRow& r = chart.rows[i];
    const int y = layout.bar_top(i), text_y = y + (kBarHeight - 14) / 2;
    draw_text(image, layout.left - 12 - text_width(r.label, kScale), text_y, r.label, kInk, kScale);
    double at = 0;
    for (size_t k = 0; k < r.segments.size(); ++k) {
      const int x0 = layout.x_pixel(at), x1 = layout.x_pixel(at + r.segments[k]);
      image.fill_rect(x0, y, std::max(x1 - x0, 1), kBarHeight, kBarColours[k % kBarColours.size()]);
      at += r.segments[k];
    }
    draw_text(image, layout.x_pixel(at) + 6, text_y, format_value(chart, at), kInk, kScale);
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
