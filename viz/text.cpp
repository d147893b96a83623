#include "viz/text.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <span>
#include <stdexcept>

#include "viz/bitmap_font.h"

// The one place that compiles stb_truetype; static, so its functions stay private to this file.
#define STB_TRUETYPE_IMPLEMENTATION
#define STBTT_STATIC
#include <stb_truetype.h>

namespace gf::viz {

namespace {

// ---- Font files --------------------------------------------------------------------------

// Where Debian and Ubuntu (fonts-dejavu-core, fonts-wqy-microhei, fonts-wqy-zenhei,
// fonts-noto-cjk, fonts-droid-fallback), Fedora and Arch put these fonts. Only fixed paths
// under the system's font folders are read.
constexpr const char* kRegularFiles[] = {
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu-sans-fonts/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/local/share/fonts/DejaVuSans.ttf",
};
constexpr const char* kBoldFiles[] = {
    "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf",
    "/usr/share/fonts/dejavu-sans-fonts/DejaVuSans-Bold.ttf",
    "/usr/share/fonts/TTF/DejaVuSans-Bold.ttf",
    "/usr/local/share/fonts/DejaVuSans-Bold.ttf",
};
constexpr const char* kCjkFiles[] = {
    "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc",
    "/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc",
    "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
    "/usr/share/fonts/google-noto-cjk/NotoSansCJK-Regular.ttc",
    "/usr/share/fonts/truetype/droid/DroidSansFallbackFull.ttf",
    "/usr/local/share/fonts/wqy-microhei.ttc",
};

// The biggest CJK collections are about 20 MB; a bigger file is not a font we expect.
constexpr std::uintmax_t kMaxFontBytes = 64u << 20;

// A parsed font. info points into bytes, so a Face never moves (it lives in a unique_ptr).
struct Face {
  std::string path;
  std::vector<unsigned char> bytes;
  stbtt_fontinfo info{};
  bool bold = false;  // drawn bold by its design, not by thickening

  int glyph(char32_t c) const { return stbtt_FindGlyphIndex(&info, static_cast<int>(c)); }
  float scale(int size) const {
    return stbtt_ScaleForMappingEmToPixels(&info, static_cast<float>(size));
  }
};

// stb_truetype trusts a font's table directory. Checked here: that the directory and every
// table it lists lie inside the file (the layout of the directory: the OpenType specification,
// "Table Directory", https://learn.microsoft.com/typography/opentype/spec/otff).
bool tables_inside(const std::vector<unsigned char>& bytes, int offset) {
  const auto read = [&bytes](size_t at, int count) {
    uint64_t value = 0;
    for (int k = 0; k < count; ++k) value = value << 8 | bytes[at + static_cast<size_t>(k)];
    return value;
  };
  const auto start = static_cast<size_t>(offset);
  if (start + 12 > bytes.size()) return false;
  const auto tables = static_cast<size_t>(read(start + 4, 2));
  if (start + 12 + 16 * tables > bytes.size()) return false;
  for (size_t k = 0; k < tables; ++k) {
    const size_t record = start + 12 + 16 * k;
    if (read(record + 8, 4) + read(record + 12, 4) > bytes.size()) return false;
  }
  return true;
}

// Reads and parses path, font 0 of a collection (.ttc). Throws std::runtime_error naming it.
std::unique_ptr<Face> load_face(const std::string& path, bool bold) {
  auto face = std::make_unique<Face>();
  face->path = path;
  face->bold = bold;
  std::error_code error;
  const std::uintmax_t size = std::filesystem::file_size(path, error);
  if (error)
    throw std::runtime_error(fmt::format("text: cannot read {}: {}", path, error.message()));
  if (size < 16 || size > kMaxFontBytes)  // 16: a collection's header and first offset
    throw std::runtime_error(
        fmt::format("text: {} is not a TrueType or OpenType font ({} bytes)", path, size));
  face->bytes.resize(static_cast<size_t>(size));
  std::ifstream in(path, std::ios::binary);
  if (!in.read(reinterpret_cast<char*>(face->bytes.data()), static_cast<std::streamsize>(size)))
    throw std::runtime_error(fmt::format("text: cannot read {}", path));
  const int offset = stbtt_GetFontOffsetForIndex(face->bytes.data(), 0);
  if (offset < 0 || !tables_inside(face->bytes, offset) ||
      stbtt_InitFont(&face->info, face->bytes.data(), offset) == 0)
    throw std::runtime_error(fmt::format("text: {} is not a TrueType or OpenType font", path));
  return face;
}

// The faces that draw text, in order of preference. Empty: the bitmap font draws everything.
struct FontSet {
  std::vector<std::unique_ptr<Face>> regular;
  std::unique_ptr<Face> bold;  // tried first for bold text when present

