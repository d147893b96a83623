// Lesson 07: encoder and decoder.
//
// How do the pieces of lessons 02-06 (attention, masks, heads, the feed-forward network,
// positions) stack up into the model of Figure 1, and how big is it? Four steps answer it: the
// module tree of a toy model, the shapes at every stage of a forward pass (walked by hand
// through the encoder and decoder layers, checked against Transformer::forward, and drawn on
// the arrows of Figure 1), the three uses of attention with where their queries, keys and
// values come from, and the parameter count by formula, checked against the model, for the
// toy and for the paper's base model.
// README.md is the text that walks through this file. Every claim is checked; a failed check
// makes the program exit with 1.
//
// main(), at the end, is the table of contents: it calls the sections in the order of
// README.md, and they are defined above it in the same order.
//
// Shape legend: B batch, S source length, T target length, D d_model, H heads, V vocabulary.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <exception>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "autograd/graph.h"
#include "autograd/ops.h"
#include "autograd/random.h"
#include "autograd/tensor.h"
#include "lessons/lesson.h"
#include "models/transformer.h"
#include "nn/attention.h"
#include "nn/feed_forward.h"
#include "viz/arrow.h"
#include "viz/heatmap.h"
#include "viz/png.h"
#include "viz/text.h"

using namespace gf;
using namespace gf::lessons;

