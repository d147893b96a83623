#include "viz/line_plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "viz/text.h"
#include "viz/ticks.h"

namespace gf::viz {

namespace {

constexpr int kMargin = 14;
constexpr int kGap = 8;         // between a label and what it labels
constexpr int kTickLength = 5;  // tick marks outside the frame
constexpr TextStyle kTitle{.size = 18, .bold = true};
constexpr int kMinWidth = 200, kMinHeight = 150;
constexpr double kLineRadius = 1.25;  // half the line width: lines are 2.5 pixels wide
constexpr double kDotRadius = 2.5;    // a point with no neighbour to connect to
constexpr Rgb kInk{34, 34, 34};
constexpr Rgb kSubtle{110, 110, 110};
constexpr Rgb kFrame{150, 150, 150};
constexpr Rgb kGridLine{232, 232, 232};

// Distinct, colour-blind friendly hues of similar weight, used in turn.
constexpr std::array<Rgb, 8> kPalette = {{
    {40, 100, 190},   // blue
    {230, 120, 30},   // orange
    {45, 160, 80},    // green
    {210, 55, 60},    // red
    {130, 90, 190},   // purple
    {140, 90, 60},    // brown
    {220, 110, 180},  // pink
    {100, 100, 100},  // grey
}};

struct Plan {
  PlotArea area;
  TextStyle text{};  // of tick labels, axis labels and the legend
  std::vector<double> x_ticks, y_ticks;
  double x_step = 1, y_step = 1;  // for formatting; 0 on the log axis (each tick its own)
};

float x_of(const Series& s, size_t i) {
  return s.xs.empty() ? static_cast<float>(i) : s.xs[i];
}

bool drawable(const Series& s, size_t i, bool log_y) {
  const float x = x_of(s, i), y = s.ys[i];
  return std::isfinite(x) && std::isfinite(y) && (!log_y || y > 0.0f);
}

// Widens [lo, hi] to whole multiples of a round step, so that the axis starts and ends on
// a labelled tick; a single value gets a range around it.
double round_out(double& lo, double& hi, int target) {
  if (lo == hi) {
    const double pad = lo == 0.0 ? 1.0 : std::abs(lo) * 0.5;
    lo -= pad;
    hi += pad;
  }
  const double step = nice_step(lo, hi, target);
  lo = std::floor(lo / step + 1e-9) * step;
  hi = std::ceil(hi / step - 1e-9) * step;
  return step;
}

// The data range each axis shows, into plan.area, and its ticks: the drawable points' range
// rounded out to round ticks (on a log axis, widened by 5% instead).
void set_axes(Plan& plan, const std::vector<Series>& series, const LinePlotOptions& options) {
  PlotArea& a = plan.area;
  a.log_y = options.log_y;
  double x_lo = std::numeric_limits<double>::infinity(), x_hi = -x_lo;
  double y_lo = x_lo, y_hi = -x_lo;
  for (const Series& s : series)
    for (size_t i = 0; i < s.ys.size(); ++i) {
      if (!drawable(s, i, options.log_y)) continue;
      x_lo = std::min(x_lo, static_cast<double>(x_of(s, i)));
      x_hi = std::max(x_hi, static_cast<double>(x_of(s, i)));
      y_lo = std::min(y_lo, static_cast<double>(s.ys[i]));
      y_hi = std::max(y_hi, static_cast<double>(s.ys[i]));
    }
  if (x_lo > x_hi) {  // nothing to draw: show an empty unit square (a decade on a log axis)
    x_lo = 0;
    x_hi = 1;
    y_lo = options.log_y ? 1 : 0;
    y_hi = options.log_y ? 10 : 1;
  }

  const int x_target = std::max(2, options.width / 120);
  const int y_target = std::max(2, options.height / 80);
  plan.x_step = round_out(x_lo, x_hi, x_target);
  plan.x_ticks = multiples(plan.x_step, x_lo, x_hi);
  if (options.log_y) {
    // No rounding out on a log axis (it could add a whole decade of nothing): 5% of the
    // range as a margin above and below, in log space.
    if (y_lo == y_hi) {
      y_lo /= 2;
      y_hi *= 2;
    }
    const double pad = 0.05 * std::log10(y_hi / y_lo);
    y_lo /= std::pow(10.0, pad);
    y_hi *= std::pow(10.0, pad);
    plan.y_ticks = log_ticks(y_lo, y_hi);
    plan.y_step = 0;
    if (plan.y_ticks.size() < 2) {  // less than a factor of 2: plain round numbers instead
      plan.y_step = nice_step(y_lo, y_hi, y_target);
      plan.y_ticks = multiples(plan.y_step, y_lo, y_hi);
    }
  } else {
    plan.y_step = round_out(y_lo, y_hi, y_target);
    plan.y_ticks = multiples(plan.y_step, y_lo, y_hi);
  }
  a.x_min = x_lo;
  a.x_max = x_hi;
  a.y_min = y_lo;
  a.y_max = y_hi;
}

Plan plan_plot(const std::vector<Series>& series, const LinePlotOptions& options) {
  for (const Series& s : series)
    if (!s.xs.empty() && s.xs.size() != s.ys.size())
      throw std::invalid_argument(fmt::format("line_plot: series \"{}\" has {} xs but {} ys",
                                              s.name, s.xs.size(), s.ys.size()));
  if (options.width < kMinWidth || options.height < kMinHeight)
    throw std::invalid_argument(
        fmt::format("line_plot: a {} x {} image is too small (at least {} x {})", options.width,
                    options.height, kMinWidth, kMinHeight));

  Plan plan;
  set_axes(plan, series, options);
  PlotArea& a = plan.area;

  // The frame takes what the title, labels and tick labels leave.
  plan.text.size = options.width >= 480 && options.height >= 300 ? 14 : 12;
  const TextMetrics m = text_metrics(plan.text);
  int y_tick_w = 0;
  for (double v : plan.y_ticks)
    y_tick_w = std::max(y_tick_w,
                        text_width(format_tick(v, plan.y_step > 0 ? plan.y_step : v), plan.text));
  const int last_x_tick_w =
      plan.x_ticks.empty() ? 0
                           : text_width(format_tick(plan.x_ticks.back(), plan.x_step), plan.text);
  int top = kMargin + (options.title.empty() ? 0 : text_metrics(kTitle).line_height + 10);
  top = std::max(top, kMargin + m.cap_middle());  // room for the top tick label
  int left = kMargin + y_tick_w + kGap / 2 + kTickLength;
  if (!options.y_label.empty()) left += m.line_height + kGap;
  const int right = kMargin + std::max(last_x_tick_w / 2, 4);
  int bottom = kMargin + kTickLength + kGap / 2 + m.line_height;
  if (!options.x_label.empty()) bottom += m.line_height + kGap;
  a.frame = {left, top, options.width - left - right, options.height - top - bottom};
  if (a.frame.w < 40 || a.frame.h < 40)
    throw std::invalid_argument(
        fmt::format("line_plot: a {} x {} image leaves no room for the plot beside its labels",
                    options.width, options.height));
  return plan;
}

// Coverage of the pixel centred at (px, py) by a round-capped stroke of radius r along the
// segment (x0, y0)-(x1, y1): 1 inside, 0 outside, a linear ramp over the last pixel, which
// is what makes the edge smooth (anti-aliased) rather than a staircase.
void stroke(std::vector<float>& coverage, const Rect& frame, double x0, double y0, double x1,
            double y1, double r) {
  const int px_lo = std::max(frame.x, static_cast<int>(std::floor(std::min(x0, x1) - r - 1)));
  const int px_hi =
      std::min(frame.x + frame.w - 1, static_cast<int>(std::ceil(std::max(x0, x1) + r + 1)));
  const int py_lo = std::max(frame.y, static_cast<int>(std::floor(std::min(y0, y1) - r - 1)));
  const int py_hi =
      std::min(frame.y + frame.h - 1, static_cast<int>(std::ceil(std::max(y0, y1) + r + 1)));
  const double dx = x1 - x0, dy = y1 - y0;
  const double length2 = dx * dx + dy * dy;
  for (int py = py_lo; py <= py_hi; ++py)
    for (int px = px_lo; px <= px_hi; ++px) {
      // The nearest point of the segment is x0 + t (x1 - x0) with t clamped to [0, 1].
      const double t =
          length2 > 0 ? std::clamp(((px - x0) * dx + (py - y0) * dy) / length2, 0.0, 1.0) : 0.0;
      const double ex = px - (x0 + t * dx), ey = py - (y0 + t * dy);
      const double c = std::clamp(r + 0.5 - std::sqrt(ex * ex + ey * ey), 0.0, 1.0);
      float& cell = coverage[static_cast<size_t>((py - frame.y) * frame.w + (px - frame.x))];
      cell = std::max(cell, static_cast<float>(c));  // max, not sum: joints are not darker
    }
}

// Grid lines and ticks first, so that the data is drawn over them; then the frame, the title
// and the axis labels.
void draw_axes(Image& image, const Plan& plan, const LinePlotOptions& options) {
  const PlotArea& a = plan.area;
  const Rect& f = a.frame;
  const TextStyle& style = plan.text;
  const TextMetrics m = text_metrics(style);
  for (double v : plan.x_ticks) {
    const int px = static_cast<int>(std::lround(a.x_pixel(v)));
    image.fill_rect(px, f.y, 1, f.h, kGridLine);
    image.fill_rect(px, f.y + f.h, 1, kTickLength, kFrame);
    const std::string text = format_tick(v, plan.x_step);
    draw_text(image, px - text_width(text, style) / 2, f.y + f.h + kTickLength + kGap / 2, text,
              kInk, style);
  }
  for (double v : plan.y_ticks) {
    const int py = static_cast<int>(std::lround(a.y_pixel(v)));
    image.fill_rect(f.x, py, f.w, 1, kGridLine);
    image.fill_rect(f.x - kTickLength, py, kTickLength, 1, kFrame);
    const std::string text = format_tick(v, plan.y_step > 0 ? plan.y_step : v);
    draw_text(image, f.x - kTickLength - kGap / 2 - text_width(text, style), py - m.cap_middle(),
              text, kInk, style);
  }
  image.stroke_rect(f.x - 1, f.y - 1, f.w + 2, f.h + 2, kFrame);

  // Titles and axis labels are centred on the frame and shortened if they do not fit.
  const std::string title = elide(options.title, options.width - 2 * kMargin, kTitle);
  const int title_w = text_width(title, kTitle);
  draw_text(image,
            std::clamp(f.x + (f.w - title_w) / 2, kMargin, options.width - kMargin - title_w),
            kMargin, title, kInk, kTitle);
  const std::string x_label = elide(options.x_label, f.w, style);
  draw_text(image, f.x + (f.w - text_width(x_label, style)) / 2,
            options.height - kMargin - m.line_height, x_label, kSubtle, style);
  const std::string y_label = elide(options.y_label, f.h, style);
  draw_text_vertical(image, kMargin, f.y + (f.h - text_width(y_label, style)) / 2, y_label, kSubtle,
                     style);
}

// Each series is first drawn as a coverage mask (how much of each pixel its line covers)
// and then painted once, so that the many short segments of a long curve blend cleanly.
// Returns the masks, which tell the legend where the lines are.
std::vector<std::vector<float>> draw_lines(Image& image, const PlotArea& a,
                                           const std::vector<Series>& series) {
  const Rect& f = a.frame;
  std::vector<std::vector<float>> masks;
  for (size_t k = 0; k < series.size(); ++k) {
    const Series& sr = series[k];
    std::vector<float>& mask =
        masks.emplace_back(static_cast<size_t>(f.w) * static_cast<size_t>(f.h), 0.0f);
    const size_t n = sr.ys.size();
    for (size_t i = 0; i < n; ++i) {
      if (!drawable(sr, i, a.log_y)) continue;
      const double x0 = a.x_pixel(x_of(sr, i)), y0 = a.y_pixel(sr.ys[i]);
      const bool next = i + 1 < n && drawable(sr, i + 1, a.log_y);
      const bool prev = i > 0 && drawable(sr, i - 1, a.log_y);
      if (next)
        stroke(mask, f, x0, y0, a.x_pixel(x_of(sr, i + 1)), a.y_pixel(sr.ys[i + 1]), kLineRadius);
      else if (!prev)
        stroke(mask, f, x0, y0, x0, y0, kDotRadius);
    }
    const Rgb colour = sr.colour.value_or(kPalette[k % kPalette.size()]);
    for (int py = 0; py < f.h; ++py)
      for (int px = 0; px < f.w; ++px)
        image.blend(f.x + px, f.y + py, colour, mask[static_cast<size_t>(py * f.w + px)]);
  }
  return masks;
}

// The legend goes in the corner of the frame where it hides the least of the lines.
void draw_legend(Image& image, const Plan& plan, const std::vector<Series>& series,
                 const std::vector<std::vector<float>>& masks) {
  const Rect& f = plan.area.frame;
  const TextMetrics m = text_metrics(plan.text);
  const int line_h = m.line_height + 4;
  const int swatch = 24;
  std::vector<std::string> names;  // of the named series, which the legend lists
  std::vector<Rgb> colours;
  int name_w = 0;
  for (size_t k = 0; k < series.size(); ++k) {
    if (series[k].name.empty()) continue;
    names.push_back(elide(series[k].name, f.w / 2, plan.text));
    colours.push_back(series[k].colour.value_or(kPalette[k % kPalette.size()]));
    name_w = std::max(name_w, text_width(names.back(), plan.text));
  }
  if (names.empty()) return;
  const int w = 10 + swatch + 8 + name_w + 10;
  const int h = 8 + static_cast<int>(names.size()) * line_h + 4;
  const int inset = 10;
  const std::array<std::array<int, 2>, 4> corners = {{
      {f.x + f.w - inset - w, f.y + inset},            // top right
      {f.x + inset, f.y + inset},                      // top left
      {f.x + f.w - inset - w, f.y + f.h - inset - h},  // bottom right
      {f.x + inset, f.y + f.h - inset - h},            // bottom left
  }};
  double best = std::numeric_limits<double>::infinity();
  std::array<int, 2> at = corners[0];
  for (const auto& c : corners) {
    double hidden = 0;
    for (const std::vector<float>& mask : masks)
      for (int py = std::max(c[1], f.y); py < std::min(c[1] + h, f.y + f.h); ++py)
        for (int px = std::max(c[0], f.x); px < std::min(c[0] + w, f.x + f.w); ++px)
          hidden += mask[static_cast<size_t>((py - f.y) * f.w + (px - f.x))];
    if (hidden < best) {
      best = hidden;
      at = c;
    }
  }
  image.fill_rect(at[0], at[1], w, h, kWhite);
  image.stroke_rect(at[0], at[1], w, h, kFrame);
  for (size_t k = 0; k < names.size(); ++k) {
    const int y = at[1] + 8 + static_cast<int>(k) * line_h;
    image.fill_rect(at[0] + 10, y + m.cap_middle() - 1, swatch, 3, colours[k]);
    draw_text(image, at[0] + 10 + swatch + 8, y, names[k], kInk, plan.text);
  }
}

}  // namespace

double PlotArea::x_pixel(double x) const {
  return frame.x + (x - x_min) / (x_max - x_min) * (frame.w - 1);
}

double PlotArea::y_pixel(double y) const {
  const double t =
      log_y ? std::log10(y / y_min) / std::log10(y_max / y_min) : (y - y_min) / (y_max - y_min);
  return frame.y + (1.0 - t) * (frame.h - 1);
}

PlotArea line_plot_area(const std::vector<Series>& series, const LinePlotOptions& options) {
  return plan_plot(series, options).area;
}

Image line_plot(const std::vector<Series>& series, const LinePlotOptions& options) {
  const Plan plan = plan_plot(series, options);
  Image image(options.width, options.height);
  draw_axes(image, plan, options);
  const std::vector<std::vector<float>> masks = draw_lines(image, plan.area, series);
  if (series.size() > 1) draw_legend(image, plan, series, masks);
  return image;
}

}  // namespace gf::viz
