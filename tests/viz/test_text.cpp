// Text drawn from TrueType fonts: every glyph where its own outline says, from the first font
// that has it, and the bitmap font's box only for code points no font has. The glyph boxes
// are computed here with stb_truetype directly, independently of viz/text.cpp's layout.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/viz/viz_testing.h"
#include "viz/bitmap_font.h"
#include "viz/heatmap.h"
#include "viz/text.h"

#define STB_TRUETYPE_IMPLEMENTATION
#define STBTT_STATIC
#include <stb_truetype.h>

using namespace gf::viz;
using Catch::Matchers::Contains;
using gf::viz::testing::ink;

namespace {

// On Debian and Ubuntu scripts/install-deps.sh installs fonts-dejavu-core and
// fonts-wqy-microhei, so missing fonts there are a failure; elsewhere only a warning.
bool have_system_fonts() {
  const std::vector<std::string> files = font_files();
  const bool dejavu = !files.empty() && files.front().ends_with("DejaVuSans.ttf");
  if (dejavu && files.size() >= 3) return true;  // regular, CJK, bold
  const std::string found = files.empty() ? "none" : fmt::format("{}", fmt::join(files, ", "));
  if (std::filesystem::exists("/etc/debian_version"))
    FAIL("DejaVu Sans (regular and bold) and a CJK font are missing; found: "
         << found
         << ". Install fonts-dejavu-core and fonts-wqy-microhei (scripts/install-deps.sh)");
  WARN("no DejaVu Sans and CJK fonts on this system (found: " << found
                                                              << "); TrueType checks skipped");
  return false;
}

// A font file as this test reads it.
struct TestFace {
  std::vector<unsigned char> bytes;
  stbtt_fontinfo info{};

  explicit TestFace(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
    REQUIRE(stbtt_InitFont(&info, bytes.data(), stbtt_GetFontOffsetForIndex(bytes.data(), 0)));
  }
  int glyph(char32_t c) const { return stbtt_FindGlyphIndex(&info, static_cast<int>(c)); }
  float scale(int size) const {
    return stbtt_ScaleForMappingEmToPixels(&info, static_cast<float>(size));
  }
};

// The smallest rectangle [x0, x1) x [y0, y1) that holds every pixel that is not white.
struct Box {
  int x0 = 0, y0 = 0, x1 = 0, y1 = 0;
};

Box ink_box(const Image& image) {
  Box b{image.width(), image.height(), 0, 0};
  for (int y = 0; y < image.height(); ++y)
    for (int x = 0; x < image.width(); ++x)
      if (image.at(x, y) != kWhite) {
        b = {std::min(b.x0, x), std::min(b.y0, y), std::max(b.x1, x + 1), std::max(b.y1, y + 1)};
      }
  return b;
}

void check_near(const Box& got, const Box& want, int tolerance) {
  INFO("ink [" << got.x0 << ", " << got.x1 << ") x [" << got.y0 << ", " << got.y1
               << "), outline box [" << want.x0 << ", " << want.x1 << ") x [" << want.y0 << ", "
               << want.y1 << ")");
  CHECK(std::abs(got.x0 - want.x0) <= tolerance);
  CHECK(std::abs(got.x1 - want.x1) <= tolerance);
  CHECK(std::abs(got.y0 - want.y0) <= tolerance);
  CHECK(std::abs(got.y1 - want.y1) <= tolerance);
}

// Each code point of text with its UTF-8 bytes.
std::vector<std::pair<char32_t, std::string>> code_points(const std::string& text) {
  std::vector<std::pair<char32_t, std::string>> out;
  for (size_t i = 0; i < text.size();) {
    const size_t start = i;
    const char32_t c = next_code_point(text, i);
    out.emplace_back(c, text.substr(start, i - start));
  }
  return out;
}

bool same_pixels(const Image& a, const Image& b) {
  return a.width() == b.width() && a.height() == b.height() &&
         std::equal(a.data(), a.data() + a.width() * a.height() * 3, b.data());
}

// The bitmap font's box (the glyph of code points no font has) at scale s, as drawn with its
// top-left corner at (x, y).
Image box_image(int width, int height, int x, int y, int s) {
  Image image(width, height);
  for (int v = 0; v < bitmap::kGlyphHeight * s; ++v)
    for (int u = 0; u < bitmap::kGlyphWidth * s; ++u)
      if (bitmap::glyph_pixel(bitmap::kMissing, u / s, v / s)) image.set(x + u, y + v, kBlack);
  return image;
}

const std::vector<std::string> kWords = {"Gr\xc3\xb6\xc3\x9f\x65",                // Größe
                                         "\xe2\x96\x81Stra\xc3\x9f\x65",          // ▁Straße
                                         "\xe6\xb3\xa8\xe6\x84\x8f\xe5\x8a\x9b",  // 注意力
                                         "\xc2\xbfQu\xc3\xa9?",                   // ¿Qué?
                                         "\xe2\x96\x81"};                         // ▁

constexpr int kSize = 40;  // big, so that each glyph's box is measured to the pixel

}  // namespace

