#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "autograd/errors.h"
#include "autograd/tensor.h"
#include "tests/viz/viz_testing.h"
#include "viz/heatmap.h"
#include "viz/text.h"

using namespace gf::viz;
using Catch::Matchers::Contains;
using gf::viz::testing::ink;

namespace {

double luma(Rgb c) {
  return 0.2126 * c.r + 0.7152 * c.g + 0.0722 * c.b;
}

// Checks that every pixel of cell (i, j) has the colour the map gives value v.
void check_cell(const Image& image, const HeatmapLayout& layout, int64_t i, int64_t j, Rgb colour) {
  const Rect r = layout.cell_rect(i, j);
  INFO("cell (" << i << ", " << j << ") at (" << r.x << ", " << r.y << ")");
  CHECK(image.at(r.x + r.w / 2, r.y + r.h / 2) == colour);
  int wrong = 0;
  for (int y = r.y; y < r.y + r.h; ++y)
    for (int x = r.x; x < r.x + r.w; ++x) wrong += image.at(x, y) != colour;
  CHECK(wrong == 0);
}

}  // namespace

TEST_CASE("the colour map runs from dark violet to yellow, getting lighter all the way",
          "[viz][heatmap]") {
  CHECK(colour_map(0.0f) == Rgb{68, 1, 84});
  CHECK(colour_map(1.0f) == Rgb{253, 231, 37});
  CHECK(colour_map(-3.0f) == colour_map(0.0f));  // clamped
  CHECK(colour_map(7.0f) == colour_map(1.0f));
  CHECK(colour_map(std::nanf("")) == kNonFinite);
  for (int k = 1; k <= 40; ++k) {
    const float t = static_cast<float>(k) / 40.0f;
    INFO("t = " << t);
    CHECK(luma(colour_map(t)) > luma(colour_map(t - 0.025f)));
    CHECK(colour_map(t) != kNonFinite);
  }
}

TEST_CASE("a known 2 x 3 matrix lands on the right pixels and colours", "[viz][heatmap]") {
  // Not symmetric and not square, so that a swap of rows and columns cannot pass.
  const std::vector<float> values = {0.0f,  0.5f,  1.0f,  //
                                     0.25f, 0.75f, 0.1f};
  const HeatmapOptions options{
      .title = "2 x 3", .row_labels = {"a", "b"}, .col_labels = {"x", "y", "z"}};
  const HeatmapLayout layout = heatmap_layout(values, 2, 3, options);
  const Image image = heatmap(values, 2, 3, options);
  REQUIRE(image.width() == layout.width);
  REQUIRE(image.height() == layout.height);
  CHECK(layout.cell == 40);  // small matrices get big cells
  CHECK(layout.cells.w == 3 * layout.cell);
  CHECK(layout.cells.h == 2 * layout.cell);

  // Rows are queries, top to bottom; columns are keys, left to right.
  CHECK(layout.cell_rect(0, 0).x == layout.cells.x);
  CHECK(layout.cell_rect(0, 0).y == layout.cells.y);
  CHECK(layout.cell_rect(1, 0).y == layout.cells.y + layout.cell);
  CHECK(layout.cell_rect(0, 2).x == layout.cells.x + 2 * layout.cell);
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j)
      check_cell(image, layout, i, j, colour_map(values[static_cast<size_t>(i * 3 + j)]));
  // The range's ends are the colour map's ends: 0 at the top-left, 1 at the top-right.
  check_cell(image, layout, 0, 0, Rgb{68, 1, 84});
  check_cell(image, layout, 0, 2, Rgb{253, 231, 37});
}