namespace {

// The toy vocabulary: 3 special tokens and 8 words.
const std::vector<std::string> kVocab = {"<pad>", "<s>", "</s>", "the", "cat", "sat",
                                         "on",    "a",   "mat",  "dog", "ran"};

// Sentences as ids and back, and shapes as text; defined below the sections.
IndexTensor batch_of(const std::vector<std::vector<std::string>>& sentences);  // [B, L], padded
std::vector<std::string> words_of(const IndexTensor& ids, int64_t row);
std::string shape_of(const Tensor& t);  // "[2, 7, 16]"

// ---- 1. The stacks assembled ----

// The module a parameter belongs to: its name up to the sub-layer ("encoder.layers.0.ffn"),
// or the whole name without ".weight" for top-level tables ("embed").
std::string module_of(const std::string& name) {
  const size_t layers = name.find("layers.");
  if (layers == std::string::npos) return name.substr(0, name.rfind('.'));
  const size_t after_index = name.find('.', layers + 7);  // the dot after the layer number
  return name.substr(0, name.find('.', after_index + 1));
}

void stacks_assembled(const Transformer& model, Checks& check) {
  banner("1. The stacks assembled");
  // [snippet: module-tree]
  struct Group {
    std::vector<std::string> shapes;
    int64_t count = 0;
  };
  std::vector<std::string> order;  // first-seen order, which is registration order
  std::map<std::string, Group> groups;
  for (const auto& [name, tensor] : model.named_parameters()) {
    const std::string module = module_of(name);
    if (!groups.contains(module)) order.push_back(module);
    groups[module].shapes.push_back(shape_of(tensor));
    groups[module].count += tensor.numel();
  }
  // [/snippet]
  fmt::print("  {:<28} {:>7}  {}\n", "module", "params", "parameter shapes");
  int64_t total = 0;
  for (const std::string& module : order) {
    const Group& g = groups[module];
    std::string shapes;
    for (size_t i = 0; i < g.shapes.size(); ++i) shapes += (i ? " " : "") + g.shapes[i];
    fmt::print("  {:<28} {:>7}  {}\n", module, g.count, shapes);
    total += g.count;
  }
  fmt::print("  {:<28} {:>7}\n", "total", total);

  const auto has = [&](const std::string& m) {
    return groups.contains(m);
  };
  check(total == model.parameter_count(),
        fmt::format("the groups add up to model.parameter_count() = {}", total));
  check(has("encoder.layers.1.self_attn") && has("encoder.layers.1.ffn") &&
            !has("encoder.layers.1.cross_attn") && has("decoder.layers.1.cross_attn") &&
            has("decoder.layers.1.norm3"),
        "an encoder layer has 2 sub-layers (self_attn, ffn), a decoder layer 3 "
        "(self_attn, cross_attn, ffn), each with its LayerNorm");
  check(has("embed") && !has("generator") && !has("src_embed"),
        "tied: one embedding table [V, D] and no separate generator (§3.4)");
}

// ---- 2. Shapes through the model ----

struct Batch {
  IndexTensor src, tgt_in;
};

// One decoder layer written out (defined below shapes_through, which uses it).
Tensor decoder_layer_by_hand(DecoderLayer& layer, const Tensor& y, const Tensor& memory,
                             const Tensor& src_mask, const Tensor& tgt_mask);

// The shapes of the walk, which the picture of Figure 1 writes on its arrows.
struct WalkShapes {
  std::string src, src_embedded, encoder_layer, memory, src_mask;
  std::string tgt_in, tgt_embedded, decoder_layer, decoder_out, tgt_mask, logits, probs;
};

WalkShapes shapes_through(Transformer& model, const Batch& batch, Checks& check) {
  banner("2. Shapes through the model");
  NoGrad no_grad;
  const TransformerConfig& c = model.config;
  const IndexTensor& src = batch.src;
  const IndexTensor& tgt_in = batch.tgt_in;
  const nn::PositionalEncoding positions(c.max_len, c.d_model);
  const float scale = std::sqrt(static_cast<float>(c.d_model));
  std::vector<std::string> walked;  // every stage's shape, in order
  const auto stage = [&walked](const std::string& what, const std::string& shape) {
    fmt::print("  {:<44} {}\n", what, shape);
    walked.push_back(shape);
  };

  // [snippet: stages]
  // Encoder: ids [B, S] -> embeddings * sqrt(D) + positions [B, S, D] -> N layers -> memory
  const Tensor src_mask = nn::padding_mask(src, c.pad_id);  // [B, 1, 1, S], 1 = <pad>
  Tensor x = model.embed->forward(src) * scale + positions.rows(0, src.shape()[1]);
  stage("x = embed(src) * sqrt(D) + PE", shape_of(x));
  for (size_t i = 0; i < model.encoder.layers.size(); ++i) {
    x = model.encoder.layers[i]->forward(x, src_mask);
    stage(fmt::format("x = encoder layer {} (x)", i + 1), shape_of(x));  // layers[0] is layer 1
  }
  const Tensor memory = x;  // what every decoder layer's cross-attention reads

  // Decoder: ids [B, T] -> [B, T, D] -> N layers (each also reads memory) -> logits [B, T, V]
  const Tensor tgt_mask = nn::target_mask(tgt_in, c.pad_id);  // [B, 1, T, T]: future or <pad>
  Tensor y = model.embed->forward(tgt_in) * scale + positions.rows(0, tgt_in.shape()[1]);
  stage("y = embed(tgt_in) * sqrt(D) + PE", shape_of(y));
  for (size_t i = 0; i < model.decoder.layers.size(); ++i) {
    y = decoder_layer_by_hand(*model.decoder.layers[i], y, memory, src_mask, tgt_mask);
    stage(fmt::format("y = decoder layer {} (y, memory)", i + 1), shape_of(y));
  }
  const Tensor logits = linear(y, model.embed->weight);  // y E^T: the same table, tied (§3.4)
  stage("logits = y E^T", shape_of(logits));
  const Tensor probs = softmax(logits);  // over the vocabulary: the next token's distribution
  stage("probabilities = softmax(logits)", shape_of(probs));
  // [/snippet]
  fmt::print("\n  masks: src_mask {}, tgt_mask {}\n\n", shape_of(src_mask), shape_of(tgt_mask));

  const int64_t b = src.shape()[0], s = src.shape()[1], t = tgt_in.shape()[1];
  const Tensor library_memory = model.encode(src, src_mask);
  const Tensor library_out = model.decode(tgt_in, library_memory, src_mask, tgt_mask);
  const Tensor library_logits = model.forward(src, tgt_in);
  const float d_memory = max_abs_diff(memory, library_memory);
  const float d_decoder = max_abs_diff(y, library_out);
  const float d_logits = max_abs_diff(logits, library_logits);
  check(memory.shape() == Shape({b, s, c.d_model}) && y.shape() == Shape({b, t, c.d_model}) &&
            logits.shape() == Shape({b, t, c.vocab_size}),
        fmt::format("memory is [B, S, D] = {}, the decoder output [B, T, D] = {}, the logits "
                    "[B, T, V] = {}",
                    shape_of(memory), shape_of(y), shape_of(logits)));
  check(d_memory <= 1e-5f, fmt::format("the walk through the encoder layers equals "
                                       "model.encode (max diff {:.1e})",
                                       d_memory));
  check(d_decoder <= 1e-5f, fmt::format("the decoder layers written out equal model.decode "
                                        "(max diff {:.1e})",
                                        d_decoder));
  check(d_logits <= 1e-5f,
        fmt::format("y E^T equals model.forward(src, tgt_in) (max diff {:.1e})", d_logits));

  const size_t n_enc = model.encoder.layers.size();
  return {.src = fmt::format("{}", src.shape()),
          .src_embedded = walked[0],
          .encoder_layer = walked[1],
          .memory = shape_of(memory),
          .src_mask = shape_of(src_mask),
          .tgt_in = fmt::format("{}", tgt_in.shape()),
          .tgt_embedded = walked[n_enc + 1],
          .decoder_layer = walked[n_enc + 2],
          .decoder_out = shape_of(y),
          .tgt_mask = shape_of(tgt_mask),
          .logits = shape_of(logits),
          .probs = shape_of(probs)};
}

// One decoder layer written out: the three sub-layers, each wrapped as LayerNorm(x + f(x)).
Tensor decoder_layer_by_hand(DecoderLayer& layer, const Tensor& y, const Tensor& memory,
                             const Tensor& src_mask, const Tensor& tgt_mask) {
  // [snippet: decoder-layer]
  // 1. masked self-attention: queries, keys and values all from y       [B, T, D]
  Tensor x = layer.norm1.forward(y + layer.self_attn.forward(y, y, tgt_mask));
  // 2. encoder-decoder attention: queries from x, keys and values from memory [B, S, D]
  x = layer.norm2->forward(x + layer.cross_attn->forward(x, memory, src_mask));
  // 3. the position-wise feed-forward network                            [B, T, D]
  return layer.norm3.forward(x + layer.ffn.forward(x));
  // [/snippet]
}

// ---- Figure 1, drawn with the walk's shapes on its arrows ----

// The paper's colours: attention orange, add & norm yellow, feed-forward blue, embeddings
// pink, the output linear layer purple and the softmax green.
constexpr viz::Rgb kAttention{252, 224, 182}, kAddNorm{243, 245, 196}, kFeedForward{194, 232, 247},
    kEmbedding{252, 217, 217}, kLinear{220, 223, 240}, kSoftmax{204, 235, 200};
constexpr viz::Rgb kLayerBox{236, 236, 236}, kInk{40, 40, 40}, kShapeInk{20, 90, 170},
    kResidual{140, 140, 140};
constexpr viz::TextStyle kLabel{.size = 14}, kNote{.size = 12},
    kShapeText{.size = 13, .bold = true};
constexpr int kBoxWidth = 270, kFramePad = 22, kGap = 34;  // kGap: an arrow between boxes

// One element of a column of Figure 1, listed from the bottom up. An arrow runs from the
// element below it to the one above it (through a frame's edge), with `text` as its label.
struct Item {
  enum Kind { Text, Arrow, Box, Plus, FrameBottom, FrameTop } kind = Text;
  std::string text{}, note{};
  viz::Rgb fill = viz::kWhite;
  int gap = kGap;         // an arrow's length
  bool residual = false;  // an add & norm box: the residual connection joins it
  int top = 0, bottom = 0;

