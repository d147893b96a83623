#include "viz/heatmap.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "autograd/errors.h"
#include "viz/text.h"
#include "viz/ticks.h"

namespace gf::viz {

// ---- Colour map ----------------------------------------------------------------------

// Nine evenly spaced control points, chosen by eye to follow viridis: the lightness rises
// steadily from end to end while the hue turns from violet through blue and green to
// yellow. Between two points the colour is interpolated linearly.
Rgb colour_map(float t) {
  static constexpr std::array<Rgb, 9> kPoints = {{
      {68, 1, 84},
      {71, 44, 122},
      {59, 81, 139},
      {44, 113, 142},
      {33, 144, 141},
      {39, 173, 129},
      {92, 200, 99},
      {170, 220, 50},
      {253, 231, 37},
  }};
  if (std::isnan(t)) return kNonFinite;
  const float position = std::clamp(t, 0.0f, 1.0f) * static_cast<float>(kPoints.size() - 1);
  const size_t i = std::min(static_cast<size_t>(position), kPoints.size() - 2);
  return mix(kPoints[i], kPoints[i + 1], position - static_cast<float>(i));
}

// ---- Layout ----------------------------------------------------------------------------

namespace {

constexpr int kMargin = 14;  // white border around everything
constexpr int kGap = 6;      // between a label and what it labels
constexpr int kBarGap = 18;  // between the cells and the colour bar
constexpr int kBarWidth = 16;
constexpr int kTickLength = 4;      // tick marks right of the colour bar
constexpr int kMinBarHeight = 150;  // a colour bar shorter than this is hard to read
constexpr TextStyle kTitle{.size = 18, .bold = true};
constexpr TextStyle kGridTitle{.size = 20, .bold = true};
constexpr TextStyle kValue{.size = 11};              // the values printed in cells
constexpr int kSmallLabels = 12, kLargeLabels = 15;  // text sizes for small and large cells
constexpr int kMaxLabelLetters = 12;                 // longer labels are elided
constexpr int64_t kMaxCells = 4096;                  // per side
constexpr int64_t kMaxSide = 16384;                  // pixels, as for any Image
constexpr Rgb kInk{34, 34, 34};
constexpr Rgb kSubtle{110, 110, 110};
constexpr Rgb kFrame{170, 170, 170};

// The layout plus everything else the drawing needs, computed once.
struct Plan {
  HeatmapLayout layout;
  std::vector<std::string> row_text, col_text;  // elided labels; "" where one is skipped
  bool col_vertical = false;                    // column labels turned on their side
  std::vector<double> ticks;
  double tick_step = 1.0;
  int title_x = 0, title_y = 0;
  int col_axis_x = 0, col_axis_y = 0;
  int col_labels_bottom = 0;  // column labels end just above this row of pixels
  int row_axis_x = 0, row_axis_y = 0;
  int row_labels_right = 0;  // row labels end just left of this column of pixels
  int tick_labels_x = 0;
  int value_label_x = 0, value_label_y = 0;
};

std::string index_or_label(const std::vector<std::string>& labels, int64_t i) {
  return labels.empty() ? std::to_string(i) : labels[static_cast<size_t>(i)];
}

int ceil_div(int a, int b) {
  return (a + b - 1) / b;
}

// Everything is checked before anything is drawn.
void check_inputs(std::span<const float> values, int64_t rows, int64_t cols,
                  const HeatmapOptions& options) {
  if (rows <= 0 || cols <= 0)
    throw std::invalid_argument(fmt::format("heatmap: cannot draw {} x {} cells", rows, cols));
  if (static_cast<int64_t>(values.size()) != rows * cols)
    throw std::invalid_argument(
        fmt::format("heatmap: {} values cannot fill {} x {} cells", values.size(), rows, cols));
  if (rows > kMaxCells || cols > kMaxCells)
    throw std::invalid_argument(fmt::format(
        "heatmap: {} x {} cells are too many to draw (at most {} a side)", rows, cols, kMaxCells));
  if (!options.row_labels.empty() && static_cast<int64_t>(options.row_labels.size()) != rows)
    throw std::invalid_argument(
        fmt::format("heatmap: {} row labels for {} rows", options.row_labels.size(), rows));
  if (!options.col_labels.empty() && static_cast<int64_t>(options.col_labels.size()) != cols)
    throw std::invalid_argument(
        fmt::format("heatmap: {} column labels for {} columns", options.col_labels.size(), cols));
  if (options.cell_size > 0 && std::max(rows, cols) * options.cell_size > kMaxSide)
    throw std::invalid_argument(fmt::format(
        "heatmap: {} x {} cells of {} pixels do not fit in an image (at most {} pixels a side)",
        rows, cols, options.cell_size, kMaxSide));
  if (!options.auto_range && !(options.vmin < options.vmax))
    throw std::invalid_argument(
        fmt::format("heatmap: the value range [{}, {}] is empty (vmin must be less than vmax)",
                    options.vmin, options.vmax));
}

// The values the colour map spans, into l.vmin and l.vmax: the options' range, or with
// auto_range that of the finite values.
void set_value_range(HeatmapLayout& l, std::span<const float> values,
                     const HeatmapOptions& options) {
  l.vmin = options.vmin;
  l.vmax = options.vmax;
  if (options.auto_range) {
    float lo = std::numeric_limits<float>::infinity();
    float hi = -lo;
    for (float v : values) {
      if (!std::isfinite(v)) continue;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    if (lo > hi) {  // nothing finite to go by
      lo = 0.0f;
      hi = 1.0f;
    } else if (lo == hi) {  // a constant matrix: put its colour in the middle of the map
      const float pad = std::max(0.5f, std::abs(lo) * 0.5f);
      lo -= pad;
      hi += pad;
    }
    // Rounded out to the colour bar's tick step, so that both ends of the bar are labelled.
    const double step = nice_step(lo, hi);
    l.vmin = static_cast<float>(std::floor(lo / step + 1e-6) * step);
    l.vmax = static_cast<float>(std::ceil(hi / step - 1e-6) * step);
  }
}

// The room the row and column labels take, which place_parts leaves for them.
struct LabelRoom {
  int row_label_width = 0;   // the widest row label
  int col_label_height = 0;  // a line of text, or the longest label turned on its side
  int overhang_left = 0, overhang_right = 0;  // of level column labels wider than their cell
};

// The text of every row and column label, into plan.row_text and plan.col_text, and whether
// the column labels are turned on their side.
LabelRoom plan_labels(Plan& plan, int64_t rows, int64_t cols, const HeatmapOptions& options) {
  const HeatmapLayout& l = plan.layout;
  const TextStyle style{.size = l.label_size};
  const TextMetrics m = text_metrics(style);
  // Labels: every one when the cells are tall enough for a line of capitals, else every k-th.
  const int max_label_width = kMaxLabelLetters * text_width("n", style);
  const int stride = ceil_div(m.cap_height + 3, l.cell);
  int row_label_width = 0;
  for (int64_t i = 0; i < rows; ++i) {
    plan.row_text.push_back(
        i % stride == 0 ? elide(index_or_label(options.row_labels, i), max_label_width, style)
                        : "");
    row_label_width = std::max(row_label_width, text_width(plan.row_text.back(), style));
  }
  // Column labels read best level; a label may be wider than its cell as long as it keeps
  // clear of its neighbours. Otherwise all of them are turned on their side.
  std::vector<int> col_widths;
  for (int64_t j = 0; j < cols; ++j) {
    plan.col_text.push_back(elide(index_or_label(options.col_labels, j), max_label_width, style));
    col_widths.push_back(text_width(plan.col_text.back(), style));
  }
  for (size_t j = 0; j + 1 < col_widths.size(); ++j)
    plan.col_vertical |= (col_widths[j] + col_widths[j + 1]) / 2 + m.cap_height / 2 > l.cell;
  plan.col_vertical |= col_widths.size() == 1 && col_widths[0] > 2 * l.cell;
  int col_label_width = 0;
  if (plan.col_vertical) {
    for (int64_t j = 0; j < cols; ++j) {
      std::string& text = plan.col_text[static_cast<size_t>(j)];
      if (j % stride != 0) text.clear();
      col_label_width = std::max(col_label_width, text_width(text, style));
    }
  }
  const int col_label_height = plan.col_vertical ? col_label_width : m.line_height;
  // Level labels wider than their cell stick out by half the difference at either end.
  const int overhang_left = plan.col_vertical ? 0 : std::max(0, (col_widths.front() - l.cell) / 2);
  const int overhang_right = plan.col_vertical ? 0 : std::max(0, (col_widths.back() - l.cell) / 2);
  return {.row_label_width = row_label_width,
          .col_label_height = col_label_height,
          .overhang_left = overhang_left,
          .overhang_right = overhang_right};
}

// The colour bar right of `right`, beside the cells, then its tick labels and the value
// label (turned); right and bottom move out to what they take.
void place_colour_bar(Plan& plan, int& right, int& bottom, const HeatmapOptions& options) {
  HeatmapLayout& l = plan.layout;
  const TextStyle style{.size = l.label_size};
  const TextMetrics m = text_metrics(style);
  l.bar = {right + kBarGap, l.cells.y, kBarWidth, std::max(l.cells.h, kMinBarHeight)};
  plan.tick_step = nice_step(l.vmin, l.vmax);
  plan.ticks = nice_ticks(l.vmin, l.vmax);
  plan.tick_labels_x = l.bar.x + l.bar.w + kTickLength + 3;
  int tick_w = 0;
  for (double t : plan.ticks)
    tick_w = std::max(tick_w, text_width(format_tick(t, plan.tick_step), style));
  right = plan.tick_labels_x + tick_w;
  // The lowest tick label, centred on the bar's last row, hangs below it.
  bottom = std::max(bottom, l.bar.y + l.bar.h + m.line_height - m.cap_middle());
  if (!options.value_label.empty()) {
    const int len = text_width(options.value_label, style);
    plan.value_label_x = right + 2 * kGap;
    plan.value_label_y = l.bar.y + std::max(0, (l.bar.h - len) / 2);
    right = plan.value_label_x + m.line_height;
    bottom = std::max(bottom, plan.value_label_y + len);
  }
}

// Where each part of the picture goes, and the image's size.
void place_parts(Plan& plan, const LabelRoom& labels, int64_t rows, int64_t cols,
                 const HeatmapOptions& options) {
  HeatmapLayout& l = plan.layout;
  const TextStyle style{.size = l.label_size};
  const int line_height = text_metrics(style).line_height;
  const int grid_w = static_cast<int>(cols) * l.cell;
  const int grid_h = static_cast<int>(rows) * l.cell;

  // Top to bottom: title, column axis name, column labels, cells.
  int y = kMargin;
  const int title_w = text_width(options.title, kTitle);
  if (!options.title.empty()) {
    plan.title_y = y;
    y += text_metrics(kTitle).line_height + 6;
  }
  const int col_axis_w = text_width(options.col_axis, style);
  if (!options.col_axis.empty()) {
    plan.col_axis_y = y;
    y += line_height + 2;
  }
  plan.col_labels_bottom = y + labels.col_label_height;
  l.cells.y = plan.col_labels_bottom + kGap;

  // Left to right: row axis name (turned), row labels, cells, colour bar, tick labels,
  // value label (turned).
  int x = kMargin;
  const int row_axis_len = text_width(options.row_axis, style);
  if (!options.row_axis.empty()) {
    plan.row_axis_x = x;
    plan.row_axis_y = l.cells.y + std::max(0, (grid_h - row_axis_len) / 2);
    x += line_height + 2 * kGap;
  }
  x = std::max(x + labels.row_label_width + kGap, kMargin + labels.overhang_left);
  plan.row_labels_right = x - kGap;
  l.cells = {x, l.cells.y, grid_w, grid_h};
  int right = l.cells.x + grid_w + labels.overhang_right;
  int bottom = std::max(l.cells.y + grid_h, plan.row_axis_y + row_axis_len);
  plan.col_axis_x = l.cells.x + (grid_w - col_axis_w) / 2;
  if (plan.col_axis_x < l.cells.x) plan.col_axis_x = l.cells.x;
  right = std::max(right, plan.col_axis_x + col_axis_w);
  if (options.colour_bar) place_colour_bar(plan, right, bottom, options);

  // A title wider than the picture widens the image; the picture is then centred under it.
  l.width = std::max(right, kMargin + title_w) + kMargin;
  const int shift = (l.width - (right + kMargin)) / 2;
  l.cells.x += shift;
  if (options.colour_bar) l.bar.x += shift;
  for (int* px : {&plan.col_axis_x, &plan.row_axis_x, &plan.row_labels_right, &plan.tick_labels_x,
                  &plan.value_label_x})
    *px += shift;
  // The title is centred over the cells, unless that would push it off the image.
  plan.title_x = std::clamp(l.cells.x + (l.cells.w - title_w) / 2, kMargin,
                            std::max(kMargin, l.width - kMargin - title_w));
  l.height = bottom + kMargin;
}

Plan plan_heatmap(std::span<const float> values, int64_t rows, int64_t cols,
                  const HeatmapOptions& options) {
  check_inputs(values, rows, cols, options);
  Plan plan;
  HeatmapLayout& l = plan.layout;
  set_value_range(l, values, options);
  // Cells of 40 pixels up to 12 x 12; bigger matrices shrink towards 4 pixels a cell, so a
  // heatmap stays around 500 pixels wide.
  const int64_t longest = std::max(rows, cols);
  l.cell = options.cell_size > 0 ? options.cell_size
                                 : static_cast<int>(std::clamp<int64_t>(480 / longest, 4, 40));
  l.label_size = l.cell >= 24 ? kLargeLabels : kSmallLabels;
  const LabelRoom labels = plan_labels(plan, rows, cols, options);
  place_parts(plan, labels, rows, cols, options);
  return plan;
}

}  // namespace

Rect HeatmapLayout::cell_rect(int64_t row, int64_t col) const {
  return {cells.x + static_cast<int>(col) * cell, cells.y + static_cast<int>(row) * cell, cell,
          cell};
}

HeatmapLayout heatmap_layout(std::span<const float> values, int64_t rows, int64_t cols,
                             const HeatmapOptions& options) {
  return plan_heatmap(values, rows, cols, options).layout;
}

// ---- Drawing ---------------------------------------------------------------------------

namespace {

void draw_cells(Image& image, const HeatmapLayout& l, std::span<const float> values, int64_t rows,
                int64_t cols, bool show_values) {
  const float span = l.vmax - l.vmin;
  const TextMetrics m = text_metrics(kValue);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      const float v = values[static_cast<size_t>(i * cols + j)];
      const Rgb colour = std::isfinite(v) ? colour_map((v - l.vmin) / span) : kNonFinite;
      const Rect r = l.cell_rect(i, j);
      image.fill_rect(r.x, r.y, r.w, r.h, colour);
      if (!show_values) continue;
      const std::string text = fmt::format("{:.2f}", v);
      const int w = text_width(text, kValue);
      if (w + 4 <= r.w && m.cap_height + 4 <= r.h) {
        // Dark text on light cells, white on dark ones (Rec. 709 luma).
        const double luma = 0.2126 * colour.r + 0.7152 * colour.g + 0.0722 * colour.b;
        draw_text(image, r.x + (r.w - w) / 2, r.y + r.h / 2 - m.cap_middle(), text,
                  luma > 128 ? kInk : kWhite, kValue);
      }
    }
  }
  image.stroke_rect(l.cells.x - 1, l.cells.y - 1, l.cells.w + 2, l.cells.h + 2, kFrame);
}

// Labels sit centred on their row or column; the capitals (not the descenders) are what the
// eye centres on.
void draw_labels(Image& image, const Plan& plan, const HeatmapOptions& options) {
  const HeatmapLayout& l = plan.layout;
  const TextStyle style{.size = l.label_size};
  const TextMetrics m = text_metrics(style);
  for (size_t i = 0; i < plan.row_text.size(); ++i) {
    const std::string& text = plan.row_text[i];
    const Rect r = l.cell_rect(static_cast<int64_t>(i), 0);
    draw_text(image, plan.row_labels_right - text_width(text, style),
              r.y + r.h / 2 - m.cap_middle(), text, kInk, style);
  }
  for (size_t j = 0; j < plan.col_text.size(); ++j) {
    const std::string& text = plan.col_text[j];
    const Rect r = l.cell_rect(0, static_cast<int64_t>(j));
    const int w = text_width(text, style);
    if (plan.col_vertical)
      draw_text_vertical(image, r.x + r.w / 2 - m.cap_middle(), plan.col_labels_bottom - w, text,
                         kInk, style);
    else
      draw_text(image, r.x + (r.w - w) / 2, plan.col_labels_bottom - m.line_height, text, kInk,
                style);
  }
  draw_text(image, plan.title_x, plan.title_y, options.title, kInk, kTitle);
  draw_text(image, plan.col_axis_x, plan.col_axis_y, options.col_axis, kSubtle, style);
  draw_text_vertical(image, plan.row_axis_x, plan.row_axis_y, options.row_axis, kSubtle, style);
}

void draw_colour_bar(Image& image, const Plan& plan, const HeatmapOptions& options) {
  const HeatmapLayout& l = plan.layout;
  const Rect& bar = l.bar;
  const TextStyle style{.size = l.label_size};
  // Row py of the bar shows the value at fraction t of the range, vmax at the top.
  auto bar_row = [&bar, &l](double value) {
    const double t = (value - l.vmin) / (l.vmax - l.vmin);
    return bar.y + static_cast<int>(std::lround((1.0 - t) * (bar.h - 1)));
  };
  for (int py = 0; py < bar.h; ++py) {
    const float t = 1.0f - static_cast<float>(py) / static_cast<float>(bar.h - 1);
    image.fill_rect(bar.x, bar.y + py, bar.w, 1, colour_map(t));
  }
  image.stroke_rect(bar.x - 1, bar.y - 1, bar.w + 2, bar.h + 2, kFrame);
  const int cap_middle = text_metrics(style).cap_middle();
  for (double t : plan.ticks) {
    const int py = bar_row(t);
    image.fill_rect(bar.x + bar.w + 1, py, kTickLength, 1, kSubtle);
    draw_text(image, plan.tick_labels_x, py - cap_middle, format_tick(t, plan.tick_step), kInk,
              style);
  }
  draw_text_vertical(image, plan.value_label_x, plan.value_label_y, options.value_label, kSubtle,
                     style);
}

}  // namespace