TEST_CASE("the colour bar shows the range, vmax at the top", "[viz][heatmap]") {
  const std::vector<float> values = {0.0f, 1.0f};
  const HeatmapLayout layout = heatmap_layout(values, 1, 2);
  const Image image = heatmap(values, 1, 2);
  const Rect& bar = layout.bar;
  REQUIRE(bar.w > 0);
  CHECK(bar.x > layout.cells.x + layout.cells.w);
  CHECK(image.at(bar.x + bar.w / 2, bar.y) == colour_map(1.0f));
  CHECK(image.at(bar.x + bar.w / 2, bar.y + bar.h - 1) == colour_map(0.0f));
  CHECK(image.at(bar.x, bar.y + bar.h / 2) == image.at(bar.x + bar.w - 1, bar.y + bar.h / 2));
  // Tick values right of the bar.
  CHECK(ink(image, bar.x + bar.w + 1, bar.y - 8, layout.width - bar.x - bar.w - 1, bar.h + 16) >
        50);

  const Image no_bar = heatmap(values, 1, 2, {.colour_bar = false});
  CHECK(no_bar.width() < image.width());
}

TEST_CASE("values outside the range clamp and NaN cells are grey", "[viz][heatmap]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> values = {-2.0f, 3.0f, nan, -inf};
  const HeatmapLayout layout = heatmap_layout(values, 2, 2);
  const Image image = heatmap(values, 2, 2);
  check_cell(image, layout, 0, 0, colour_map(0.0f));
  check_cell(image, layout, 0, 1, colour_map(1.0f));
  check_cell(image, layout, 1, 0, kNonFinite);
  check_cell(image, layout, 1, 1, kNonFinite);
}

TEST_CASE("a custom or automatic value range maps its ends to the colour map's", "[viz][heatmap]") {
  const std::vector<float> scores = {-3.0f, 1.0f, 5.0f, std::nanf("")};
  const HeatmapOptions fixed{.vmin = -3.0f, .vmax = 5.0f};
  const HeatmapLayout l1 = heatmap_layout(scores, 2, 2, fixed);
  const Image i1 = heatmap(scores, 2, 2, fixed);
  check_cell(i1, l1, 0, 0, colour_map(0.0f));
  check_cell(i1, l1, 0, 1, colour_map(0.5f));
  check_cell(i1, l1, 1, 0, colour_map(1.0f));

  // auto_range ignores NaN and rounds [-3, 5] out to the tick step, 2: [-4, 6].
  const HeatmapLayout l2 = heatmap_layout(scores, 2, 2, {.auto_range = true});
  CHECK(l2.vmin == -4.0f);
  CHECK(l2.vmax == 6.0f);
  const HeatmapLayout l3 =
      heatmap_layout(std::vector<float>{0.3f, 0.3f}, 1, 2, {.auto_range = true});
  CHECK(l3.vmin < 0.3f);
  CHECK(l3.vmax > 0.3f);
}

TEST_CASE("labels, axis names and the title are drawn where the layout leaves room",
          "[viz][heatmap]") {
  const std::vector<float> values(4 * 4, 0.25f);
  const std::vector<std::string> tokens = {"<s>", "a", "b", "</s>"};
  const HeatmapOptions options{.title = "attention", .row_labels = tokens, .col_labels = tokens};
  const HeatmapLayout layout = heatmap_layout(values, 4, 4, options);
  const Image image = heatmap(values, 4, 4, options);
  const Rect& c = layout.cells;
  // Row labels left of each row of cells; column labels above each column.
  for (int64_t i = 0; i < 4; ++i) {
    const Rect r = layout.cell_rect(i, 0);
    CHECK(ink(image, 0, r.y, c.x - 1, r.h) > 10);
  }
  // Level column labels: their line box ends a gap of 6 pixels above the cells.
  const TextMetrics m = text_metrics({.size = layout.label_size});
  for (int64_t j = 0; j < 4; ++j) {
    const Rect r = layout.cell_rect(0, j);
    CHECK(ink(image, r.x, c.y - 6 - m.line_height, r.w, m.line_height) > 5);
    CHECK(ink(image, r.x, c.y - 5, r.w, 4) == 0);
  }
  // The title at the top (below a margin of 14 pixels); nothing below the cells but white.
  const int title_height = text_metrics({.size = 18, .bold = true}).line_height;
  CHECK(ink(image, 0, 0, layout.width, 14) == 0);
  CHECK(ink(image, 0, 14, layout.width, title_height) > 50);
  CHECK(ink(image, 0, c.y + c.h + 1, c.x + c.w + 1, layout.height - c.y - c.h - 1) == 0);
  // Unlabelled heatmaps number their rows and columns, and accept any UTF-8 label.
  CHECK_NOTHROW(heatmap(values, 4, 4, {.row_labels = {"\xc3\xbc", "\xff", "", "x"}}));
}