TEST_CASE("each glyph is drawn from the first font that has it, where its outline says",
          "[viz][text]") {
  if (!have_system_fonts()) return;
  const std::vector<std::string> files = font_files();
  const TestFace latin(files[0]), cjk(files[1]);
  const TextMetrics m = text_metrics({.size = kSize});
  int hhea_ascent = 0, descent = 0, gap = 0;
  stbtt_GetFontVMetrics(&latin.info, &hhea_ascent, &descent, &gap);
  CHECK(m.ascent == std::lround(static_cast<float>(hhea_ascent) * latin.scale(kSize)));
  CHECK(m.cap_height == 29);  // DejaVu's capitals are 1493/2048 em

  for (const std::string& word : kWords)
    for (const auto& [c, utf8] : code_points(word)) {
      INFO("U+" << std::hex << static_cast<uint32_t>(c) << " of " << word);
      const TestFace& face = latin.glyph(c) != 0 ? latin : cjk;
      const int glyph = face.glyph(c);
      REQUIRE(glyph != 0);  // some font has it: it must not be the box
      const float scale = face.scale(kSize);
      Box outline;
      stbtt_GetGlyphBitmapBox(&face.info, glyph, scale, scale, &outline.x0, &outline.y0,
                              &outline.x1, &outline.y1);
      const int x = 20, y = 20;
      outline = {x + outline.x0, y + m.ascent + outline.y0, x + outline.x1,
                 y + m.ascent + outline.y1};
      Image image(120, 120);
      draw_text(image, x, y, utf8, kBlack, {.size = kSize});
      check_near(ink_box(image), outline, 1);
    }
}

TEST_CASE("a word is laid out with the fonts' advances and kerning", "[viz][text]") {
  if (!have_system_fonts()) return;
  const std::vector<std::string> files = font_files();
  const TestFace latin(files[0]), cjk(files[1]);
  for (const std::string& word : kWords) {
    INFO(word);
    float pen = 0;
    const TestFace* previous = nullptr;
    int previous_glyph = 0;
    for (const auto& [c, bytes] : code_points(word)) {
      const TestFace& face = latin.glyph(c) != 0 ? latin : cjk;
      const int glyph = face.glyph(c);
      if (previous == &face)
        pen += face.scale(kSize) *
               static_cast<float>(stbtt_GetGlyphKernAdvance(&face.info, previous_glyph, glyph));
      int advance = 0, bearing = 0;
      stbtt_GetGlyphHMetrics(&face.info, glyph, &advance, &bearing);
      pen += face.scale(kSize) * static_cast<float>(advance);
      previous = &face;
      previous_glyph = glyph;
    }
    CHECK(text_width(word, {.size = kSize}) == static_cast<int>(std::ceil(pen - 1e-3f)));
    // All the ink lies within the line box, give or take the outlines' overhang.
    Image image(400, 100);
    draw_text(image, 30, 20, word, kBlack, {.size = kSize});
    const Box b = ink_box(image);
    const TextMetrics m = text_metrics({.size = kSize});
    CHECK(b.x0 >= 30 - 2);
    CHECK(b.x1 <= 30 + static_cast<int>(std::ceil(pen)) + 2);
    CHECK(b.y0 >= 20 - 4);
    CHECK(b.y1 <= 20 + m.line_height + 4);
  }
}