  bool empty() const { return regular.empty(); }
  const Face& primary() const { return *regular.front(); }
};

// The first of paths that exists and parses; a broken system font is reported and skipped.
std::unique_ptr<Face> first_usable(std::span<const char* const> paths, bool bold) {
  for (const char* path : paths) {
    std::error_code error;
    if (!std::filesystem::is_regular_file(path, error)) continue;
    try {
      return load_face(path, bold);
    } catch (const std::runtime_error& e) {
      std::fprintf(stderr, "%s; skipping it\n", e.what());
    }
  }
  return nullptr;
}

std::shared_ptr<const FontSet> load_system_fonts() {
  auto set = std::make_shared<FontSet>();
  if (auto regular = first_usable(kRegularFiles, false)) {
    set->regular.push_back(std::move(regular));
    set->bold = first_usable(kBoldFiles, true);
  }
  if (auto cjk = first_usable(kCjkFiles, false)) set->regular.push_back(std::move(cjk));
  return set;
}

// The fonts in use, loaded on first use. Drawing takes a reference to the set under the
// mutex and then reads it without one: a set is never changed once made, only replaced.
std::mutex g_fonts_mutex;
std::shared_ptr<const FontSet> g_fonts;

std::shared_ptr<const FontSet> current_fonts() {
  const std::lock_guard lock(g_fonts_mutex);
  if (!g_fonts) g_fonts = load_system_fonts();
  return g_fonts;
}

void set_fonts(std::shared_ptr<const FontSet> fonts) {
  const std::lock_guard lock(g_fonts_mutex);
  g_fonts = std::move(fonts);
}

void check_size(int size) {
  if (size < 1 || size > 512)
    throw std::invalid_argument(
        fmt::format("text: size {} is not a number of pixels in [1, 512]", size));
}

TextMetrics metrics_of(const FontSet& fonts, TextStyle style) {
  check_size(style.size);
  if (fonts.empty()) {
    const int s = bitmap_scale(style.size);
    return {.ascent = bitmap::kCapHeight * s,
            .line_height = bitmap::kGlyphHeight * s,
            .cap_height = bitmap::kCapHeight * s};
  }
  // The primary face's line metrics (hhea) hold for every face, so that a line of mixed
  // scripts has one baseline; the cap height is the top of its "H".
  const Face& face = fonts.primary();
  const float scale = face.scale(style.size);
  int ascent = 0, descent = 0, gap = 0;
  stbtt_GetFontVMetrics(&face.info, &ascent, &descent, &gap);
  int x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  stbtt_GetCodepointBox(&face.info, 'H', &x0, &y0, &x1, &y1);
  const int ascent_px = static_cast<int>(std::lround(static_cast<float>(ascent) * scale));
  const int descent_px = static_cast<int>(std::lround(static_cast<float>(-descent) * scale));
  return {.ascent = ascent_px,
          .line_height = ascent_px + descent_px,
          .cap_height = static_cast<int>(std::lround(static_cast<float>(y1) * scale))};
}

// ---- Layout: which glyph of which face goes where ------------------------------------------

struct Piece {
  const Face* face = nullptr;  // nullptr: the bitmap font's glyph for code (or its box)
  int glyph = 0;
  char32_t code = 0;
  size_t byte = 0;       // where the code point starts in the text
  float x = 0;           // the pen position, pixels from the start of the line
  bool thicken = false;  // faux bold
};

struct Line {
  std::vector<Piece> pieces{};
  TextMetrics metrics{};
  int width = 0;
  int box_scale = 1;  // of bitmap glyphs: the box for missing code points, or all of them
};

// Control characters have no business in a label: they draw as the box even where a font
// maps them to a glyph.
bool drawable(char32_t c) {
  return c >= 0x20 && !(c >= 0x7F && c < 0xA0);
}

// The face that draws c in this style, or nullptr.
const Face* face_for(const FontSet& fonts, char32_t c, bool bold) {
  if (!drawable(c)) return nullptr;
  if (bold && fonts.bold && fonts.bold->glyph(c) != 0) return fonts.bold.get();
  for (const auto& face : fonts.regular)
    if (face->glyph(c) != 0) return face.get();
  return nullptr;
}

// Every code point laid out on a line with the bitmap font, as it always was: glyphs 5 of 6
// pixels apart (per scale step), bold one pixel wider in all.
Line layout_bitmap(std::string_view text, TextStyle style, Line line) {
  const int s = line.box_scale;
  for (size_t i = 0; i < text.size();) {
    const size_t start = i;
    const char32_t c = next_code_point(text, i);
    line.pieces.push_back(
        {.code = c,
         .byte = start,
         .x = static_cast<float>(line.pieces.size() * static_cast<size_t>(bitmap::kAdvance * s))});
  }
  if (line.pieces.empty()) return line;
  const int n = static_cast<int>(line.pieces.size());
  line.width = (n * bitmap::kAdvance - (bitmap::kAdvance - bitmap::kGlyphWidth)) * s;
  if (style.bold) {
    line.width += 1;
    for (Piece& p : line.pieces) p.thicken = true;
  }
  return line;
}

Line layout(const FontSet& fonts, std::string_view text, TextStyle style) {
  Line line{.metrics = metrics_of(fonts, style), .box_scale = bitmap_scale(style.size)};
  if (fonts.empty()) return layout_bitmap(text, style, std::move(line));
  float pen = 0;
  Piece previous;
  for (size_t i = 0; i < text.size();) {
    const size_t start = i;
    const char32_t c = next_code_point(text, i);
    Piece p{.face = face_for(fonts, c, style.bold), .code = c, .byte = start};
    if (p.face == nullptr) {  // the box, standing on the baseline like a capital
      p.x = pen;
      pen += static_cast<float>(bitmap::kAdvance * line.box_scale);
    } else {
      const float scale = p.face->scale(style.size);
      p.glyph = p.face->glyph(c);
      if (previous.face == p.face)
        pen += scale * static_cast<float>(
                           stbtt_GetGlyphKernAdvance(&p.face->info, previous.glyph, p.glyph));
      p.x = pen;
      int advance = 0, bearing = 0;
      stbtt_GetGlyphHMetrics(&p.face->info, p.glyph, &advance, &bearing);
      pen += scale * static_cast<float>(advance);
      p.thicken = style.bold && !p.face->bold;
      if (p.thicken) pen += 1;
    }
    line.pieces.push_back(p);
    previous = p;
  }
  line.width = static_cast<int>(std::ceil(pen - 1e-3f));
  return line;
}

// ---- Rendering: a line into a coverage mask ------------------------------------------------

// 8-bit coverage of pixels [left, left + width) x [top, top + height) of the line box's
// coordinates (x right from the pen's start, y down from the box's top): 0 none, 255 full.
struct Mask {
  int left = 0, top = 0, width = 0, height = 0;
  std::vector<uint8_t> coverage{};