TEST_CASE("big matrices get smaller cells and keep every label legible", "[viz][heatmap]") {
  const std::vector<float> values(60 * 90, 0.5f);
  const HeatmapLayout layout = heatmap_layout(values, 60, 90);
  CHECK(layout.cell >= 4);
  CHECK(layout.cell < 10);
  CHECK(layout.label_size == 12);  // small cells, small labels
  CHECK(layout.width < 1000);
  const Image image = heatmap(values, 60, 90);
  check_cell(image, layout, 59, 89, colour_map(0.5f));
  CHECK(heatmap_layout(values, 60, 90, {.cell_size = 3}).cell == 3);
}

TEST_CASE("heatmap rejects input it cannot draw, with a clear message", "[viz][heatmap]") {
  const std::vector<float> twelve(12, 0.0f);
  REQUIRE_THROWS_WITH(heatmap(twelve, 3, 5),
                      Contains("heatmap: 12 values cannot fill 3 x 5 cells"));
  REQUIRE_THROWS_WITH(heatmap(std::vector<float>{}, 0, 5),
                      Contains("heatmap: cannot draw 0 x 5 cells"));
  REQUIRE_THROWS_WITH(heatmap(twelve, 3, 4, {.row_labels = {"a", "b"}}),
                      Contains("heatmap: 2 row labels for 3 rows"));
  REQUIRE_THROWS_WITH(heatmap(twelve, 3, 4, {.col_labels = {"a"}}),
                      Contains("heatmap: 1 column labels for 4 columns"));
  REQUIRE_THROWS_WITH(heatmap(twelve, 3, 4, {.cell_size = 5000}),
                      Contains("heatmap: 3 x 4 cells of 5000 pixels do not fit in an image"));
  REQUIRE_THROWS_WITH(heatmap(twelve, 3, 4, {.vmin = 1.0f, .vmax = 0.0f}),
                      Contains("heatmap: the value range [1, 0] is empty"));
}

TEST_CASE("heatmap draws a rows x cols tensor and refuses other ranks", "[viz][heatmap]") {
  const std::vector<float> values = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f};
  const gf::Tensor matrix = gf::Tensor::from({2, 3}, values);
  const Image from_tensor = heatmap(matrix);
  const Image from_span = heatmap(values, 2, 3);
  REQUIRE(from_tensor.width() == from_span.width());
  REQUIRE(from_tensor.height() == from_span.height());
  CHECK(std::equal(from_tensor.data(),
                   from_tensor.data() + from_tensor.width() * from_tensor.height() * 3,
                   from_span.data()));
  REQUIRE_THROWS_AS(heatmap(gf::Tensor::zeros({2, 3, 4})), gf::ShapeError);
  REQUIRE_THROWS_WITH(
      heatmap(gf::Tensor::zeros({2, 3, 4})),
      Contains("heatmap: expected a matrix [rows, cols] but the tensor has shape [2, 3, 4]"));
  REQUIRE_THROWS_WITH(heatmap(gf::Tensor::zeros({6})), Contains("has shape [6]"));
}

TEST_CASE("grid lays panels out row by row under a title", "[viz][heatmap]") {
  const std::vector<Image> panels = {Image(30, 20, Rgb{255, 0, 0}), Image(30, 20, Rgb{0, 255, 0}),
                                     Image(40, 25, Rgb{0, 0, 255})};
  const Image g = grid(panels, 2, "", /*spacing=*/5);
  CHECK(g.width() == 40 + 5 + 30);  // column 0 is as wide as its widest panel
  CHECK(g.height() == 20 + 5 + 25);
  CHECK(g.at(0, 0) == Rgb{255, 0, 0});
  CHECK(g.at(45, 0) == Rgb{0, 255, 0});
  CHECK(g.at(39, 49) == Rgb{0, 0, 255});  // second row, first column
  CHECK(g.at(42, 10) == kWhite);          // spacing
  const Image titled = grid(panels, 3, "layers x heads");
  // Room for the title, a line of 20-pixel bold text below a margin of 14.
  CHECK(titled.height() == 14 + text_metrics({.size = 20, .bold = true}).line_height + 25);
  CHECK(ink(titled, 0, 0, titled.width(), titled.height(), Rgb{255, 0, 0}) ==
        titled.width() * titled.height() - 30 * 20);  // the red panel is whole
  REQUIRE_THROWS_WITH(grid({}, 2), Contains("grid: there are no panels"));
  REQUIRE_THROWS_WITH(grid(panels, 0), Contains("grid: 0 columns"));
}