TEST_CASE("a code point no font has draws as the bitmap font's box, and 注 does not",
          "[viz][text]") {
  if (!have_system_fonts()) return;
  const std::vector<std::string> files = font_files();
  const char32_t unassigned = 0x0378;  // no character, in no font
  for (const std::string& file : files) CHECK(TestFace(file).glyph(unassigned) == 0);
  const TextMetrics m = text_metrics({.size = kSize});
  const int s = bitmap_scale(kSize);
  const Image box = box_image(120, 120, 20, 20 + m.ascent - bitmap::kCapHeight * s, s);

  Image missing(120, 120);
  draw_text(missing, 20, 20, "\xcd\xb8", kBlack, {.size = kSize});  // U+0378
  CHECK(same_pixels(missing, box));
  CHECK(text_width("\xcd\xb8", {.size = kSize}) == bitmap::kAdvance * s);
  Image broken(120, 120);
  draw_text(broken, 20, 20, "\xff", kBlack, {.size = kSize});  // a broken byte, likewise
  CHECK(same_pixels(broken, box));

  Image zhu(120, 120);
  draw_text(zhu, 20, 20, "\xe6\xb3\xa8", kBlack, {.size = kSize});  // 注
  int differ = 0, grey = 0;
  for (int y = 0; y < 120; ++y)
    for (int x = 0; x < 120; ++x) {
      differ += zhu.at(x, y) != box.at(x, y);
      grey += zhu.at(x, y) != kWhite && zhu.at(x, y) != kBlack;  // antialiased edges
    }
  CHECK(differ > 300);
  CHECK(grey > 50);
}

TEST_CASE("bold text comes from DejaVu Sans Bold, vertical text is the same text turned",
          "[viz][text]") {
  if (!have_system_fonts()) return;
  CHECK(font_files().back().ends_with("DejaVuSans-Bold.ttf"));
  const std::string word = kWords[0];
  Image regular(200, 60), bold(200, 60);
  draw_text(regular, 5, 5, word, kBlack, {.size = 30});
  draw_text(bold, 5, 5, word, kBlack, {.size = 30, .bold = true});
  CHECK(ink(bold, 0, 0, 200, 60) > ink(regular, 0, 0, 200, 60) * 5 / 4);
  CHECK(text_width(word, {.size = 30, .bold = true}) > text_width(word, {.size = 30}));

  const TextStyle style{.size = 16};
  const int w = text_width(word, style), h = text_metrics(style).line_height;
  Image level(w + 20, h + 20), turned(h + 20, w + 20);
  draw_text(level, 10, 10, word, kBlack, style);
  draw_text_vertical(turned, 10, 10, word, kBlack, style);
  // Turned counter-clockwise: level pixel (10 + u, 10 + v) lands on (10 + v, 10 + w - 1 - u).
  int wrong = 0;
  for (int v = -10; v < h + 10; ++v)
    for (int u = -10; u < w + 10; ++u)
      wrong += level.at(10 + u, 10 + v) != turned.at(10 + v, 10 + w - 1 - u);
  CHECK(wrong == 0);
  CHECK(ink(turned, 0, 0, turned.width(), turned.height()) > 50);
}

TEST_CASE("the same text gives the same pixels, from any thread", "[viz][text][threads]") {
  const std::string text = "\xe6\xb3\xa8\xe6\x84\x8f\xe5\x8a\x9b Gr\xc3\xb6\xc3\x9f\x65";
  const auto draw = [&text] {
    Image image(260, 40);
    draw_text(image, 4, 4, text, Rgb{20, 40, 200}, {.size = 20, .bold = true});
    return image;
  };
  const Image reference = draw();
  CHECK(ink(reference, 0, 0, 260, 40) > 100);
  std::vector<Image> drawn(4, Image(1, 1));
  std::vector<std::thread> threads;
  for (size_t k = 0; k < drawn.size(); ++k)
    threads.emplace_back([&drawn, &draw, k] { drawn[k] = draw(); });
  for (std::thread& t : threads) t.join();
  for (const Image& image : drawn) CHECK(same_pixels(image, reference));
}