  int height() const {
    switch (kind) {
      case Text:
        return viz::text_metrics(kLabel).line_height;
      case Arrow:
        return gap;
      case Box:
        return note.empty() ? 30 : 46;
      case Plus:
        return 24;
      default:
        return kFramePad;
    }
  }
};

// Stacks the items upwards from y = bottom, setting their top and bottom.
void stack_up(std::vector<Item>& items, int bottom) {
  for (Item& item : items) {
    item.bottom = bottom;
    item.top = bottom - item.height();
    bottom = item.top;
  }
}

// A column of the figure: the inputs, embedding and positional encoding, then one layer of
// sub-layers in a frame (each followed by add & norm), then whatever goes above.
struct Column {
  int cx, side;  // its centre, and the side of its residual lines and notes (-1 left, +1 right)
  std::vector<Item> items;
};

std::vector<Item> inputs(const std::string& tokens, const std::string& ids,
                         const std::string& embedded, const std::string& table) {
  return {{.kind = Item::Text, .text = tokens},
          {.kind = Item::Arrow, .text = ids, .gap = 40},
          {.kind = Item::Box, .text = "embedding × √d_model", .note = table, .fill = kEmbedding},
          {.kind = Item::Arrow, .text = embedded, .gap = 30},
          {.kind = Item::Plus, .text = "positional encoding"},
          {.kind = Item::Arrow, .text = embedded, .gap = 40},
          {.kind = Item::FrameBottom}};
}

// A sub-layer box and its add & norm, with `shape` on the arrows between them.
void add_sub_layer(std::vector<Item>& items, const std::string& shape, viz::Rgb fill,
                   const std::string& label, const std::string& note, int gap_below = kGap) {
  if (items.back().kind != Item::FrameBottom)
    items.push_back({.kind = Item::Arrow, .text = shape, .gap = gap_below});
  items.push_back({.kind = Item::Box, .text = label, .note = note, .fill = fill});
  items.push_back({.kind = Item::Arrow, .text = shape});
  items.push_back({.kind = Item::Box, .text = "add & norm", .fill = kAddNorm, .residual = true});
}

// Text whose capitals are centred on y_middle, starting at x (align 1) or ending there (-1).
void draw_label(viz::Image& image, int x, int y_middle, const std::string& text,
                viz::TextStyle style, viz::Rgb colour, int align) {
  const int w = viz::text_width(text, style);
  viz::draw_text(image, align < 0 ? x - w : x, y_middle - viz::text_metrics(style).cap_middle(),
                 text, colour, style);
}

// The frame around the layer, with "N ×" beside it.
void draw_frame(viz::Image& image, const Column& c, int top, int bottom, int64_t n) {
  const int left = c.cx - kBoxWidth / 2 - 44, width = kBoxWidth + 88;
  image.fill_rect(left, top, width, bottom - top, kLayerBox);
  image.stroke_rect(left, top, width, bottom - top, kInk);
  const int x = c.side < 0 ? left - 12 : left + width + 12, mid = (top + bottom) / 2;
  draw_label(image, x, mid - 22, "N ×", {.size = 22, .bold = true}, kInk, c.side);
  draw_label(image, x, mid + 8, fmt::format("N = {} here,", n), kNote, kInk, c.side);
  draw_label(image, x, mid + 26, "6 in the paper", kNote, kInk, c.side);
}

void draw_box(viz::Image& image, int cx, const Item& item) {
  const int left = cx - kBoxWidth / 2, h = item.bottom - item.top;
  image.fill_rect(left, item.top, kBoxWidth, h, item.fill);
  image.stroke_rect(left, item.top, kBoxWidth, h, kInk);
  if (item.note.empty()) {
    draw_label(image, cx - viz::text_width(item.text, kLabel) / 2, item.top + h / 2, item.text,
               kLabel, kInk, 1);
    return;
  }
  draw_label(image, cx - viz::text_width(item.text, kLabel) / 2, item.top + 15, item.text, kLabel,
             kInk, 1);
  draw_label(image, cx - viz::text_width(item.note, kNote) / 2, item.top + 32, item.note, kNote,
             kInk, 1);
}

void arrow(viz::Image& image, float x0, float y0, float x1, float y1, viz::Rgb colour) {
  viz::draw_arrow(image, x0, y0, x1, y1, colour,
                  {.width = 2.0f, .head_length = 9.0f, .head_width = 9.0f});
}

// The residual connection around the sub-layer below add & norm box i: from the arrow into
// the sub-layer, out to the side, up, and into the side of the add & norm box.
void draw_residual(viz::Image& image, const Column& c, size_t i) {
  const Item& norm = c.items[i];
  const Item& sub = c.items[i - 2];
  const float from = static_cast<float>(sub.bottom + 12);
  const float to = static_cast<float>((norm.top + norm.bottom) / 2);
  const float edge = static_cast<float>(c.cx + c.side * kBoxWidth / 2);
  const float out = edge + static_cast<float>(c.side * 24);
  viz::draw_line(image, static_cast<float>(c.cx), from, out, from, kResidual);
  viz::draw_line(image, out, from, out, to, kResidual);
  arrow(image, out, to, edge, to, kResidual);
}

// The "+" that adds the positional encoding, which comes in from the side.
void draw_plus(viz::Image& image, const Column& c, const Item& item) {
  const int mid = (item.top + item.bottom) / 2;
  image.stroke_rect(c.cx - 12, item.top, 24, 24, kInk);
  draw_label(image, c.cx - viz::text_width("+", kLabel) / 2, mid, "+", kLabel, kInk, 1);
  const int start = c.cx + c.side * 44;
  arrow(image, static_cast<float>(start), static_cast<float>(mid),
        static_cast<float>(c.cx + c.side * 13), static_cast<float>(mid), kInk);
  draw_label(image, start + c.side * 6, mid, item.text, kNote, kInk, c.side);
}

// Arrow item i: from the element below it to the one above it, through a frame's edge, with
// the shape on the side away from the residual lines.
void draw_up_arrow(viz::Image& image, const Column& c, size_t i) {
  const std::vector<Item>& items = c.items;
  size_t below = i - 1, above = i + 1;
  while (items[below].kind >= Item::FrameBottom) --below;
  while (above + 1 < items.size() && items[above].kind >= Item::FrameBottom) ++above;
  const int to = above < items.size() ? items[above].bottom : items[i].top;
  const int from = items[below].kind == Item::Text ? items[below].top - 2 : items[below].top;
  const float x = static_cast<float>(c.cx);
  arrow(image, x, static_cast<float>(from), x, static_cast<float>(to), kInk);
  draw_label(image, c.cx - c.side * 8, (items[i].top + items[i].bottom) / 2, items[i].text,
             kShapeText, kShapeInk, -c.side);
}

void draw_column(viz::Image& image, const Column& c, int64_t n) {
  const auto frame_edge = [&](Item::Kind kind) {
    return *std::find_if(c.items.begin(), c.items.end(),
                         [&](const Item& item) { return item.kind == kind; });
  };
  // The frame first, so that the boxes lie on it.
  draw_frame(image, c, frame_edge(Item::FrameTop).top, frame_edge(Item::FrameBottom).bottom, n);
  for (size_t i = 0; i < c.items.size(); ++i) {
    const Item& item = c.items[i];
    switch (item.kind) {
      case Item::Box:
        draw_box(image, c.cx, item);
        if (item.residual) draw_residual(image, c, i);
        break;
      case Item::Text:
        draw_label(image, c.cx - viz::text_width(item.text, kLabel) / 2,
                   (item.top + item.bottom) / 2, item.text, kLabel, kInk, 1);
        break;
      case Item::Plus:
        draw_plus(image, c, item);
        break;
      case Item::Arrow:
        draw_up_arrow(image, c, i);
        break;
      default:
        break;
    }
  }
}

// The decoder's column, with the gap under the cross-attention set so that the memory can
// come in from the encoder below it.
Column decoder_column(const WalkShapes& w, const TransformerConfig& c, const std::string& table,
                      int cross_gap) {
  Column dec{
      .cx = 820,
      .side = 1,
      .items = inputs("target tokens, shifted right: tgt_in", w.tgt_in, w.tgt_embedded, table)};
  add_sub_layer(dec.items, w.decoder_layer, kAttention, "masked multi-head self-attention",
                fmt::format("h = {} heads, mask {}: no future", c.heads, w.tgt_mask));
  add_sub_layer(dec.items, w.decoder_layer, kAttention, "cross-attention",
                "(encoder-decoder attention)", cross_gap);
  add_sub_layer(dec.items, w.decoder_layer, kFeedForward, "feed-forward",
                fmt::format("{} → {} → {}, ReLU", c.d_model, c.d_ff, c.d_model));
  dec.items.push_back({.kind = Item::FrameTop});
  dec.items.push_back({.kind = Item::Arrow, .text = w.decoder_out, .gap = 40});
  dec.items.push_back({.kind = Item::Box,
                       .text = "linear: y Eᵀ",
                       .note = "E is the embedding (tied, §3.4)",
                       .fill = kLinear});
  dec.items.push_back({.kind = Item::Arrow, .text = w.logits + " logits"});
  dec.items.push_back({.kind = Item::Box, .text = "softmax", .fill = kSoftmax});
  dec.items.push_back({.kind = Item::Arrow, .text = w.probs});
  dec.items.push_back({.kind = Item::Text, .text = "output probabilities (next token)"});
  return dec;
}

const Item& item_named(const Column& c, const std::string& text) {
  return *std::find_if(c.items.begin(), c.items.end(),
                       [&](const Item& item) { return item.text == text; });
}

// The memory's way from the top of the encoder to the cross-attention's keys and values.
void draw_memory(viz::Image& image, const Column& enc, const Column& dec, const WalkShapes& w) {
  const Item& top = enc.items.back();
  const Item& cross = item_named(dec, "cross-attention");
  const float x_enc = static_cast<float>(enc.cx), x_kv = static_cast<float>(dec.cx - 80);
  const float y_turn = static_cast<float>(cross.bottom + 26);
  viz::draw_line(image, x_enc, static_cast<float>(top.top), x_enc, y_turn, kInk);
  viz::draw_line(image, x_enc, y_turn, x_kv, y_turn, kInk);
  arrow(image, x_kv, y_turn, x_kv, static_cast<float>(cross.bottom), kInk);
  draw_label(image, enc.cx + 8, (top.top + static_cast<int>(y_turn)) / 2 + 8, "memory " + w.memory,
             kShapeText, kShapeInk, 1);
  draw_label(image, static_cast<int>(x_kv) - 8, static_cast<int>(y_turn) - 13, "K, V", kShapeText,
             kShapeInk, -1);
  draw_label(image, dec.cx - 8, cross.bottom + 12, "Q", kShapeText, kShapeInk, -1);
}

// The paper's Figure 1 for the toy model, with the shapes of section 2's walk on its arrows:
// the encoder on the left, the decoder on the right, inputs at the bottom.
void draw_figure1(const WalkShapes& w, const TransformerConfig& c, const Batch& batch,
                  const std::string& out_dir) {
  const std::string table =
      fmt::format("a table of V = {} rows of d_model = {}", c.vocab_size, c.d_model);
  Column enc{
      .cx = 320, .side = -1, .items = inputs("source tokens: src", w.src, w.src_embedded, table)};
  add_sub_layer(enc.items, w.encoder_layer, kAttention, "multi-head self-attention",
                fmt::format("h = {} heads, mask {}: no <pad>", c.heads, w.src_mask));
  add_sub_layer(enc.items, w.encoder_layer, kFeedForward, "feed-forward",
                fmt::format("{} → {} → {}, ReLU", c.d_model, c.d_ff, c.d_model));
  enc.items.push_back({.kind = Item::FrameTop});
  stack_up(enc.items, 0);

  // Lay the decoder out once to see where its cross-attention lands, then widen the gap
  // below it so that the memory arrives from below, 70 pixels above the encoder's top.
  Column dec = decoder_column(w, c, table, kGap);
  stack_up(dec.items, 0);
  const int raise = item_named(dec, "cross-attention").bottom - (enc.items.back().top - 70);
  dec = decoder_column(w, c, table, kGap + std::max(raise, 0));
  stack_up(dec.items, 0);

  const int title_height = 70, margin = 16;
  const int height = title_height - dec.items.back().top + margin;
  stack_up(enc.items, height - margin);
  stack_up(dec.items, height - margin);
  viz::Image image(1120, height);
  draw_column(image, enc, c.encoder_layers);
  draw_column(image, dec, c.decoder_layers);
  draw_memory(image, enc, dec, w);
  draw_label(image, 20, 22,
             "Figure 1 of the paper, for the toy model: the encoder (left) and the "
             "decoder (right)",
             {.size = 18, .bold = true}, kInk, 1);
  draw_label(image, 20, 48,
             fmt::format("shapes from section 2's walk: B = {} sentences, S = {} source and "
                         "T = {} target tokens, d_model = {}, V = {} tokens in the vocabulary",
                         batch.src.shape()[0], batch.src.shape()[1], batch.tgt_in.shape()[1],
                         c.d_model, c.vocab_size),
             kLabel, kInk, 1);
  const std::string path = out_dir + "/figure1.png";
  viz::write_png(image, path);
  fmt::print("  wrote {}\n\n", path);
}

// ---- 3. The three uses of attention ----

// One head's [rows, cols] probabilities for batch row b out of attention [B, H, rows, cols].
Tensor one_map(const Tensor& probs, int64_t b, int64_t head) {
  const Tensor m = slice(slice(probs, 0, b, b + 1), 1, head, head + 1);
  return reshape(m, {probs.dim(2), probs.dim(3)});
}

// The claims about the three uses, measured over every layer, batch row, head and query.
struct AttentionExtremes {
  float above_diagonal = 0.0f;  // the largest weight on a later position (decoder self)
  float on_pad = 0.0f;          // the largest weight on a <pad> key
  float worst_row_sum = 0.0f;   // the largest |row sum - 1|
};

AttentionExtremes scan_attention(const Transformer& model, const Batch& batch,
                                 const std::vector<Tensor>& enc_self,
                                 const std::vector<Tensor>& dec_self,
                                 const std::vector<Tensor>& cross) {
  const IndexTensor& src = batch.src;
  const IndexTensor& tgt = batch.tgt_in;
  const int64_t bsz = src.shape()[0];
  const int64_t heads = model.config.heads;
  float above_diagonal = 0.0f, on_pad = 0.0f, worst_row_sum = 0.0f;
  const auto scan = [&](const std::vector<Tensor>& maps, const IndexTensor& keys, bool causal) {
    for (const Tensor& p : maps) {
      const int64_t rows = p.dim(2), cols = p.dim(3);
      for (int64_t b = 0; b < bsz; ++b)
        for (int64_t h = 0; h < heads; ++h)
          for (int64_t i = 0; i < rows; ++i) {
            const float* row = p.data() + ((b * heads + h) * rows + i) * cols;
            float total = 0.0f;
            for (int64_t j = 0; j < cols; ++j) {
              total += row[j];
              if (causal && j > i) above_diagonal = std::max(above_diagonal, row[j]);
              if (keys.data()[b * cols + j] == model.config.pad_id)
                on_pad = std::max(on_pad, row[j]);
            }
            worst_row_sum = std::max(worst_row_sum, std::abs(total - 1.0f));
          }
    }
  };
  scan(enc_self, src, false);
  scan(cross, src, false);
  scan(dec_self, tgt, true);
  fmt::print(
      "\n  over all layers, heads, rows: largest weight above the diagonal {}, on a "
      "<pad> key {}, largest |row sum - 1| {:.1e}\n\n",
      above_diagonal, on_pad, worst_row_sum);

  return {.above_diagonal = above_diagonal, .on_pad = on_pad, .worst_row_sum = worst_row_sum};
}

// The picture: the three maps of head 1 in the last layer, for each sentence of the batch.
void draw_three_uses(const Batch& batch, const std::vector<Tensor>& enc_self,
                     const std::vector<Tensor>& dec_self, const std::vector<Tensor>& cross,
                     const std::string& out_dir) {
  const IndexTensor& src = batch.src;
  const IndexTensor& tgt = batch.tgt_in;
  const int64_t bsz = src.shape()[0];
  std::vector<viz::Image> panels;
  for (int64_t b = 0; b < bsz; ++b) {
    const std::vector<std::string> s_words = words_of(src, b), t_words = words_of(tgt, b);
    const auto draw = [&](const Tensor& probs, const std::string& title,
                          const std::vector<std::string>& rows,
                          const std::vector<std::string>& cols, const std::string& row_axis,
                          const std::string& col_axis, bool bar) {
      panels.push_back(viz::heatmap(one_map(probs, b, 0), {.title = title,
                                                           .row_labels = rows,
                                                           .col_labels = cols,
                                                           .row_axis = row_axis,
                                                           .col_axis = col_axis,
                                                           .value_label = "weight",
                                                           .cell_size = 24,
                                                           .colour_bar = bar}));
    };
    draw(enc_self.back(), "encoder self: Q, K, V = source", s_words, s_words, "query (source)",
         "key (source)", false);
    draw(dec_self.back(), "decoder self: masked", t_words, t_words, "query (target)",
         "key (target)", false);
    draw(cross.back(), "cross: Q = target, K, V = source", t_words, s_words, "query (target)",
         "key (source)", true);
  }
  const std::string path = out_dir + "/three_attentions.png";
  viz::write_png(viz::grid(panels, 3,
                           "three uses of attention, one row per sentence "
                           "(untrained, last layer, head 1)"),
                 path);
  fmt::print("  wrote {}\n\n", path);
}

// Cross-attention by hand: queries from the decoder, keys and values from the memory.
void keys_set_the_columns(Transformer& model, const Batch& batch, Checks& check) {
  const IndexTensor& src = batch.src;
  const IndexTensor& tgt = batch.tgt_in;
  const int64_t bsz = src.shape()[0], s_len = src.shape()[1], t_len = tgt.shape()[1];
  const int64_t heads = model.config.heads;
  const Tensor src_mask = nn::padding_mask(src, model.config.pad_id);
  const Tensor memory = model.encode(src, src_mask);
  DecoderLayer& first = *model.decoder.layers[0];
  const Tensor y0 = model.decode(tgt, memory, src_mask, nn::target_mask(tgt, 0));  // any [B,T,D]
  first.cross_attn->record_attention = true;
  first.cross_attn->forward(y0, memory, src_mask);
  const Tensor with_memory = first.cross_attn->last_attention;
  first.cross_attn->forward(y0, y0, nn::padding_mask(tgt, model.config.pad_id));
  const Tensor with_itself = first.cross_attn->last_attention;
  first.cross_attn->record_attention = false;
  check(with_memory.shape() == Shape({bsz, heads, t_len, s_len}) &&
            with_itself.shape() == Shape({bsz, heads, t_len, t_len}),
        fmt::format("the same module gives {} with memory as keys and {} with the target as "
                    "keys: the key source sets the columns",
                    shape_of(with_memory), shape_of(with_itself)));
}

void three_uses(Transformer& model, const Batch& batch, const std::string& out_dir, Checks& check) {
  banner("3. The three uses of attention");
  NoGrad no_grad;
  // [snippet: record]
  model.record_attention(true);
  model.forward(batch.src, batch.tgt_in);  // every attention module keeps its probabilities
  const std::vector<Tensor> enc_self = model.attention(AttentionKind::EncoderSelf);
  const std::vector<Tensor> dec_self = model.attention(AttentionKind::DecoderSelf);
  const std::vector<Tensor> cross = model.attention(AttentionKind::Cross);
  model.record_attention(false);
  // [/snippet]

  fmt::print("  {:<18} {:<22} {:<22} {:<18} {}\n", "use", "queries from", "keys, values from",
             "mask", "probabilities");
  fmt::print("  {:<18} {:<22} {:<22} {:<18} {}\n", "encoder self", "encoder layer below",
             "encoder layer below", "source <pad>", shape_of(enc_self[0]) + "  [B,H,S,S]");
  fmt::print("  {:<18} {:<22} {:<22} {:<18} {}\n", "decoder self", "decoder layer below",
             "decoder layer below", "future + <pad>", shape_of(dec_self[0]) + "  [B,H,T,T]");
  fmt::print("  {:<18} {:<22} {:<22} {:<18} {}\n", "encoder-decoder", "decoder sub-layer 1",
             "encoder output", "source <pad>", shape_of(cross[0]) + "  [B,H,T,S]");

  const AttentionExtremes extremes = scan_attention(model, batch, enc_self, dec_self, cross);
  draw_three_uses(batch, enc_self, dec_self, cross, out_dir);

  const int64_t bsz = batch.src.shape()[0], s_len = batch.src.shape()[1],
                t_len = batch.tgt_in.shape()[1];
  const int64_t heads = model.config.heads;
  bool shapes_ok = enc_self.size() == model.encoder.layers.size() &&
                   dec_self.size() == model.decoder.layers.size() &&
                   cross.size() == model.decoder.layers.size();
  for (size_t i = 0; i < enc_self.size(); ++i)
    shapes_ok = shapes_ok && enc_self[i].shape() == Shape({bsz, heads, s_len, s_len});
  for (size_t i = 0; i < cross.size(); ++i)
    shapes_ok = shapes_ok && dec_self[i].shape() == Shape({bsz, heads, t_len, t_len}) &&
                cross[i].shape() == Shape({bsz, heads, t_len, s_len});
  check(shapes_ok,
        "one map per layer: encoder self [B,H,S,S], decoder self [B,H,T,T], "
        "cross [B,H,T,S]");
  check(extremes.above_diagonal == 0.0f,
        "decoder self-attention is lower-triangular: no weight on a later position");
  check(extremes.on_pad == 0.0f, "no query in any of the three puts weight on a <pad> key");
  check(extremes.worst_row_sum <= 1e-5f,
        "every row sums to 1: over the source (encoder self, cross) or the target prefix");

  keys_set_the_columns(model, batch, check);
}

// ---- 4. Parameter counts ----

struct Sizes {
  int64_t embedding, attention, ffn, norm, encoder_layer, decoder_layer, encoder, decoder, total;
};

// [snippet: formula]
Sizes count_by_formula(const TransformerConfig& c) {
  const int64_t V = c.vocab_size, D = c.d_model, F = c.d_ff;
  Sizes n{};
  n.embedding = V * D;            // one table: source, target and pre-softmax (tied, §3.4)
  n.attention = 4 * (D * D + D);  // W^Q, W^K, W^V, W^O, each D x D plus a bias of D
  n.ffn = D * F + F + F * D + D;  // W_1 [D, F], b_1, W_2 [F, D], b_2 (eq. 2)
  n.norm = 2 * D;                 // LayerNorm's gain and bias
  n.encoder_layer = n.attention + n.ffn + 2 * n.norm;
  n.decoder_layer = 2 * n.attention + n.ffn + 3 * n.norm;  // + encoder-decoder attention
  n.encoder = c.encoder_layers * n.encoder_layer;
  n.decoder = c.decoder_layers * n.decoder_layer;
  n.total = n.embedding + n.encoder + n.decoder;  // positions are sinusoids: no parameters
  return n;
}
// [/snippet]

// The model's own count of the parameters whose names start with prefix.
int64_t counted(const Transformer& model, const std::string& prefix) {
  int64_t n = 0;
  for (const auto& [name, tensor] : model.named_parameters())
    if (name.starts_with(prefix)) n += tensor.numel();
  return n;
}

std::string millions(int64_t n) {
  return fmt::format("{:.2f}M", static_cast<double>(n) / 1e6);
}

// The formula's counts side by side for the toy, the base and the big model, and the paper's.
void print_counts(const TransformerConfig& toy, const TransformerConfig& base,
                  const TransformerConfig& big, const Sizes& t, const Sizes& b, const Sizes& g) {
  fmt::print("  {:<32} {:>10} {:>12} {:>12}\n", "", "toy", "base", "big");
  const auto row = [](const char* what, int64_t a, int64_t c, int64_t d) {
    fmt::print("  {:<32} {:>10} {:>12} {:>12}\n", what, a, c, d);
  };
  const TransformerConfig& c = toy;
  row("V (vocabulary)", c.vocab_size, base.vocab_size, big.vocab_size);
  row("D (d_model)", c.d_model, base.d_model, big.d_model);
  row("d_ff", c.d_ff, base.d_ff, big.d_ff);
  row("h (heads)", c.heads, base.heads, big.heads);
  row("N (layers per stack)", c.encoder_layers, base.encoder_layers, big.encoder_layers);
  row("embedding V D", t.embedding, b.embedding, g.embedding);
  row("attention 4 (D^2 + D)", t.attention, b.attention, g.attention);
  row("feed-forward 2 D d_ff + d_ff + D", t.ffn, b.ffn, g.ffn);
  row("LayerNorm 2 D", t.norm, b.norm, g.norm);
  row("encoder layer", t.encoder_layer, b.encoder_layer, g.encoder_layer);
  row("decoder layer", t.decoder_layer, b.decoder_layer, g.decoder_layer);
  row("encoder (N layers)", t.encoder, b.encoder, g.encoder);
  row("decoder (N layers)", t.decoder, b.decoder, g.decoder);
  row("total", t.total, b.total, g.total);
  fmt::print("  {:<32} {:>10} {:>12} {:>12}\n", "in millions", millions(t.total), millions(b.total),
             millions(g.total));
  fmt::print("  {:<32} {:>10} {:>12} {:>12}\n", "the paper (Table 3)", "", "65M", "213M");
}

// Where the parameters live: the share of each component, toy vs base, in percent, printed and
// drawn. Rows: embedding, encoder self-attention and feed-forward, decoder self-attention,
// cross-attention and feed-forward, all LayerNorms.
struct Shares {
  std::vector<float> toy, base;
};

Shares where_parameters_live(const Sizes& t, const TransformerConfig& toy_config, const Sizes& b,
                             const TransformerConfig& base, const std::string& out_dir) {
  const auto shares = [](const Sizes& n, const TransformerConfig& config) {
    const double total = static_cast<double>(n.total);
    const auto pc = [&](int64_t x) {
      return static_cast<float>(100.0 * static_cast<double>(x) / total);
    };
    const int64_t ne = config.encoder_layers, nd = config.decoder_layers;
    return std::vector<float>{pc(n.embedding),
                              pc(ne * n.attention),
                              pc(ne * n.ffn),
                              pc(nd * n.attention),
                              pc(nd * n.attention),
                              pc(nd * n.ffn),
                              pc((2 * ne + 3 * nd) * n.norm)};
  };
  const std::vector<std::string> parts = {"embedding (tied)",        "encoder self-attention",
                                          "encoder feed-forward",    "decoder self-attention",
                                          "decoder cross-attention", "decoder feed-forward",
                                          "LayerNorms (all)"};
  const std::vector<float> s_toy = shares(t, toy_config), s_base = shares(b, base);
  std::vector<float> values;
  fmt::print("\n  {:<26} {:>8} {:>8}\n", "share of the parameters", "toy", "base");
  for (size_t i = 0; i < parts.size(); ++i) {
    fmt::print("  {:<26} {:>7.2f}% {:>7.2f}%\n", parts[i], s_toy[i], s_base[i]);
    values.push_back(s_toy[i]);
    values.push_back(s_base[i]);
  }
  const std::string path = out_dir + "/parameters.png";
  viz::write_png(viz::heatmap(values, static_cast<int64_t>(parts.size()), 2,
                              {.title = "where the parameters live (% of the total)",
                               .row_labels = {"embed", "enc self", "enc FFN", "dec self",
                                              "dec cross", "dec FFN", "LayerNorm"},
                               .col_labels = {"toy", "base"},
                               .row_axis = "component",
                               .col_axis = "model",
                               .value_label = "percent",
                               .vmin = 0.0f,
                               .vmax = 40.0f,
                               .cell_size = 64,
                               .show_values = true}),
                 path);
  fmt::print("\n  wrote {}\n", path);
  return {.toy = s_toy, .base = s_base};
}

void parameter_counts(const Transformer& toy, bool quick, uint64_t seed, const std::string& out_dir,
                      Checks& check) {
  banner("4. Parameter counts");
  const TransformerConfig base{};  // Table 3's base model, V = 37000
  TransformerConfig big = base;
  big.d_model = 1024;
  big.d_ff = 4096;
  big.heads = 16;
  const Sizes t = count_by_formula(toy.config), b = count_by_formula(base),
              g = count_by_formula(big);
  print_counts(toy.config, base, big, t, b, g);

  // What vocabulary would make the formula give the paper's numbers?
  const auto vocab_for = [](const Sizes& n, double paper, int64_t d) {
    return (paper - static_cast<double>(n.encoder + n.decoder)) / static_cast<double>(d);
  };
  const double v_base = vocab_for(b, 65e6, 512), v_big = vocab_for(g, 213e6, 1024);
  fmt::print("\n  V that gives exactly 65M for base: {:.0f}; exactly 213M for big: {:.0f}\n",
             v_base, v_big);
  const double lo = vocab_for(b, 64.5e6, 512), hi = vocab_for(b, 65.5e6, 512);
  fmt::print("  \"65M\" rounded from 64.5M .. 65.5M allows V = {:.0f} .. {:.0f}\n\n", lo, hi);

  check(t.total == toy.parameter_count() && t.encoder == counted(toy, "encoder.") &&
            t.decoder == counted(toy, "decoder.") && t.embedding == counted(toy, "embed."),
        fmt::format("toy: the formula gives {} = model.parameter_count(), and matches embed, "
                    "encoder and decoder one by one",
                    t.total));
  if (quick) {
    fmt::print("  (--quick: the base model is not built; the full run builds it)\n");
  } else {
    const auto start = std::chrono::steady_clock::now();
    Rng rng(seed);
    const Transformer model(base, rng);
    const double seconds = seconds_since(start);
    const int64_t n = model.parameter_count();
    fmt::print("  built the base model in {:.1f} s: parameter_count() = {} ({})\n", seconds, n,
               millions(n));
    check(n == b.total && b.encoder == counted(model, "encoder.") &&
              b.decoder == counted(model, "decoder.") && model.encoder.layers.size() == 6 &&
              model.decoder.layers.size() == 6,
          fmt::format("base: {} encoder and {} decoder layers (N = 6); the formula gives {} = "
                      "the built model's parameter_count()",
                      model.encoder.layers.size(), model.decoder.layers.size(), n));
  }
  check(b.total < 65'000'000 && b.total > 62'000'000,
        fmt::format("base with V = 37000: {} ({}), {} short of the paper's 65M", b.total,
                    millions(b.total), millions(65'000'000 - b.total)));
  check(v_base > 37000 && v_big < 37000,
        fmt::format("no single V gives both of the paper's counts: base wants {:.0f}, big "
                    "wants {:.0f}",
                    v_base, v_big));

  const Shares shares = where_parameters_live(t, toy.config, b, base, out_dir);
  const std::vector<float>& s_toy = shares.toy;
  const std::vector<float>& s_base = shares.base;
  check(
      s_base[0] > 25.0f && s_base[2] + s_base[5] > 35.0f && s_base[6] < 0.1f,
      fmt::format("base: the embedding holds {:.0f}% of the parameters, the feed-forward "
                  "networks {:.0f}%, attention {:.0f}%, LayerNorm {:.2f}%",
                  s_base[0], s_base[2] + s_base[5], s_base[1] + s_base[3] + s_base[4], s_base[6]));
  check(s_toy[0] < 2.0f && s_toy[6] > s_base[6],
        fmt::format("toy: the embedding holds only {:.1f}% (V = 11), LayerNorm {:.1f}%: the "
                    "shares depend on the size",
                    s_toy[0], s_toy[6]));
}

// ---- Words and shapes ----

int32_t id_of(const std::string& word) {
  return static_cast<int32_t>(std::find(kVocab.begin(), kVocab.end(), word) - kVocab.begin());
}

// A batch of sentences, padded with <pad> to the longest: ids [B, L].
IndexTensor batch_of(const std::vector<std::vector<std::string>>& sentences) {
  size_t longest = 0;
  for (const auto& s : sentences) longest = std::max(longest, s.size());
  std::vector<int32_t> ids;
  for (const auto& s : sentences)
    for (size_t i = 0; i < longest; ++i) ids.push_back(i < s.size() ? id_of(s[i]) : 0);
  return IndexTensor::from({static_cast<int64_t>(sentences.size()), static_cast<int64_t>(longest)},
                           ids);
}

std::vector<std::string> words_of(const IndexTensor& ids, int64_t row) {
  std::vector<std::string> words;
  const int64_t len = ids.shape()[1];
  for (int64_t i = 0; i < len; ++i)
    words.push_back(kVocab[static_cast<size_t>(ids.data()[row * len + i])]);
  return words;
}

std::string shape_of(const Tensor& t) {
  return fmt::format("{}", t.shape());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Lesson 07: encoder and decoder"};
  LessonFlags flags(app, "07_encoder_decoder", "a smaller run, in well under a second",
                    "seed for the weights");
  CLI11_PARSE(app, argc, argv);

  Checks check;
  try {
    Rng rng(flags.seed);
    // [snippet: toy]
    Transformer model({.vocab_size = 11,
                       .d_model = 16,
                       .d_ff = 32,
                       .heads = 2,
                       .encoder_layers = 2,
                       .decoder_layers = 2,
                       .max_len = 32},
                      rng);
    model.eval();  // no dropout: the same numbers on every call
    // [/snippet]
    const Batch batch{.src = batch_of({{"the", "cat", "sat", "on", "a", "mat", "</s>"},
                                       {"a", "dog", "ran", "</s>"}}),
                      .tgt_in = batch_of({{"<s>", "a", "cat", "sat", "on"}, {"<s>", "a", "dog"}})};
    fmt::print("src    [B, S] = {}: \"{}\" / \"{}\"\n", batch.src.shape(),
               fmt::join(words_of(batch.src, 0), " "), fmt::join(words_of(batch.src, 1), " "));
    fmt::print("tgt_in [B, T] = {}: \"{}\" / \"{}\"\n", batch.tgt_in.shape(),
               fmt::join(words_of(batch.tgt_in, 0), " "),
               fmt::join(words_of(batch.tgt_in, 1), " "));
    stacks_assembled(model, check);
    const WalkShapes walk = shapes_through(model, batch, check);
    draw_figure1(walk, model.config, batch, flags.out());
    three_uses(model, batch, flags.out(), check);
    parameter_counts(model, flags.quick, flags.seed, flags.out(), check);
  } catch (const std::exception& e) {
    fmt::print("\nlesson 07: stopped by an exception: {}\n", e.what());
    return 1;
  }
  return check.summary("lesson 07");
}
