// Lesson 06: positional encoding.
//
// Attention compares every token with every other and never asks where a token stands. How
// does the Transformer learn word order, and why are the embeddings multiplied by
// sqrt(d_model) before the positions are added? Four steps: the sinusoid table by hand
// (checked against nn::PositionalEncoding), the rotation that turns PE(pos) into PE(pos + k),
// self-attention with and without positions on "dog bites man", and the measured norms of
// embeddings and positional codes. README.md is the text that walks through this file. Every
// claim is checked; a failed check makes the program exit with 1.
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
#include "lessons/lesson.h"
#include "nn/attention.h"
#include "nn/feed_forward.h"
#include "nn/layers.h"
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
  const std::string heat_path = out_dir + "/06_positions/table.png";
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
  const std::string curve_path = out_dir + "/06_positions/waves.png";
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
  const std::string path = out_dir + "/06_positions/dot_by_offset.png";
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
  const std::string path = out_dir + "/06_positions/word_order.png";
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
  const std::string path = out_dir + "/06_positions/norms.png";
  viz::write_png(viz::line_plot(series, {.title = "row norms of embeddings and positional codes",
                                         .x_label = "d_model",
                                         .y_label = "mean row norm (log scale)",
                                         .log_y = true,
                                         .width = 820,
                                         .height = 480}),
                 path);
  fmt::print("  wrote {}\n", path);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Lesson 06: positional encoding"};
  bool quick = false;
  uint64_t seed = 1;
  std::string out_dir = "out";
  app.add_flag("--quick", quick, "a smaller run, in about a second (the tests use it)");
  app.add_option("--seed", seed, "seed for the random embeddings and weights")
      ->capture_default_str();
  app.add_option("--out", out_dir, "pictures go to <out>/06_positions/")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  Checks check;
  const auto start = std::chrono::steady_clock::now();
  try {
    sinusoid_table(out_dir, check);
    relative_positions(out_dir, check);
    attention_without_order(seed, out_dir, check);
    why_sqrt_d(quick, seed, out_dir, check);
  } catch (const std::exception& e) {
    fmt::print("\nlesson 06: stopped by an exception: {}\n", e.what());
    return 1;
  }
  fmt::print("\n  ran in {:.2f} s\n", seconds_since(start));
  return check.summary("lesson 06");
}
