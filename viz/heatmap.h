// Heatmaps of matrices, above all attention probabilities (Vaswani et al. 2017, §3.2):
// row i is query position i, drawn top to bottom, column j is key position j, drawn left
// to right, and the colour of cell (i, j) says how much query i attends to key j.
//
// The picture, top to bottom: the title, the column axis name ("key") and the column labels
// (turned on their side when they do not fit a cell), then the cells. Left of the cells
// sit the row axis name ("query") and the row labels, right of them the colour bar with
// its tick values and the value label.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "autograd/tensor.h"
#include "viz/png.h"

namespace gf::viz {

// A colour map that runs from dark blue-violet (t = 0) through teal to yellow (t = 1), after
// matplotlib's viridis: close to perceptually uniform (equal steps in t look like equal steps
// in colour), lighter all the way, so it reads in grey and to colour-blind readers too.
// t is clamped to [0, 1]; NaN gives kNonFinite.
Rgb colour_map(float t);

// Cells holding NaN or an infinity (a masked score, say) are drawn in this grey, which the
// colour map never produces.
inline constexpr Rgb kNonFinite{150, 150, 150};

// Every member has an initializer, so designated initializers may name any subset of them
// (GCC's -Wmissing-field-initializers asks for that): heatmap(p, 8, 8, {.title = "head 1"}).
struct HeatmapOptions {
  std::string title{};
  std::vector<std::string> row_labels{};  // one per row; empty: the indices 0, 1, 2, ...
  std::vector<std::string> col_labels{};  // one per column; empty: the indices
  std::string row_axis = "query";
  std::string col_axis = "key";
  std::string value_label{};  // beside the colour bar, e.g. "attention weight"
  float vmin = 0.0f;          // drawn in the colour map's first colour (t = 0)
  float vmax = 1.0f;          // drawn in its last colour (t = 1); values outside are clamped
  bool auto_range = false;    // instead take them from the finite values, rounded out to ticks
  int cell_size = 0;          // pixels per cell side; 0 picks 40 for small matrices, less for big
  bool colour_bar = true;
  bool show_values = false;  // print each value in its cell when the cell is wide enough
};

// Where heatmap() puts things, so that callers and tests can find a cell's pixels.
struct HeatmapLayout {
  int width = 0, height = 0;       // the image
  int cell = 0;                    // a cell's side in pixels
  Rect cells{};                    // all rows x cols cells; cell (0, 0) is at its top-left
  Rect bar{};                      // the colour bar: vmax at its top row, vmin at its bottom row
  int label_size = 12;             // text size of labels in pixels: 15 for cells of 24 or more
  float vmin = 0.0f, vmax = 1.0f;  // the value range after auto_range

  Rect cell_rect(int64_t row, int64_t col) const;
};

// values holds rows x cols numbers row-major. Throws std::invalid_argument when they do not
// fill the cells ("heatmap: 12 values cannot fill 3 x 5 cells"), for zero rows or columns,
// for a label count that differs from rows or columns, for vmin >= vmax, and when the image
// would be too big (more than 4096 cells or 16384 pixels a side).
HeatmapLayout heatmap_layout(std::span<const float> values, int64_t rows, int64_t cols,
                             const HeatmapOptions& options = {});
Image heatmap(std::span<const float> values, int64_t rows, int64_t cols,
              const HeatmapOptions& options = {});

// The same for a [rows, cols] tensor, e.g. one head's attention probabilities [T, S].
// Throws gf::ShapeError for any other rank.
Image heatmap(const Tensor& matrix, const HeatmapOptions& options = {});

// Matrix `index` of a stack of them, a tensor [..., rows, cols], counting over the leading
// dimensions row-major: of attention probabilities [B, H, T, S], matrix b * H + h is head h
// of batch row b. Throws gf::ShapeError for a rank below 2 and gf::IndexError for an index
// outside the stack.
Image heatmap(const Tensor& stack, int64_t index, const HeatmapOptions& options = {});

// Panels (heatmaps of layers x heads, say) in a grid `columns` wide, filled row by row,
// `spacing` pixels apart, under a title. Each column is as wide as its widest panel and each
// row as tall as its tallest. Throws std::invalid_argument for no panels or columns < 1.
Image grid(const std::vector<Image>& panels, int64_t columns, const std::string& title = "",
           int spacing = 20);

// Every head of every layer for one use of attention, in a grid of layers (rows) by heads
// (columns) under title: layers holds each layer's probabilities [1, H, T, S]. Each panel is
// drawn with panel's options and titled "layer l, head h"; with panel.colour_bar, only the
// last head of a row shows its colour bar and value label, since all share the scale 0 to 1.
// Throws gf::ShapeError for a layer that is not [1, H, T, S].
Image attention_grid(std::span<const Tensor> layers, const HeatmapOptions& panel,
                     const std::string& title);

}  // namespace gf::viz