Image heatmap(std::span<const float> values, int64_t rows, int64_t cols,
              const HeatmapOptions& options) {
  const Plan plan = plan_heatmap(values, rows, cols, options);
  Image image(plan.layout.width, plan.layout.height);
  draw_cells(image, plan.layout, values, rows, cols, options.show_values);
  draw_labels(image, plan, options);
  if (options.colour_bar) draw_colour_bar(image, plan, options);
  return image;
}

Image heatmap(const Tensor& matrix, const HeatmapOptions& options) {
  if (matrix.rank() != 2)
    throw ShapeError(fmt::format(
        "heatmap: expected a matrix [rows, cols] but the tensor has shape {}", matrix.shape()));
  const std::span<const float> values(matrix.data(), static_cast<size_t>(matrix.numel()));
  return heatmap(values, matrix.dim(0), matrix.dim(1), options);
}

Image heatmap(const Tensor& stack, int64_t index, const HeatmapOptions& options) {
  if (stack.rank() < 2)
    throw ShapeError(fmt::format(
        "heatmap: expected a stack of matrices [..., rows, cols] but the tensor has shape {}",
        stack.shape()));
  const int64_t rows = stack.dim(-2), cols = stack.dim(-1);
  const int64_t count = rows * cols == 0 ? 0 : stack.numel() / (rows * cols);
  if (index < 0 || index >= count)
    throw IndexError(fmt::format("heatmap: no matrix {} in a stack of {} (shape {})", index, count,
                                 stack.shape()));
  const std::span<const float> values(stack.data() + index * rows * cols,
                                      static_cast<size_t>(rows * cols));
  return heatmap(values, rows, cols, options);
}