  void add(int x, int y, uint8_t c) {  // the maximum, so that overlapping glyphs do not darken
    uint8_t& cell = coverage[static_cast<size_t>((y - top) * width + (x - left))];
    cell = std::max(cell, c);
  }
};

// A piece's glyph image: its coverage, w x h, with its top-left at (x, y) of the line box.
struct GlyphImage {
  int x = 0, y = 0, w = 0, h = 0;
  std::vector<uint8_t> coverage{};
};

// The bitmap font's glyph for p.code (the box for most), scaled, standing on the baseline.
GlyphImage bitmap_glyph(const Piece& p, const Line& line) {
  const int s = line.box_scale;
  GlyphImage g{.x = static_cast<int>(p.x),
               .y = line.metrics.ascent - bitmap::kCapHeight * s,
               .w = bitmap::kGlyphWidth * s,
               .h = bitmap::kGlyphHeight * s};
  g.coverage.resize(static_cast<size_t>(g.w * g.h));
  for (int v = 0; v < g.h; ++v)
    for (int u = 0; u < g.w; ++u)
      if (bitmap::glyph_pixel(p.code, u / s, v / s))
        g.coverage[static_cast<size_t>(v * g.w + u)] = 255;
  return g;
}

GlyphImage outline_glyph(const Piece& p, const Line& line, TextStyle style) {
  // The pen's fraction of a pixel shifts the outline, so that spacing stays even.
  const float scale = p.face->scale(style.size);
  const float whole = std::floor(p.x), shift = p.x - whole;
  int x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  stbtt_GetGlyphBitmapBoxSubpixel(&p.face->info, p.glyph, scale, scale, shift, 0, &x0, &y0, &x1,
                                  &y1);
  GlyphImage g{
      .x = static_cast<int>(whole) + x0, .y = line.metrics.ascent + y0, .w = x1 - x0, .h = y1 - y0};
  if (g.w <= 0 || g.h <= 0) return {};  // a space
  g.coverage.resize(static_cast<size_t>(g.w * g.h));
  stbtt_MakeGlyphBitmapSubpixel(&p.face->info, g.coverage.data(), g.w, g.h, g.w, scale, scale,
                                shift, 0, p.glyph);
  return g;
}

// Faux bold: every pixel also covers its right-hand neighbour, one pixel wider in all.
GlyphImage thickened(const GlyphImage& g) {
  GlyphImage wide{.x = g.x, .y = g.y, .w = g.w + 1, .h = g.h};
  wide.coverage.assign(static_cast<size_t>(wide.w * wide.h), 0);
  for (int v = 0; v < g.h; ++v)
    for (int u = 0; u < g.w; ++u) {
      const uint8_t c = g.coverage[static_cast<size_t>(v * g.w + u)];
      for (int k = u; k <= u + 1; ++k) {
        uint8_t& cell = wide.coverage[static_cast<size_t>(v * wide.w + k)];
        cell = std::max(cell, c);
      }
    }
  return wide;
}

GlyphImage rasterize(const Piece& p, const Line& line, TextStyle style) {
  GlyphImage g = p.face == nullptr ? bitmap_glyph(p, line) : outline_glyph(p, line, style);
  return p.thicken && g.w > 0 ? thickened(g) : g;
}

Mask render(const Line& line, TextStyle style) {
  std::vector<GlyphImage> glyphs;
  int x0 = 0, y0 = 0, x1 = line.width, y1 = line.metrics.line_height;
  for (const Piece& p : line.pieces) {
    GlyphImage& g = glyphs.emplace_back(rasterize(p, line, style));
    if (g.w == 0) continue;
    x0 = std::min(x0, g.x);
    y0 = std::min(y0, g.y);
    x1 = std::max(x1, g.x + g.w);
    y1 = std::max(y1, g.y + g.h);
  }
  Mask mask{.left = x0, .top = y0, .width = x1 - x0, .height = y1 - y0};
  mask.coverage.assign(static_cast<size_t>(mask.width * mask.height), 0);
  for (const GlyphImage& g : glyphs)
    for (int v = 0; v < g.h; ++v)
      for (int u = 0; u < g.w; ++u)
        mask.add(g.x + u, g.y + v, g.coverage[static_cast<size_t>(v * g.w + u)]);
  return mask;
}

// Blends colour into image through the mask, each mask pixel (mx, my) landing on place(mx, my).
template <typename Place>
void composite(Image& image, const Mask& mask, Rgb colour, Place place) {
  for (int v = 0; v < mask.height; ++v)
    for (int u = 0; u < mask.width; ++u) {
      const uint8_t c = mask.coverage[static_cast<size_t>(v * mask.width + u)];
      if (c == 0) continue;
      const auto [x, y] = place(mask.left + u, mask.top + v);
      image.blend(x, y, colour, static_cast<float>(c) / 255.0f);
    }
}

}  // namespace

// ---- The interface -----------------------------------------------------------------------

int bitmap_scale(int size) {
  constexpr double kDejaVuCapHeight = 1493.0 / 2048.0;  // OS/2 sCapHeight over unitsPerEm
  return std::max(1, static_cast<int>(std::lround(size * kDejaVuCapHeight / bitmap::kCapHeight)));
}

TextMetrics text_metrics(TextStyle style) {
  return metrics_of(*current_fonts(), style);
}

int text_width(std::string_view text, TextStyle style) {
  return layout(*current_fonts(), text, style).width;
}

void draw_text(Image& image, int x, int y, std::string_view text, Rgb colour, TextStyle style) {
  const Line line = layout(*current_fonts(), text, style);
  if (line.pieces.empty()) return;
  composite(image, render(line, style), colour, [x, y](int u, int v) {
    return std::pair{x + u, y + v};
  });
}

void draw_text_vertical(Image& image, int x, int y, std::string_view text, Rgb colour,
                        TextStyle style) {
  const Line line = layout(*current_fonts(), text, style);
  if (line.pieces.empty()) return;
  // Turning counter-clockwise sends the text's start to the bottom: (u, v) -> (v, W - 1 - u).
  const int w = line.width;
  composite(image, render(line, style), colour, [x, y, w](int u, int v) {
    return std::pair{x + v, y + w - 1 - u};
  });
}

std::string elide(std::string_view text, int max_width, TextStyle style) {
  const std::shared_ptr<const FontSet> fonts = current_fonts();
  const Line line = layout(*fonts, text, style);
  if (line.width <= max_width) return std::string(text);
  const bool has_ellipsis = face_for(*fonts, U'\u2026', style.bold) != nullptr;
  const std::string marker = has_ellipsis ? "\u2026" : "..";
  // The longest run of leading code points that fits with the marker; the pen position of
  // piece k is the width of the k before it (give or take the kerning, which the final
  // measurement settles).
  const int marker_width = layout(*fonts, marker, style).width;
  size_t k = line.pieces.size() - 1;  // not empty: it is too wide
  while (k > 0 &&
         line.pieces[k].x + static_cast<float>(marker_width) > static_cast<float>(max_width))
    --k;
  for (; k > 0; --k) {
    std::string shortened = std::string(text.substr(0, line.pieces[k].byte)) + marker;
    if (layout(*fonts, shortened, style).width <= max_width) return shortened;
  }
  return marker;
}

void use_system_fonts() {
  set_fonts(load_system_fonts());
}

void use_builtin_font() {
  set_fonts(std::make_shared<const FontSet>());
}

void use_font_files(const std::vector<std::string>& paths) {
  auto set = std::make_shared<FontSet>();
  for (const std::string& path : paths) set->regular.push_back(load_face(path, false));
  set_fonts(std::move(set));
}

std::vector<std::string> font_files() {
  const std::shared_ptr<const FontSet> fonts = current_fonts();
  std::vector<std::string> paths;
  for (const auto& face : fonts->regular) paths.push_back(face->path);
  if (fonts->bold) paths.push_back(fonts->bold->path);
  return paths;
}

}  // namespace gf::viz
