// Lesson 06: positional encoding.
//
// Attention compares every token with every other and never asks where a token stands. How
// does the Transformer learn word order, and why are the embeddings multiplied by
// sqrt(d_model) before the positions are added? Five steps: the sinusoid table by hand
// (checked against nn::PositionalEncoding), the rotation that turns PE(pos) into PE(pos + k),
// self-attention with and without positions on "dog bites man", the measured norms of
// embeddings and positional codes, and the reverse task trained with and without the scale,
// tied and untied. README.md is the text that walks through this file. Every claim is
// checked; a failed check makes the program exit with 1.
//
// main(), at the end, is the table of contents: it calls the sections in the order of
// README.md, and they are defined above it in the same order.
//
// Shape legend: T sequence length, D d_model, V vocabulary, L rows of the table (max_len).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <exception>
#include <limits>
#include <string>
#include <vector>

#include "autograd/graph.h"
#include "autograd/ops.h"
#include "autograd/random.h"
#include "autograd/tensor.h"
#include "data/batch_source.h"
#include "data/tasks.h"
#include "data/vocab.h"
#include "lessons/lesson.h"
#include "models/transformer.h"
#include "nn/attention.h"
#include "nn/feed_forward.h"
#include "nn/layers.h"
#include "training/evaluate.h"
#include "training/loop.h"
#include "training/trainer.h"
#include "viz/heatmap.h"
#include "viz/line_plot.h"
#include "viz/png.h"

using namespace gf;
using namespace gf::lessons;