// ---- Grid of panels --------------------------------------------------------------------

Image grid(const std::vector<Image>& panels, int64_t columns, const std::string& title,
           int spacing) {
  if (panels.empty()) throw std::invalid_argument("grid: there are no panels to arrange");
  if (columns < 1)
    throw std::invalid_argument(fmt::format("grid: {} columns cannot hold a panel", columns));
  if (spacing < 0)
    throw std::invalid_argument(fmt::format("grid: spacing {} is negative", spacing));
  const int n = static_cast<int>(panels.size());
  const int cols = static_cast<int>(std::min<int64_t>(columns, n));
  const int rows = ceil_div(n, cols);
  // Each column is as wide as its widest panel and each row as tall as its tallest, so a
  // panel without a colour bar leaves no hole.
  std::vector<int> col_x(static_cast<size_t>(cols) + 1, 0), row_y(static_cast<size_t>(rows) + 1, 0);
  for (int k = 0; k < n; ++k) {
    int& w = col_x[static_cast<size_t>(k % cols) + 1];
    int& h = row_y[static_cast<size_t>(k / cols) + 1];
    w = std::max(w, panels[static_cast<size_t>(k)].width() + spacing);
    h = std::max(h, panels[static_cast<size_t>(k)].height() + spacing);
  }
  for (size_t c = 1; c < col_x.size(); ++c) col_x[c] += col_x[c - 1];
  for (size_t r = 1; r < row_y.size(); ++r) row_y[r] += row_y[r - 1];

  // Panels bring their own white margins, so the grid adds only `spacing` between them.
  const int title_h = title.empty() ? 0 : kMargin + text_metrics(kGridTitle).line_height;
  const int title_w = text_width(title, kGridTitle);
  const int panels_w = col_x.back() - spacing;
  const int width = std::max(panels_w, title_w + 2 * kMargin);
  Image image(width, title_h + row_y.back() - spacing);
  draw_text(image, (width - title_w) / 2, kMargin, title, kInk, kGridTitle);
  const int left = (width - panels_w) / 2;
  for (int k = 0; k < n; ++k)
    image.blit(panels[static_cast<size_t>(k)], left + col_x[static_cast<size_t>(k % cols)],
               title_h + row_y[static_cast<size_t>(k / cols)]);
  return image;
}

Image attention_grid(std::span<const Tensor> layers, const HeatmapOptions& panel,
                     const std::string& title) {
  std::vector<Image> panels;
  int64_t heads = 1;
  for (size_t layer = 0; layer < layers.size(); ++layer) {
    const Tensor& probs = layers[layer];
    if (probs.rank() != 4 || probs.dim(0) != 1)
      throw ShapeError(
          fmt::format("attention_grid: layer {} has shape {}, expected one sequence's [1, H, T, S]",
                      layer + 1, probs.shape()));
    heads = probs.dim(1);
    for (int64_t head = 0; head < heads; ++head) {
      HeatmapOptions options = panel;
      options.title = fmt::format("layer {}, head {}", layer + 1, head + 1);
      options.colour_bar = panel.colour_bar && head + 1 == heads;
      if (!options.colour_bar) options.value_label.clear();
      panels.push_back(heatmap(probs, head, options));
    }
  }
  return grid(panels, heads, title);
}

}  // namespace gf::viz