TEST_CASE("heatmap draws one matrix of a stack and refuses one outside it", "[viz][heatmap]") {
  // A stack [2, 1, 2, 3]: matrix 1 is the second [2, 3] block.
  std::vector<float> values(12);
  for (size_t i = 0; i < values.size(); ++i) values[i] = 0.05f * static_cast<float>(i);
  const gf::Tensor stack = gf::Tensor::from({2, 1, 2, 3}, values);
  const Image second = heatmap(stack, 1);
  const Image expected = heatmap(std::span<const float>(values).subspan(6), 2, 3);
  REQUIRE(second.width() == expected.width());
  REQUIRE(second.height() == expected.height());
  CHECK(std::equal(second.data(), second.data() + second.width() * second.height() * 3,
                   expected.data()));
  const HeatmapLayout layout = heatmap_layout(std::span<const float>(values).subspan(6), 2, 3);
  check_cell(second, layout, 1, 2, colour_map(values[11]));
  CHECK(heatmap(gf::Tensor::from({2, 3}, {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f}), 0).width() > 0);
  REQUIRE_THROWS_AS(heatmap(stack, 2), gf::IndexError);
  REQUIRE_THROWS_WITH(heatmap(stack, -1), Contains("no matrix -1 in a stack of 2"));
  REQUIRE_THROWS_AS(heatmap(gf::Tensor::zeros({6}), 0), gf::ShapeError);
}

TEST_CASE("attention_grid draws every head of every layer, one colour bar a row",
          "[viz][heatmap]") {
  // Two layers of 3 heads over 2 queries and 2 keys: [1, 3, 2, 2] each.
  std::vector<gf::Tensor> layers;
  for (int layer = 0; layer < 2; ++layer) {
    std::vector<float> values(12);
    for (size_t i = 0; i < values.size(); ++i)
      values[i] = 0.04f * static_cast<float>(i) + 0.5f * static_cast<float>(layer);
    layers.push_back(gf::Tensor::from({1, 3, 2, 2}, values));
  }
  const HeatmapOptions panel{.row_labels = {"a", "b"}, .value_label = "weight", .cell_size = 16};
  const Image drawn = attention_grid(layers, panel, "cross-attention");

  // The same grid panel by panel: titled by layer and head, the bar on the last head only.
  std::vector<Image> panels;
  for (int64_t layer = 0; layer < 2; ++layer)
    for (int64_t head = 0; head < 3; ++head) {
      HeatmapOptions options = panel;
      options.title = "layer " + std::to_string(layer + 1) + ", head " + std::to_string(head + 1);
      options.colour_bar = head == 2;
      if (head != 2) options.value_label.clear();
      panels.push_back(heatmap(layers[static_cast<size_t>(layer)], head, options));
    }
  const Image expected = grid(panels, 3, "cross-attention");
  REQUIRE(drawn.width() == expected.width());
  REQUIRE(drawn.height() == expected.height());
  CHECK(
      std::equal(drawn.data(), drawn.data() + drawn.width() * drawn.height() * 3, expected.data()));
  CHECK(panels[2].width() > panels[1].width());  // the bar makes the last column wider

  const std::vector<gf::Tensor> batch_of_one_head = {gf::Tensor::zeros({3, 2, 2})};
  REQUIRE_THROWS_WITH(attention_grid(batch_of_one_head, panel, ""),
                      Contains("attention_grid: layer 1 has shape [3, 2, 2]"));
}