namespace {

// ---- 1. The sinusoid table ----

// The angular frequency of the sinusoid pair (2i, 2i + 1): 1 / 10000^(2i / D). Section 2
// uses it too.
double frequency(int64_t i, int64_t d_model) {
  return std::pow(10000.0, -static_cast<double>(2 * i) / static_cast<double>(d_model));
}

void sinusoid_table(const std::string& out_dir, Checks& check) {
  banner("1. The sinusoid table");
  const int64_t max_len = 64, d_model = 64;
  // [snippet: table-by-hand]
  Tensor pe = Tensor::zeros({max_len, d_model});  // [L, D]: row pos is the code of position pos
  for (int64_t pos = 0; pos < max_len; ++pos)
    for (int64_t i = 0; i < d_model / 2; ++i) {
      // PE(pos, 2i) = sin(pos / 10000^(2i/D)), PE(pos, 2i+1) = cos(pos / 10000^(2i/D))
      const double angle = static_cast<double>(pos) * frequency(i, d_model);
      pe.data()[pos * d_model + 2 * i] = static_cast<float>(std::sin(angle));
      pe.data()[pos * d_model + 2 * i + 1] = static_cast<float>(std::cos(angle));
    }
  const nn::PositionalEncoding library(max_len, d_model);
  // [/snippet]
  const float diff = max_abs_diff(pe, library.table());
  fmt::print("  max_len = {}, d_model = {}: table [{}, {}]\n\n", max_len, d_model, max_len,
             d_model);
  fmt::print("  {:>10} {:>12} {:>14}\n", "pair 2i", "frequency", "wavelength");
  for (const int64_t i : {0, 4, 8, 16, 31})
    fmt::print("  {:>10} {:>12.5f} {:>14.1f}\n", 2 * i, frequency(i, d_model),
               2.0 * M_PI / frequency(i, d_model));
  fmt::print("\n  table by hand vs nn::PositionalEncoding: max diff {:.1e}\n\n", diff);
  check(diff <= 1e-6f, "the loops give nn::PositionalEncoding's table (1e-6)");
  check(max_abs_diff(library.rows(10, 5), slice(pe, 0, 10, 15)) == 0.0f,
        "rows(10, 5) is rows 10..14 of the table");
  bool distinct = true;  // no two positions share a code
  for (int64_t a = 0; a < max_len; ++a)
    for (int64_t b = a + 1; b < max_len; ++b) {
      float d = 0.0f;
      for (int64_t c = 0; c < d_model; ++c)
        d = std::max(d, std::abs(pe.at({a, c}) - pe.at({b, c})));
      distinct = distinct && d > 0.01f;
    }
  check(distinct, "all 64 rows differ (by more than 0.01 somewhere): each position has its code");

  // The classic picture, and four columns as curves.
  std::vector<std::string> rows(static_cast<size_t>(max_len)), cols(static_cast<size_t>(d_model));
  for (int64_t r = 0; r < max_len; r += 8) rows[static_cast<size_t>(r)] = std::to_string(r);
  for (int64_t c = 0; c < d_model; c += 8) cols[static_cast<size_t>(c)] = std::to_string(c);
  const std::string heat_path = out_dir + "/table.png";
  viz::write_png(viz::heatmap(pe, {.title = "PE(pos, dimension): sin in even, cos in odd columns",
                                   .row_labels = rows,
                                   .col_labels = cols,
                                   .row_axis = "position",
                                   .col_axis = "dimension",
                                   .value_label = "PE",
                                   .vmin = -1.0f,
                                   .vmax = 1.0f,
                                   .cell_size = 8}),
                 heat_path);
  const int64_t curve_len = 100;
  const nn::PositionalEncoding longer(curve_len, d_model);
  std::vector<viz::Series> curves;
  for (const int64_t dim : {0, 8, 16, 32}) {
    viz::Series s{.name = fmt::format("dim {}: period {:.0f}", dim,
                                      2.0 * M_PI / frequency(dim / 2, d_model))};
    for (int64_t pos = 0; pos < curve_len; ++pos) {
      s.xs.push_back(static_cast<float>(pos));
      s.ys.push_back(longer.table().at({pos, dim}));
    }
    curves.push_back(s);
  }
  const std::string curve_path = out_dir + "/waves.png";
  viz::write_png(viz::line_plot(curves, {.title = "four sine columns of the table (d_model = 64)",
                                         .x_label = "position",
                                         .y_label = "PE",
                                         .width = 780,
                                         .height = 400}),
                 curve_path);
  fmt::print("  wrote {}\n  wrote {}\n", heat_path, curve_path);
}

// ---- 2. Relative positions are a rotation ----

void relative_positions(const std::string& out_dir, Checks& check) {
  banner("2. Relative positions are a rotation");
  const int64_t max_len = 200, d_model = 64;
  const nn::PositionalEncoding positions(max_len, d_model);
  const Tensor& pe = positions.table();  // [L, D]
  NoGrad no_grad;
  fmt::print("  {:>4} {:>24} {:>28}\n", "k", "max |PE(p+k) - M_k PE(p)|",
             "PE(p).PE(p+k), p = 0..99");
  bool all_rotate = true, only_k = true;
  for (const int64_t k : {1, 5, 20, 100}) {
    // [snippet: rotation]
    // sin((p+k)w) =  cos(kw) sin(pw) + sin(kw) cos(pw)
    // cos((p+k)w) = -sin(kw) sin(pw) + cos(kw) cos(pw)
    // so M_k is block-diagonal, one 2x2 rotation by the angle k w_i per pair (2i, 2i+1),
    // and it does not depend on p.
    Tensor m = Tensor::zeros({d_model, d_model});  // [D, D]
    for (int64_t i = 0; i < d_model / 2; ++i) {
      const double angle = static_cast<double>(k) * frequency(i, d_model);
      const float c = static_cast<float>(std::cos(angle)), s = static_cast<float>(std::sin(angle));
      float* row_sin = m.data() + (2 * i) * d_model;      // output 2i
      float* row_cos = m.data() + (2 * i + 1) * d_model;  // output 2i + 1
      row_sin[2 * i] = c, row_sin[2 * i + 1] = s;
      row_cos[2 * i] = -s, row_cos[2 * i + 1] = c;
    }
    // Rows of pe are the vectors PE(p), so M_k PE(p) for all p at once is pe M_k^T.
    const Tensor shifted = matmul(slice(pe, 0, 0, max_len - k), transpose(m, 0, 1));
    const float err = max_abs_diff(shifted, slice(pe, 0, k, max_len));  // vs PE(p + k)
    // [/snippet]
    double lo = 1e30, hi = -1e30;  // PE(p) . PE(p + k) over p
    for (int64_t p = 0; p < 100; ++p) {
      double dot = 0.0;
      for (int64_t c = 0; c < d_model; ++c) dot += pe.at({p, c}) * pe.at({p + k, c});
      lo = std::min(lo, dot);
      hi = std::max(hi, dot);
    }
    fmt::print("  {:>4} {:>24.1e} {:>18.4f} .. {:.4f}\n", k, err, lo, hi);
    all_rotate = all_rotate && err <= 1e-5f;
    only_k = only_k && hi - lo <= 1e-4;
  }
  fmt::print("\n");
  check(all_rotate, "PE(p + k) = M_k PE(p) for every p, with one M_k per k (1e-5)");
  check(only_k, "PE(p) . PE(p + k) is the same for every p: it depends on k alone (1e-4)");

  // The dot product against the offset, from p = 50 so that negative offsets exist too.
  // [snippet: dot-by-offset]
  // PE(p) . PE(p + k) = sum_i [sin(pw)sin((p+k)w) + cos(pw)cos((p+k)w)] = sum_i cos(k w_i)
  viz::Series measured{.name = "measured PE(50) . PE(50 + k)"};
  viz::Series formula{.name = "sum_i cos(k w_i)"};
  for (int64_t k = -50; k <= 50; ++k) {
    double dot = 0.0, sum_cos = 0.0;
    for (int64_t c = 0; c < d_model; ++c) dot += pe.at({50, c}) * pe.at({50 + k, c});
    for (int64_t i = 0; i < d_model / 2; ++i)
      sum_cos += std::cos(static_cast<double>(k) * frequency(i, d_model));
    measured.xs.push_back(static_cast<float>(k));
    measured.ys.push_back(static_cast<float>(dot));
    formula.xs.push_back(static_cast<float>(k));
    formula.ys.push_back(static_cast<float>(sum_cos));
  }
  // [/snippet]
  float worst = 0.0f;
  for (size_t n = 0; n < measured.ys.size(); ++n)
    worst = std::max(worst, std::abs(measured.ys[n] - formula.ys[n]));
  const float peak = measured.ys[50], at_one = measured.ys[51], at_ten = measured.ys[60];
  fmt::print("  PE(50) . PE(50 + k): k = 0 {:.2f} (= D/2), k = +-1 {:.2f}, k = 10 {:.2f}\n\n", peak,
             at_one, at_ten);
  check(worst <= 1e-4f, "the measured dot products equal sum_i cos(k w_i) (1e-4)");
  check(std::abs(peak - 32.0f) <= 1e-4f && std::abs(measured.ys[49] - at_one) <= 1e-5f,
        "the dot product peaks at k = 0 with D/2 = 32 and is symmetric in k");
  // The formula line is drawn under the measured one: the two coincide.
  formula.colour = viz::Rgb{170, 170, 170};
  const std::string path = out_dir + "/dot_by_offset.png";
  viz::write_png(viz::line_plot({formula, measured},
                                {.title = "PE(p) . PE(p + k) depends on the offset k only (D = 64)",
                                 .x_label = "offset k",
                                 .y_label = "dot product",
                                 .width = 820}),
                 path);
  fmt::print("  wrote {}\n", path);
}

// ---- 3. Attention cannot see order ----

// Row perm[t] of x [1, T, D] becomes row t: the tokens in a new order.
Tensor permute_tokens(const Tensor& x, const std::vector<int64_t>& perm) {
  std::vector<Tensor> rows;
  for (const int64_t p : perm) rows.push_back(slice(x, 1, p, p + 1));
  return concat(rows, 1);
}

void attention_without_order(uint64_t seed, const std::string& out_dir, Checks& check) {
  banner("3. Attention cannot see order");
  NoGrad no_grad;
  const int64_t d_model = 8;
  Rng rng(seed);
  nn::Embedding embed(3, d_model, rng);  // vocabulary: 0 dog, 1 bites, 2 man
  nn::MultiHeadAttention attn({.d_model = d_model, .heads = 2}, rng);
  const nn::PositionalEncoding positions(16, d_model);
  const std::vector<std::string> dbm = {"dog", "bites", "man"}, mbd = {"man", "bites", "dog"};
  const float scale = std::sqrt(static_cast<float>(d_model));
  // [snippet: permutation]
  const IndexTensor a_ids = IndexTensor::from({1, 3}, {0, 1, 2});  // dog bites man
  const IndexTensor b_ids = IndexTensor::from({1, 3}, {2, 1, 0});  // man bites dog
  const std::vector<int64_t> swap = {2, 1, 0};  // b's token t is a's token swap[t]
  const auto self_attention = [&](const IndexTensor& ids, bool with_positions) {
    Tensor x = embed.forward(ids) * scale;             // [1, T, D]
    if (with_positions) x = x + positions.rows(0, 3);  // [T, D] broadcasts over the batch
    return attn.forward(x, x);                         // [1, T, D]
  };
  const Tensor a_plain = self_attention(a_ids, false), b_plain = self_attention(b_ids, false);
  const Tensor a_pos = self_attention(a_ids, true), b_pos = self_attention(b_ids, true);
  // Without positions, b's outputs are a's outputs in b's order: Attn(P x) = P Attn(x).
  const float plain_diff = max_abs_diff(b_plain, permute_tokens(a_plain, swap));
  const float pos_diff = max_abs_diff(b_pos, permute_tokens(a_pos, swap));
  // [/snippet]
  fmt::print("  d_model = {}, 2 heads, random weights; the output row of each word:\n\n", d_model);
  const auto show = [&](const char* what, const std::vector<std::string>& words, const Tensor& y) {
    fmt::print("  {}\n", what);
    for (int64_t t = 0; t < 3; ++t) {
      fmt::print("    {:<6}", words[static_cast<size_t>(t)]);
      for (int64_t c = 0; c < 4; ++c) fmt::print("{:>8.3f}", y.at({0, t, c}));
      fmt::print("  ...\n");
    }
  };
  show("no positions, \"dog bites man\"", dbm, a_plain);
  show("no positions, \"man bites dog\"", mbd, b_plain);
  show("with positions, \"dog bites man\"", dbm, a_pos);
  show("with positions, \"man bites dog\"", mbd, b_pos);
  fmt::print(
      "\n  max |Attn(swapped x) - swapped Attn(x)|: no positions {:.1e}, with positions "
      "{:.2f}\n\n",
      plain_diff, pos_diff);
  check(plain_diff <= 1e-6f,
        "without positions, swapping the words swaps the outputs, nothing else (1e-6)");
  check(max_abs_diff(slice(a_plain, 1, 1, 2), slice(b_plain, 1, 1, 2)) <= 1e-6f,
        "without positions, \"bites\" gets the same output in both sentences");
  check(pos_diff >= 0.05f, "with positions, the outputs are no longer a reordering");

  const auto panel = [&](const Tensor& y, const std::vector<std::string>& words,
                         std::string title) {
    return viz::heatmap(reshape(y, {3, d_model}), {.title = std::move(title),
                                                   .row_labels = words,
                                                   .row_axis = "word",
                                                   .col_axis = "output feature",
                                                   .vmin = -2.5f,
                                                   .vmax = 2.5f,
                                                   .cell_size = 48,
                                                   .colour_bar = false,
                                                   .show_values = true});
  };
  const std::string path = out_dir + "/word_order.png";
  viz::write_png(viz::grid({panel(a_plain, dbm, "no positions: dog bites man"),
                            panel(b_plain, mbd, "no positions: man bites dog"),
                            panel(a_pos, dbm, "with positions: dog bites man"),
                            panel(b_pos, mbd, "with positions: man bites dog")},
                           2,
                           "self-attention outputs: same rows, reordered, until positions "
                           "are added"),
                 path);
  fmt::print("  wrote {}\n", path);
}

// ---- 4. Why multiply by sqrt(d_model) ----

// The Euclidean norm of row r of a [rows, D] tensor, in double.
double row_norm(const Tensor& m, int64_t r) {
  const int64_t d = m.dim(1);
  double s = 0.0;
  for (int64_t c = 0; c < d; ++c) {
    const double v = m.data()[r * d + c];
    s += v * v;
  }
  return std::sqrt(s);
}

// Embeddings as nn::Embedding initialises them (Xavier uniform) for each vocabulary size and
// d_model, against the positional codes: their mean row norms, printed as a table, and the
// curves of section 4's picture.
struct XavierNorms {
  std::vector<viz::Series> series{};  // per vocabulary: the rows' norm, and x sqrt(D)
  viz::Series pe_curve{};             // the positional codes' rows
  bool pe_exact = true, xavier_matches = true, positions_dominate = true, scaled_closer = true;
};

XavierNorms xavier_embeddings(const std::vector<int64_t>& dims, const std::vector<int64_t>& vocabs,
                              Rng& rng) {
  fmt::print("  mean row norm (over all rows); PE: positions 0..99\n\n");
  fmt::print("  {:>5} {:>6} {:>10} {:>13} {:>13} {:>13} {:>11}\n", "D", "V", "PE row", "Xavier row",
             "x sqrt(D)", "PE / emb", "PE / emb");
  fmt::print("  {:>5} {:>6} {:>10} {:>13} {:>13} {:>13} {:>11}\n", "", "", "sqrt(D/2)", "", "",
             "unscaled", "scaled");
  std::vector<viz::Series> series;
  viz::Series pe_curve{.name = "PE row: sqrt(D/2)", .colour = viz::Rgb{0, 0, 0}};
  bool pe_exact = true, xavier_matches = true, positions_dominate = true, scaled_closer = true;
  for (const int64_t v : vocabs) {
    viz::Series raw{.name = fmt::format("Xavier, V = {}", v),
                    .colour = v == 11 ? viz::Rgb{140, 180, 235} : viz::Rgb{245, 190, 120}};
    viz::Series scaled{.name = fmt::format("Xavier x sqrt(D), V = {}", v),
                       .colour = v == 11 ? viz::Rgb{30, 90, 200} : viz::Rgb{215, 105, 0}};
    for (const int64_t d : dims) {
      // [snippet: norms]
      const nn::Embedding embed(v, d, rng);  // entries ~ U(-a, a), a = sqrt(6 / (V + D))
      const nn::PositionalEncoding pe(100, d);
      double emb_norm = 0.0, pe_norm = 0.0;
      for (int64_t r = 0; r < v; ++r)
        emb_norm += row_norm(embed.weight, r) / static_cast<double>(v);
      for (int64_t p = 0; p < 100; ++p) pe_norm += row_norm(pe.table(), p) / 100.0;
      // Each pair contributes sin^2 + cos^2 = 1, so every PE row has norm sqrt(D / 2).
      // A U(-a, a) entry has variance a^2 / 3 = 2 / (V + D): a row has norm ~ sqrt(2D / (V + D)).
      const double pe_expected = std::sqrt(static_cast<double>(d) / 2.0);
      const double emb_expected =
          std::sqrt(2.0 * static_cast<double>(d) / static_cast<double>(v + d));
      const double emb_scaled = emb_norm * std::sqrt(static_cast<double>(d));  // x sqrt(d_model)
      // [/snippet]
      fmt::print("  {:>5} {:>6} {:>10.3f} {:>13.4f} {:>13.3f} {:>12.1f}x {:>10.2f}x\n", d, v,
                 pe_norm, emb_norm, emb_scaled, pe_norm / emb_norm, pe_norm / emb_scaled);
      pe_exact = pe_exact && std::abs(pe_norm - pe_expected) <= 1e-4 * pe_expected;
      xavier_matches = xavier_matches && std::abs(emb_norm / emb_expected - 1.0) <= 0.05;
      positions_dominate = positions_dominate && pe_norm / emb_norm >= 2.0;
      scaled_closer = scaled_closer && std::abs(std::log(pe_norm / emb_scaled)) <
                                           std::abs(std::log(pe_norm / emb_norm));
      raw.xs.push_back(static_cast<float>(d));
      raw.ys.push_back(static_cast<float>(emb_norm));
      scaled.xs.push_back(static_cast<float>(d));
      scaled.ys.push_back(static_cast<float>(emb_scaled));
      if (v == vocabs.front()) {
        pe_curve.xs.push_back(static_cast<float>(d));
        pe_curve.ys.push_back(static_cast<float>(pe_norm));
      }
    }
    series.push_back(raw);
    series.push_back(scaled);
  }

  return {.series = series,
          .pe_curve = pe_curve,
          .pe_exact = pe_exact,
          .xavier_matches = xavier_matches,
          .positions_dominate = positions_dominate,
          .scaled_closer = scaled_closer};
}

// The initialisation of the authors' released code: N(0, 1/D) entries, rows of norm ~1, and
// what they give as the tied output layer; printed as a table.
struct NormalNorms {
  viz::Series normal_scaled{};  // the rows' norm x sqrt(D)
  bool balanced = true, logits_ok = true;
};

NormalNorms normal_embeddings(const std::vector<int64_t>& dims, Rng& rng) {
  fmt::print("\n  embeddings drawn from N(0, 1/D) instead (rows of norm ~1), V = 37000:\n\n");
  fmt::print("  {:>5} {:>10} {:>10} {:>11} {:>15} {:>15}\n", "D", "PE row", "emb row", "x sqrt(D)",
             "tied logits std", "logits std if");
  fmt::print("  {:>5} {:>10} {:>10} {:>11} {:>15} {:>15}\n", "", "", "", "", "(rows norm 1)",
             "rows norm sqrt(D)");
  viz::Series normal_scaled{.name = "N(0, 1/D) x sqrt(D)", .colour = viz::Rgb{30, 150, 60}};
  bool balanced = true, logits_ok = true;
  for (const int64_t d : dims) {
    // [snippet: tied]
    const int64_t v = 37000;
    const Tensor e = Tensor::randn({v, d}, rng, 1.0f / std::sqrt(static_cast<float>(d)));  // [V, D]
    double emb_norm = 0.0;
    for (int64_t r = 0; r < v; ++r) emb_norm += row_norm(e, r) / static_cast<double>(v);
    const double scaled = emb_norm * std::sqrt(static_cast<double>(d));
    // With tied weights, the output layer is logits = y E^T, and y (after LayerNorm) has
    // entries of size ~1. Rows of norm ~1 keep the first logits ~N(0, 1); rows of norm
    // sqrt(D) would make them ~N(0, D) and the first softmax nearly one-hot.
    const Tensor y = Tensor::randn({16, d}, rng);                  // [T, D] LayerNorm-like outputs
    const Tensor logits = matmul(y, transpose(e, 0, 1));           // [T, V]
    const Tensor big = logits * std::sqrt(static_cast<float>(d));  // the same with E sqrt(D)
    // [/snippet]
    const auto stddev = [](const Tensor& t) {
      double s = 0.0, s2 = 0.0;
      for (int64_t n = 0; n < t.numel(); ++n) {
        s += t.data()[n];
        s2 += static_cast<double>(t.data()[n]) * t.data()[n];
      }
      const double m = s / static_cast<double>(t.numel());
      return std::sqrt(s2 / static_cast<double>(t.numel()) - m * m);
    };
    const double pe_norm = std::sqrt(static_cast<double>(d) / 2.0);
    const double logit_std = stddev(logits), big_std = stddev(big);
    fmt::print("  {:>5} {:>10.3f} {:>10.4f} {:>11.3f} {:>15.3f} {:>15.2f}\n", d, pe_norm, emb_norm,
               scaled, logit_std, big_std);
    balanced = balanced && scaled / pe_norm > 1.2 && scaled / pe_norm < 1.6;  // sqrt(2) apart
    logits_ok = logits_ok && std::abs(logit_std - 1.0) < 0.05 && big_std > 7.0;
    normal_scaled.xs.push_back(static_cast<float>(d));
    normal_scaled.ys.push_back(static_cast<float>(scaled));
  }
  return {.normal_scaled = normal_scaled, .balanced = balanced, .logits_ok = logits_ok};
}

void why_sqrt_d(bool quick, uint64_t seed, const std::string& out_dir, Checks& check) {
  banner("4. Why multiply by sqrt(d_model)");
  const std::vector<int64_t> dims =
      quick ? std::vector<int64_t>{64, 128} : std::vector<int64_t>{64, 128, 256, 512};
  const std::vector<int64_t> vocabs = {11, 37000};
  Rng rng(seed);
  const XavierNorms xavier = xavier_embeddings(dims, vocabs, rng);
  const NormalNorms normal = normal_embeddings(dims, rng);
  fmt::print("\n");
  check(xavier.pe_exact, "every positional code row has norm sqrt(D/2) exactly (1e-4 relative)");
  check(xavier.xavier_matches, "Xavier rows have norm sqrt(2D / (V + D)) within 5%");
  check(xavier.positions_dominate,
        "unscaled Xavier rows are at least 2x shorter than PE rows, for "
        "every D and V here");
  check(xavier.scaled_closer,
        "x sqrt(D) always brings the embedding closer to the positions' size (in ratio)");
  check(normal.balanced,
        "N(0, 1/D) rows x sqrt(D) have norm sqrt(D) ~ sqrt(2) x the PE norm, at every D");
  check(normal.logits_ok,
        "with those rows as the tied output layer, logits have std ~1 (within 5%); "
        "rows of norm sqrt(D) would give std sqrt(D)");

  std::vector<viz::Series> series = xavier.series;
  series.push_back(normal.normal_scaled);
  series.push_back(xavier.pe_curve);
  const std::string path = out_dir + "/norms.png";
  viz::write_png(viz::line_plot(series, {.title = "row norms of embeddings and positional codes",
                                         .x_label = "d_model",
                                         .y_label = "mean row norm (log scale)",
                                         .log_y = true,
                                         .width = 820,
                                         .height = 480}),
                 path);
  fmt::print("  wrote {}\n", path);
}

// ---- 5. Training with and without the scale ----

// The reverse task and lesson 08's small model (section 5); --quick shrinks it.
struct ScaleSetup {
  TransformerConfig model;
  data::TaskConfig task;
  int64_t steps = 0, batch = 32, warmup = 50, held_out = 128;
  float factor = 0.5f;          // multiplies eq. 3's rate, as in lesson 08
  int64_t early_steps = 0;      // the start of training whose mean loss is compared
  std::vector<uint64_t> seeds;  // each seed trains all four models
};

ScaleSetup make_scale_setup(bool quick, uint64_t seed) {
  ScaleSetup s;
  s.model = {.vocab_size = 11,
             .d_model = 32,
             .d_ff = 64,
             .heads = 2,
             .encoder_layers = 2,
             .decoder_layers = 2,
             .max_len = 64,
             .dropout = 0.1f};
  s.task = {.vocab_size = 11, .min_len = 10, .max_len = 10};
  s.steps = quick ? 60 : 400;
  s.early_steps = quick ? 60 : 200;
  if (quick) s.task.min_len = s.task.max_len = 6;
  s.seeds = quick ? std::vector<uint64_t>{seed} : std::vector<uint64_t>{seed, seed + 1, seed + 2};
  return s;
}

// What one training run ends with.
struct ScaleRun {
  bool tied = true, scale = true;
  uint64_t seed = 0;
  std::vector<float> losses{};                // the training loss of every step
  double early_loss = 0.0;                    // mean over steps 1 .. early_steps
  double final_loss = 0.0;                    // mean over the last 20 steps
  double exact = 0.0;                         // held-out exact match, greedy decoding
  double ratio_start = 0.0, ratio_end = 0.0;  // token_to_position before and after training
};

// [snippet: token-to-position]
// The token's part of x = s E[token] + PE(pos) against the position's part: the mean norm of
// s E[token] over the content tokens (s = sqrt(D) with the scale, 1 without) over the mean
// norm of PE(pos) over the positions 0 .. length - 1. Tied, E is also the output layer.
double token_to_position(const Transformer& model, int64_t length) {
  const nn::Embedding& table = model.config.tied ? *model.embed : *model.src_embed;
  const int64_t v = model.config.vocab_size, d = model.config.d_model;
  double token = 0.0, position = 0.0;
  for (int64_t r = data::kNumSpecial; r < v; ++r)
    token += row_norm(table.weight, r) / static_cast<double>(v - data::kNumSpecial);
  if (model.config.scale_embeddings) token *= std::sqrt(static_cast<double>(d));
  const nn::PositionalEncoding pe(length, d);
  for (int64_t p = 0; p < length; ++p)
    position += row_norm(pe.table(), p) / static_cast<double>(length);
  return token / position;
}
// [/snippet]

// Trains one model from seed. With the same seed and the same tying, the runs with and without
// the scale start from the same weights and see the same batches and dropout masks.
ScaleRun train_reverse(const ScaleSetup& setup, bool tied, bool scale, uint64_t seed,
                       const std::vector<data::Pair>& held_out) {
  ScaleRun run{.tied = tied, .scale = scale, .seed = seed};
  // [snippet: four-ways]
  TransformerConfig config = setup.model;
  config.tied = tied;               // one matrix for both embeddings and the output layer
  config.scale_embeddings = scale;  // x sqrt(d_model) before PE is added, or not
  Rng rng(seed);
  Transformer model(config, rng);
  const int64_t positions = setup.task.max_len + 1;  // the longest source: content and eos
  run.ratio_start = token_to_position(model, positions);
  data::BatchSource batches = data::BatchSource::generated(data::Task::Reverse, setup.task,
                                                           setup.batch, Rng(rng.next_u64()));
  training::Trainer trainer(nn::Optimizer(model.named_parameters(), nn::AdamConfig{}),
                            training::noam(config.d_model, setup.warmup, setup.factor));
  model.train();
  training::run(
      trainer, [&] { return batches.next(); },
      [&](const data::Batch& batch) { return training::teacher_forced_loss(model, batch); },
      setup.steps, {.after_step = [&](const training::StepRecord& r) {
        run.losses.push_back(r.result.loss);
      }});
  model.eval();
  run.exact = training::exact_match(model, held_out);
  run.ratio_end = token_to_position(model, positions);
  // [/snippet]
  const auto mean_loss = [&](int64_t from, int64_t to) {  // steps from+1 .. to
    double sum = 0.0;
    for (int64_t n = from; n < to; ++n) sum += run.losses[static_cast<size_t>(n)];
    return sum / static_cast<double>(to - from);
  };
  run.early_loss = mean_loss(0, setup.early_steps);
  run.final_loss = mean_loss(setup.steps - 20, setup.steps);
  return run;
}

std::string run_name(bool tied, bool scale) {
  return fmt::format("{}, {}", tied ? "tied" : "untied", scale ? "x sqrt(D)" : "no scale");
}

// The loss curve of one of the four models, averaged over the seeds and over windows of 10
// steps, for the picture: dark with the scale, light without; blue tied, orange untied.
viz::Series mean_curve(const std::vector<ScaleRun>& runs, bool tied, bool scale) {
  viz::Series curve{.name = run_name(tied, scale),
                    .colour = tied ? (scale ? viz::Rgb{30, 90, 200} : viz::Rgb{140, 180, 235})
                                   : (scale ? viz::Rgb{215, 105, 0} : viz::Rgb{245, 190, 120})};
  const size_t steps = runs.front().losses.size(), window = 10;
  for (size_t start = 0; start + window <= steps; start += window) {
    double sum = 0.0;
    int64_t count = 0;
    for (const ScaleRun& r : runs) {
      if (r.tied != tied || r.scale != scale) continue;
      for (size_t n = start; n < start + window; ++n) sum += r.losses[n];
      count += static_cast<int64_t>(window);
    }
    curve.xs.push_back(static_cast<float>(start + window));
    curve.ys.push_back(static_cast<float>(sum / static_cast<double>(count)));
  }
  return curve;
}

// The first step (x) at which the curve is below level; never: `never`.
int64_t first_step_below(const viz::Series& curve, float level, int64_t never) {
  for (size_t n = 0; n < curve.ys.size(); ++n)
    if (curve.ys[n] < level) return static_cast<int64_t>(curve.xs[n]);
  return never;
}

// The claims of section 5. Runs come in fours per seed: tied scaled, tied unscaled, untied
// scaled, untied unscaled; below_one holds the four models' steps to a mean loss below 1.0.
void check_scale_claims(const std::vector<ScaleRun>& runs, const std::vector<int64_t>& below_one,
                        bool quick, Checks& check) {
  bool ratios_start = true, unscaled_stay_small = true, early_faster = true;
  double final_gap_tied = 0.0, final_gap_untied = 0.0;  // unscaled - scaled, summed over seeds
  for (size_t n = 0; n < runs.size(); n += 2) {
    const ScaleRun &scaled = runs[n], &unscaled = runs[n + 1];
    ratios_start = ratios_start && scaled.ratio_start > 1.2 && unscaled.ratio_start < 0.4;
    unscaled_stay_small = unscaled_stay_small && unscaled.ratio_end < 0.7;
    early_faster = early_faster && scaled.early_loss < unscaled.early_loss - 0.05;
    (scaled.tied ? final_gap_tied : final_gap_untied) += unscaled.final_loss - scaled.final_loss;
  }
  bool tied_grows_less = true;  // unscaled: the tied matrix's token part grows less
  for (size_t n = 0; n < runs.size(); n += 4)
    tied_grows_less = tied_grows_less && runs[n + 1].ratio_end < runs[n + 3].ratio_end - 0.05;
  check(ratios_start,
        "at the start, the token's part is > 1.2x the position's with the scale and < 0.4x "
        "without it");
  if (!quick) {  // --quick trains too few steps to compare the losses
    check(early_faster,
          "with the scale, the mean loss of steps 1-200 is lower (by > 0.05) for every seed, "
          "tied and untied");
    check(unscaled_stay_small,
          "without the scale, the token's part is still < 0.7x the position's after training");
    check(tied_grows_less,
          "without the scale, the tied matrix's token part ends smaller than the untied one's "
          "(by > 0.05), for every seed");
    check(below_one[1] >= below_one[0] + 50 && below_one[3] >= below_one[2] + 50,
          "without the scale, the mean loss falls below 1.0 at least 50 steps later, tied and "
          "untied");
    check(final_gap_tied > 0.0 && final_gap_untied > 0.0,
          "with the scale, the final loss averaged over the seeds is lower, tied and untied");
  }
}

void training_with_and_without_scale(bool quick, uint64_t seed, const std::string& out_dir,
                                     Checks& check) {
  banner("5. Training with and without the scale");
  const ScaleSetup setup = make_scale_setup(quick, seed);
  Rng held_out_rng(seed + 1000);
  const std::vector<data::Pair> held_out =
      data::generate(data::Task::Reverse, setup.held_out, setup.task, held_out_rng);
  fmt::print(
      "  reverse task, length {}, {} held-out pairs; d_model {}, {} + {} layers, dropout {}\n",
      setup.task.max_len, setup.held_out, setup.model.d_model, setup.model.encoder_layers,
      setup.model.decoder_layers, setup.model.dropout);
  fmt::print(
      "  {} steps of {} sequences; token / position: the token's part of x over the "
      "position's\n\n",
      setup.steps, setup.batch);
  fmt::print("  {:>4}  {:<20} {:>15} {:>12} {:>8} {:>7}\n", "seed", "model", "token / position",
             "mean loss", "final", "exact");
  fmt::print("  {:>4}  {:<20} {:>15} {:>12} {:>8} {:>7}\n", "", "", "start -> end",
             fmt::format("steps 1-{}", setup.early_steps), "loss", "match");
  std::vector<ScaleRun> runs;
  for (const uint64_t s : setup.seeds)
    for (const bool tied : {true, false})
      for (const bool scale : {true, false}) {
        const ScaleRun& r = runs.emplace_back(train_reverse(setup, tied, scale, s, held_out));
        fmt::print("  {:>4}  {:<20} {:>6.2f} -> {:<5.2f} {:>12.3f} {:>8.3f} {:>7.3f}\n", s,
                   run_name(tied, scale), r.ratio_start, r.ratio_end, r.early_loss, r.final_loss,
                   r.exact);
      }
  fmt::print("\n");

  // The seeds' mean curves, in the order tied scaled, tied unscaled, untied scaled, untied
  // unscaled; and the first step at which each falls below a loss of 1.0.
  std::vector<viz::Series> curves;
  std::vector<int64_t> below_one;
  fmt::print("  first step at which the mean loss (of the seeds, 10-step window) is below 1.0:\n");
  for (const bool tied : {true, false})
    for (const bool scale : {true, false}) {
      below_one.push_back(first_step_below(curves.emplace_back(mean_curve(runs, tied, scale)), 1.0f,
                                           setup.steps + 1));
      fmt::print("    {:<20} {}\n", run_name(tied, scale),
                 below_one.back() > setup.steps ? "never" : std::to_string(below_one.back()));
    }
  fmt::print("\n");
  check_scale_claims(runs, below_one, quick, check);

  const std::string path = out_dir + "/scale_training.png";
  viz::write_png(
      viz::line_plot(curves, {.title = fmt::format("reverse task, training loss (mean of {} "
                                                   "seeds, 10-step windows)",
                                                   setup.seeds.size()),
                              .y_label = "cross-entropy (log scale)",
                              .log_y = true,
                              .width = 820,
                              .height = 460}),
      path);
  fmt::print("  wrote {}\n", path);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Lesson 06: positional encoding"};
  LessonFlags flags(
      app, "06_positions", "a smaller run, in a few seconds",
      "seed for the random embeddings, weights and data (section 5: this seed and the next two)");
  CLI11_PARSE(app, argc, argv);

  Checks check;
  const auto start = std::chrono::steady_clock::now();
  try {
    sinusoid_table(flags.out(), check);
    relative_positions(flags.out(), check);
    attention_without_order(flags.seed, flags.out(), check);
    why_sqrt_d(flags.quick, flags.seed, flags.out(), check);
    training_with_and_without_scale(flags.quick, flags.seed, flags.out(), check);
  } catch (const std::exception& e) {
    fmt::print("\nlesson 06: stopped by an exception: {}\n", e.what());
    return 1;
  }
  fmt::print("\n  ran in {:.2f} s\n", seconds_since(start));
  return check.summary("lesson 06");
}