TEST_CASE("elide ends with an ellipsis and keeps code points whole", "[viz][text]") {
  if (!have_system_fonts()) return;
  const TextStyle style{.size = 14};
  CHECK(elide("short", 100, style) == "short");
  const int fits = text_width("atten\xe2\x80\xa6", style);  // atten…
  CHECK(elide("attention", fits, style) == "atten\xe2\x80\xa6");
  CHECK(elide("attention", fits - 1, style) == "atte\xe2\x80\xa6");
  const std::string cjk = "\xe6\xb3\xa8\xe6\x84\x8f\xe5\x8a\x9b\xe6\xb3\xa8\xe6\x84\x8f";
  const std::string cut = elide(cjk, text_width(cjk, style) / 2, style);
  CHECK(cut.size() % 3 == 0);  // whole three-byte code points, the ellipsis one of them
  CHECK(cut.starts_with("\xe6\xb3\xa8"));
}

TEST_CASE("a heatmap labels its rows and columns in German and Chinese", "[viz][text]") {
  if (!have_system_fonts()) return;
  const std::vector<float> values(5 * 5, 0.2f);
  const HeatmapOptions options{
      .row_labels = kWords, .col_labels = kWords, .row_axis = "", .col_axis = ""};
  const HeatmapLayout layout = heatmap_layout(values, 5, 5, options);
  const Image image = heatmap(values, 5, 5, options);
  const TextStyle style{.size = layout.label_size};
  CHECK(layout.label_size == 15);
  const Rect& c = layout.cells;
  for (size_t i = 0; i < kWords.size(); ++i) {
    INFO(kWords[i]);
    const int w = text_width(kWords[i], style);
    // Row label: ink in the row's band left of the cells, ending a gap before them, as wide
    // as the text.
    const Rect r = layout.cell_rect(static_cast<int64_t>(i), 0);
    int left = c.x, right = 0;
    for (int y = r.y; y < r.y + r.h; ++y)
      for (int x = 0; x < c.x - 1; ++x)
        if (image.at(x, y) != kWhite) {
          left = std::min(left, x);
          right = std::max(right, x + 1);
        }
    CHECK(right <= c.x - 4);
    CHECK(right >= c.x - 10);
    CHECK(std::abs((right - left) - w) <= 3);
    // Column label: "▁Straße" is wider than a cell, so all of them stand on their side, each
    // as tall as its text is wide, ending just above the cells.
    const Rect col = layout.cell_rect(0, static_cast<int64_t>(i));
    int top = c.y, bottom = 0;
    for (int y = 0; y < c.y - 1; ++y)
      for (int x = col.x; x < col.x + col.w; ++x)
        if (image.at(x, y) != kWhite) {
          top = std::min(top, y);
          bottom = std::max(bottom, y + 1);
        }
    CHECK(bottom <= c.y - 4);
    CHECK(std::abs((bottom - top) - w) <= 3);
  }
}

TEST_CASE("use_font_files reads only font files, and says which one it refuses", "[viz][text]") {
  const std::vector<std::string> before = font_files();
  const std::string junk =
      (std::filesystem::temp_directory_path() / "gradformer-not-a-font.ttf").string();
  std::ofstream(junk) << "this is not a font, only some text that is long enough";
  REQUIRE_THROWS_WITH(use_font_files({junk}),
                      Contains("text: " + junk + " is not a TrueType or OpenType font"));
  REQUIRE_THROWS_WITH(use_font_files({junk + ".missing"}),
                      Contains("text: cannot read " + junk + ".missing"));
  std::filesystem::remove(junk);
  CHECK(font_files() == before);  // a refused file changes nothing

  if (!have_system_fonts()) return;
  use_font_files({before.front()});  // DejaVu Sans alone: no CJK, no bold face
  const TextStyle style{.size = kSize};
  const int s = bitmap_scale(kSize);
  CHECK(font_files() == std::vector<std::string>{before.front()});
  CHECK(text_width("\xe6\xb3\xa8", style) == bitmap::kAdvance * s);  // 注 is a box now
  // Bold is drawn by thickening: each glyph one pixel wider.
  CHECK(text_width("ab", {.size = kSize, .bold = true}) == text_width("ab", style) + 2);
  use_system_fonts();
  CHECK(font_files() == before);
}
