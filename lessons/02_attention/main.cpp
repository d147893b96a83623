// Lesson 02: scaled dot-product attention (Vaswani et al. 2017, §3.2.1, eq. 1).
//
//   Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V
//
// What does attention compute, and why does the paper divide the scores by sqrt(d_k)? Five
// steps answer it: attention as a soft dictionary lookup, attention by hand on a six-word
// sentence (checked against the library), a measurement of what happens without the scale as
// d_k grows from 4 to 1024 (footnote 4), a saturated softmax seen as a heatmap, and one
// attention layer trained at growing d_k with the scale, without it, and with additive
// attention instead (the comparison of §3.2.1). README.md is the text that walks through this
// file. Every claim is checked; a failed check makes the program exit with 1.
//
// main(), at the end, is the table of contents: it calls the sections in the order of
// README.md, and they are defined above it in the same order.
//
// Shape legend: T queries, S keys, K = d_k (query and key width), V = d_v (value width),
// N random trials, n keys per trial, B dictionaries of the retrieval task, D = their key width.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include "autograd/graph.h"
#include "autograd/ops.h"
#include "autograd/random.h"
#include "autograd/tensor.h"
#include "lessons/lesson.h"
#include "nn/attention.h"
#include "nn/layers.h"
#include "nn/optim.h"
#include "viz/heatmap.h"
#include "viz/line_plot.h"
#include "viz/png.h"

using namespace gf;
using namespace gf::lessons;

namespace {

// ---- 1. A soft dictionary lookup ----

void soft_lookup(Checks& check) {
  banner("1. A soft dictionary lookup");
  std::vector<float> outputs;
  // [snippet: soft-lookup]
  // Three keys and their values. A dictionary returns the one value whose key equals the
  // query; attention returns a blend of all of them, weighted by softmax(query . key).
  const float keys[3][2] = {{1, 0}, {0, 1}, {-1, 0}};
  const float values[3] = {10, 20, 60};
  for (const float length : {0.0f, 1.0f, 3.0f, 10.0f}) {
    const float query[2] = {0, length};  // points at key 1; the longer, the surer
    float weights[3], total = 0, output = 0;
    for (int s = 0; s < 3; ++s) {
      weights[s] = std::exp(query[0] * keys[s][0] + query[1] * keys[s][1]);
      total += weights[s];
    }
    for (int s = 0; s < 3; ++s) output += weights[s] / total * values[s];
    fmt::print("  |query| = {:>4.1f}   weights {:.3f} {:.3f} {:.3f}   output {:.3f}\n", length,
               weights[0] / total, weights[1] / total, weights[2] / total, output);
    outputs.push_back(output);
  }
  // [/snippet]
  fmt::print("\n");
  check(std::abs(outputs.front() - 30.0f) < 1e-4f,
        "a query that matches nothing returns the plain average of the values, 30");
  check(std::abs(outputs.back() - 20.0f) < 0.01f,
        "a long query pointing at key 1 returns its value, 20: a dictionary lookup");
}

// ---- 2. Attention by hand ----

// The six words and their hand-made queries, keys and values (README section 2).
struct Sentence {
  std::vector<std::string> words;
  Tensor q, k, v;  // [T, K], [S, K], [S, V] with T = S = 6, K = V = 4
};

Sentence make_sentence() {
  Sentence s;
  // clang-format off
  // [snippet: sentence]
  s.words = {"a", "cat", "sat", "on", "the", "mat"};
  // K, what each word is:   animal action place relation
  s.k = Tensor::from({6, 4}, {0,     0,     0,    0,       // a    none of the four
                              1,     0,     0,    0,       // cat  an animal
                              0,     1,     0,    0,       // sat  an action
                              0,     0,     0,    1,       // on   a relation
                              0,     0,     0,    0,       // the  none of the four
                              0,     0,     1,    0});     // mat  a place
  // Q, what each word looks for:
  s.q = Tensor::from({6, 4}, {4,     0,     4,    0,       // a    the thing it names
                              0,     6,     0,    0,       // cat  what it does
                              6,     0,     3,    0,       // sat  who sat, and less so where
                              0,     0,     6,    0,       // on   a place
                              4,     0,     4,    0,       // the  the same as a
                              0,     0,     0,    6});     // mat  what relates it
  s.v = s.k.clone();  // V: what each word passes on when attended to; here, what it is
  // [/snippet]
  // clang-format on
  return s;
}

// A matrix with one row per query word and a heading over each column.
void print_matrix(const char* title, const Tensor& m, const std::vector<std::string>& rows,
                  const std::vector<std::string>& columns) {
  fmt::print("  {:<6}", title);
  for (const std::string& c : columns) fmt::print(" {:>8}", c);
  fmt::print("\n");
  for (int64_t t = 0; t < m.dim(0); ++t) {
    fmt::print("  {:<6}", rows[static_cast<size_t>(t)]);
    for (int64_t s = 0; s < m.dim(1); ++s) fmt::print(" {:>8.3f}", m.at({t, s}));
    fmt::print("\n");
  }
  fmt::print("\n");
}

void attention_by_hand(const std::string& out_dir, Checks& check) {
  banner("2. Attention by hand");
  const Sentence sentence = make_sentence();
  const Tensor &q = sentence.q, &k = sentence.k, &v = sentence.v;
  const int64_t T = q.dim(0), S = k.dim(0), d_k = q.dim(1), d_v = v.dim(1);
  Tensor scores = Tensor::zeros({T, S}), weights = Tensor::zeros({T, S});
  Tensor out = Tensor::zeros({T, d_v});
  const float *Q = q.data(), *K = k.data(), *V = v.data();
  float *score = scores.data(), *weight = weights.data(), *o = out.data();
  // [snippet: attention-by-hand]
  // scores[t, s] = q_t . k_s / sqrt(d_k): how well query t matches key s
  const float scale = 1.0f / std::sqrt(static_cast<float>(d_k));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t s = 0; s < S; ++s) {
      float dot = 0.0f;
      for (int64_t i = 0; i < d_k; ++i) dot += Q[t * d_k + i] * K[s * d_k + i];
      score[t * S + s] = dot * scale;
    }
  // weights[t, :] = softmax(scores[t, :]): positive, summing to 1 over the keys. Subtracting
  // the row's largest score first changes nothing but keeps exp() from overflowing.
  for (int64_t t = 0; t < T; ++t) {
    float largest = score[t * S];
    for (int64_t s = 1; s < S; ++s) largest = std::max(largest, score[t * S + s]);
    float total = 0.0f;
    for (int64_t s = 0; s < S; ++s) {
      weight[t * S + s] = std::exp(score[t * S + s] - largest);
      total += weight[t * S + s];
    }
    for (int64_t s = 0; s < S; ++s) weight[t * S + s] /= total;
  }
  // out[t, :] = sum_s weights[t, s] v_s: a weighted average of the values
  for (int64_t t = 0; t < T; ++t)
    for (int64_t s = 0; s < S; ++s)
      for (int64_t j = 0; j < d_v; ++j) o[t * d_v + j] += weight[t * S + s] * V[s * d_v + j];
  // [/snippet]

  const std::vector<std::string> features = {"animal", "action", "place", "relation"};
  print_matrix("scores", scores, sentence.words, sentence.words);
  print_matrix("weight", weights, sentence.words, sentence.words);
  print_matrix("output", out, sentence.words, features);

  // [snippet: library]
  Tensor probs;  // the library fills it with the weights, [T, S]
  const Tensor library = nn::scaled_dot_product_attention(q, k, v, /*mask=*/{}, &probs);
  // The same from the ops of lesson 01: softmax(Q K^T / sqrt(d_k)) V, eq. (1)
  const Tensor composed = matmul(softmax(matmul(q, transpose(k, 0, 1)) * scale), v);
  // [/snippet]
  const double diff_weights = max_abs_diff(weights, probs);
  const double diff_out = std::max(max_abs_diff(out, library), max_abs_diff(out, composed));
  fmt::print("  largest difference from the library: weights {:.1e}, outputs {:.1e}\n\n",
             diff_weights, diff_out);
  bool rows_sum_to_one = true;
  for (int64_t t = 0; t < T; ++t) {
    float total = 0.0f;
    for (int64_t s = 0; s < S; ++s) total += weights.at({t, s});
    rows_sum_to_one = rows_sum_to_one && std::abs(total - 1.0f) < 1e-6f;
  }
  const auto strongest = [&](int64_t t) {
    int64_t best = 0;
    for (int64_t s = 1; s < S; ++s)
      if (weights.at({t, s}) > weights.at({t, best})) best = s;
    return sentence.words[static_cast<size_t>(best)];
  };
  check(rows_sum_to_one, "every row of weights sums to 1");
  check(diff_weights <= 1e-6 && diff_out <= 1e-6,
        "the loops match nn::scaled_dot_product_attention and the composed ops within 1e-6");
  check(strongest(1) == "sat" && strongest(2) == "cat" && strongest(3) == "mat" &&
            strongest(5) == "on",
        "cat attends most to sat, sat to cat, on to mat, mat to on");
  check(max_abs_diff(slice(weights, 0, 0, 1), slice(weights, 0, 4, 5)) == 0.0,
        "'a' and 'the' ask the same question, so they get the same row of weights");

  const viz::Image picture =
      viz::heatmap(probs, {.title = "softmax(Q K^T / sqrt(4)): \"a cat sat on the mat\"",
                           .row_labels = sentence.words,
                           .col_labels = sentence.words,
                           .value_label = "attention weight",
                           .cell_size = 56,
                           .show_values = true});
  save_png(picture, out_dir + "/sentence.png");
}

// ---- 3. Why divide by sqrt(d_k) ----

// What N random queries, each against n random keys, show at one width d_k. "Raw" is the
// softmax of q.k, "scaled" the softmax of q.k / sqrt(d_k).
struct Measurement {
  int64_t d_k = 0;
  double var_raw = 0, var_scaled = 0;              // variance of q.k and of q.k / sqrt(d_k)
  double max_raw = 0, max_scaled = 0;              // mean largest weight
  double entropy_raw = 0, entropy_scaled = 0;      // mean entropy of the weights, in bits
  double grad_raw = 0, grad_scaled = 0;            // median |dL/dscores| (softmax input)
  double mean_grad_raw = 0, mean_grad_scaled = 0;  // mean |dL/dscores|
  double stalled_raw = 0, stalled_scaled = 0;      // share of queries with |dL/dscores| < 1e-3
  double grad_q_raw = 0, grad_q_scaled = 0;        // median |dL/dq|
};

// Per query (row), through one softmax: the largest weight, the entropy and the length of the
// gradient that reaches the softmax's input.
struct Rows {
  std::vector<double> largest, entropy, grad;
};

double mean_of(const std::vector<double>& v) {
  double total = 0;
  for (const double x : v) total += x;
  return total / static_cast<double>(v.size());
}

double share_below(const std::vector<double>& v, double limit) {
  return static_cast<double>(
             std::count_if(v.begin(), v.end(), [&](double x) { return x < limit; })) /
         static_cast<double>(v.size());
}

// What one softmax passes back, to its input (the scores) and on to the query: measure() draws
// the scores, these two, defined below it, measure the gradients.
void softmax_rows(const Tensor& logits, const Tensor& upstream, Rows& rows);
void grad_q_rows(const Tensor& q, const Tensor& keys, const Tensor& upstream, bool scaled,
                 std::vector<double>& norms);

Measurement measure(int64_t d_k, int64_t trials, int64_t n, uint64_t seed) {
  Rng rng(seed * 1000 + static_cast<uint64_t>(d_k));
  Rows raw_rows, scaled_rows;
  std::vector<double> grad_q_raw, grad_q_scaled;
  double sum = 0, squares = 0;
  const int64_t batch = 250;  // trials at a time, so that the keys [N, n, K] stay small
  for (int64_t done = 0; done < trials; done += batch) {
    const int64_t b = std::min(batch, trials - done);
    // [snippet: random-scores]
    // Queries and keys with independent components of mean 0 and variance 1 (footnote 4)
    const Tensor q = Tensor::randn({b, 1, d_k}, rng);                         // [N, 1, K]
    const Tensor keys = Tensor::randn({b, n, d_k}, rng);                      // [N, n, K]
    const Tensor raw = reshape(matmul(q, transpose(keys, -1, -2)), {b, n});   // q.k   [N, n]
    const Tensor scaled = raw * (1.0f / std::sqrt(static_cast<float>(d_k)));  // q.k / sqrt(K)
    // [/snippet]
    const Tensor upstream = Tensor::randn({b, n}, rng);
    for (int64_t i = 0; i < raw.numel(); ++i) {
      sum += raw.data()[i];
      squares += static_cast<double>(raw.data()[i]) * raw.data()[i];
    }
    softmax_rows(raw, upstream, raw_rows);
    softmax_rows(scaled, upstream, scaled_rows);
    grad_q_rows(q, keys, upstream, false, grad_q_raw);
    grad_q_rows(q, keys, upstream, true, grad_q_scaled);
  }
  const double count = static_cast<double>(trials * n), mean = sum / count;
  const double var = squares / count - mean * mean;
  return {.d_k = d_k,
          .var_raw = var,
          .var_scaled = var / static_cast<double>(d_k),  // (x / sqrt(K)) has variance var(x) / K
          .max_raw = mean_of(raw_rows.largest),
          .max_scaled = mean_of(scaled_rows.largest),
          .entropy_raw = mean_of(raw_rows.entropy),
          .entropy_scaled = mean_of(scaled_rows.entropy),
          .grad_raw = median(raw_rows.grad),
          .grad_scaled = median(scaled_rows.grad),
          .mean_grad_raw = mean_of(raw_rows.grad),
          .mean_grad_scaled = mean_of(scaled_rows.grad),
          .stalled_raw = share_below(raw_rows.grad, 1e-3),
          .stalled_scaled = share_below(scaled_rows.grad, 1e-3),
          .grad_q_raw = median(grad_q_raw),
          .grad_q_scaled = median(grad_q_scaled)};
}

void softmax_rows(const Tensor& logits, const Tensor& upstream, Rows& rows) {
  // [snippet: gradient-at-scores]
  Tensor x = logits.clone().set_requires_grad();  // [N, n], a leaf: backward() fills x.grad()
  const Tensor weights = softmax(x);              // [N, n]
  weights.backward(upstream);      // upstream = dL/dweights: random, the same for both cases
  const Tensor grad_x = x.grad();  // dL/dx_i = w_i (g_i - sum_j g_j w_j)
  // [/snippet]
  const int64_t n = x.dim(1);
  for (int64_t r = 0; r < x.dim(0); ++r) {
    const float* w = weights.data() + r * n;
    const float* g = grad_x.data() + r * n;
    double largest = 0, entropy = 0, squares = 0;
    for (int64_t i = 0; i < n; ++i) {
      largest = std::max(largest, static_cast<double>(w[i]));
      if (w[i] > 0) entropy -= w[i] * std::log2(static_cast<double>(w[i]));
      squares += static_cast<double>(g[i]) * g[i];
    }
    rows.largest.push_back(largest);
    rows.entropy.push_back(entropy);
    rows.grad.push_back(std::sqrt(squares));
  }
}

// |dL/dq| per query, for q [N, 1, K] against keys [N, n, K], with or without the scale: the
// gradient that goes on to the query projection W^Q.
void grad_q_rows(const Tensor& q, const Tensor& keys, const Tensor& upstream, bool scaled,
                 std::vector<double>& norms) {
  Tensor leaf = q.clone().set_requires_grad();
  Tensor scores = matmul(leaf, transpose(keys, -1, -2));  // [N, 1, n]
  if (scaled) scores = scores * (1.0f / std::sqrt(static_cast<float>(q.dim(-1))));
  softmax(scores).backward(reshape(upstream, scores.shape()));
  const int64_t d_k = q.dim(-1);
  const Tensor grad_q = leaf.grad();  // [N, 1, K]
  for (int64_t r = 0; r < q.dim(0); ++r) {
    double squares = 0;
    for (int64_t i = 0; i < d_k; ++i) {
      const double g = grad_q.data()[r * d_k + i];
      squares += g * g;
    }
    norms.push_back(std::sqrt(squares));
  }
}

// Is footnote 4's unit variance realistic? MultiHeadAttention projects d_model = 512 inputs
// with a 512 x 512 nn::Linear (Xavier uniform, variance 2 / (512 + 512)), so each query
// component sums 512 terms of variance 1/512: about 1 again, for unit-variance inputs.
void projected_query_variance(uint64_t seed, Checks& check) {
  Rng init_rng(seed);
  const nn::Linear w_q(512, 512, init_rng);
  const Tensor projected = w_q.forward(Tensor::randn({64, 512}, init_rng));  // [64, 512]
  const float projected_var = mean(pow(projected - mean(projected), 2.0f)).item();
  fmt::print(
      "  a fresh nn::Linear(512, 512) turns unit-variance inputs into queries whose "
      "components have variance {:.3f}\n",
      projected_var);
  check(std::abs(projected_var - 1.0f) < 0.1f,
        "at initialisation, projected queries have unit-variance components, as footnote 4 "
        "assumes");
}

void print_measurements(const std::vector<Measurement>& rows) {
  fmt::print("  {:5}   {:^18}   {:^19}   {:>18}\n", "", "variance of scores", "mean largest weight",
             "entropy (bits)");
  fmt::print("  {:>5}   {:>9}{:>9}   {:>10}{:>9}   {:>9}{:>9}\n", "d_k", "unscaled", "scaled",
             "unscaled", "scaled", "unscaled", "scaled");
  for (const Measurement& m : rows)
    fmt::print("  {:>5}   {:>9.2f}{:>9.3f}   {:>10.3f}{:>9.3f}   {:>9.3f}{:>9.3f}\n", m.d_k,
               m.var_raw, m.var_scaled, m.max_raw, m.max_scaled, m.entropy_raw, m.entropy_scaled);
  // The gradients: the key columns here, the rest in gradient.png
  fmt::print("\n  {:5}   {:^21}   {:>17}\n", "", "median |dL/dscores|", "share under 1e-3");
  fmt::print("  {:>5}   {:>10}{:>11}   {:>17}\n", "d_k", "unscaled", "scaled", "unscaled");
  for (const Measurement& m : rows)
    fmt::print("  {:>5}   {:>10.2e}{:>11.2e}   {:>16.1f}%\n", m.d_k, m.grad_raw, m.grad_scaled,
               100 * m.stalled_raw);
  fmt::print("\n");
}

// The curves, against log2(d_k) so that each doubling of d_k is one step to the right.
void plot_measurements(const std::vector<Measurement>& rows, int64_t n,
                       const std::string& out_dir) {
  constexpr viz::Rgb kGrey{140, 140, 140};
  std::vector<float> xs;
  for (const Measurement& m : rows) xs.push_back(std::log2(static_cast<float>(m.d_k)));
  const auto series = [&](const char* name, double Measurement::*field) {
    std::vector<float> ys;
    for (const Measurement& m : rows) ys.push_back(static_cast<float>(m.*field));
    return viz::Series{.name = name, .xs = xs, .ys = ys};
  };
  const std::string x_label = "log2(d_k): 2 is d_k = 4, 10 is 1024";
  save_png(viz::line_plot({series("scaled: q.k / sqrt(d_k)", &Measurement::var_scaled),
                           series("unscaled: q.k", &Measurement::var_raw)},
                          {.title = "Variance of the scores over random q and k",
                           .x_label = x_label,
                           .y_label = "variance",
                           .log_y = true}),
           out_dir + "/variance.png");
  const std::vector<float> uniform(xs.size(), 1.0f / static_cast<float>(n));
  save_png(viz::line_plot({series("scaled", &Measurement::max_scaled),
                           series("unscaled", &Measurement::max_raw),
                           {.name = "uniform", .xs = xs, .ys = uniform, .colour = kGrey}},
                          {.title = "How peaked softmax gets: the largest of 16 weights",
                           .x_label = x_label,
                           .y_label = "mean largest weight",
                           .height = 480}),
           out_dir + "/peakedness.png");
  // The gradient's story in three panels: how large it is at the scores for a typical query
  // (median) and on average (mean), how many queries it misses, and what reaches W^Q.
  const viz::LinePlotOptions small{.x_label = x_label, .width = 520, .height = 420};
  viz::LinePlotOptions at_scores = small, stalled = small, at_q = small;
  at_scores.title = "at the scores (softmax input)";
  at_scores.y_label = "|dL/dscores| per query";
  at_scores.log_y = true;
  stalled.title = "queries the gradient misses";
  stalled.y_label = "share with |dL/dscores| < 1e-3 (%)";
  at_q.title = "at the query q (on to W^Q)";
  at_q.y_label = "median |dL/dq|";
  at_q.log_y = true;
  const auto percent = [&](const char* name, double Measurement::*field) {
    viz::Series line = series(name, field);
    for (float& y : line.ys) y *= 100;
    return line;
  };
  save_png(viz::grid({viz::line_plot({series("scaled, median", &Measurement::grad_scaled),
                                      series("unscaled, median", &Measurement::grad_raw),
                                      series("unscaled, mean", &Measurement::mean_grad_raw)},
                                     at_scores),
                      viz::line_plot({percent("scaled", &Measurement::stalled_scaled),
                                      percent("unscaled", &Measurement::stalled_raw)},
                                     stalled),
                      viz::line_plot({series("scaled", &Measurement::grad_q_scaled),
                                      series("unscaled", &Measurement::grad_q_raw)},
                                     at_q)},
                     3, "The gradient that gets back through the softmax", 30),
           out_dir + "/gradient.png");
}

// The claims, each measured at every d_k (the tolerances allow for --quick's fewer trials).
void check_measurements(const std::vector<Measurement>& rows, bool quick, Checks& check) {
  const double tolerance = quick ? 0.2 : 0.1;
  bool var_matches = true;
  double max_lo = 1, max_hi = 0, grad_lo = 1e30, grad_hi = 0, grad_q_lo = 1e30, grad_q_hi = 0;
  double stalled_scaled = 0;
  for (const Measurement& m : rows) {
    var_matches = var_matches &&
                  std::abs(m.var_raw / static_cast<double>(m.d_k) - 1.0) < tolerance &&
                  std::abs(m.var_scaled - 1.0) < tolerance;
    max_lo = std::min(max_lo, m.max_scaled);
    max_hi = std::max(max_hi, m.max_scaled);
    grad_lo = std::min(grad_lo, m.grad_scaled);
    grad_hi = std::max(grad_hi, m.grad_scaled);
    grad_q_lo = std::min(grad_q_lo, m.grad_q_scaled);
    grad_q_hi = std::max(grad_q_hi, m.grad_q_scaled);
    stalled_scaled = std::max(stalled_scaled, m.stalled_scaled);
  }
  const Measurement &first = rows.front(), &last = rows.back();
  check(var_matches, fmt::format("var(q.k) is d_k and var(q.k / sqrt(d_k)) is 1, within {:.0f}%, "
                                 "at every d_k (footnote 4)",
                                 100 * tolerance));
  check(last.max_raw > 0.9,
        fmt::format("unscaled, the largest weight averages {:.3f} at d_k = 1024: nearly one-hot",
                    last.max_raw));
  check(max_hi - max_lo < 0.05,
        fmt::format("scaled, it stays between {:.3f} and {:.3f} at every d_k", max_lo, max_hi));
  // --quick's 200 queries give noisier medians, so it asks for less.
  const double fall_at_scores = quick ? 300 : 1000, fall_at_q = quick ? 30 : 300;
  check(first.grad_raw / last.grad_raw > fall_at_scores,
        fmt::format("unscaled, the median gradient at the scores falls {:.0f}x from d_k = 4 to "
                    "1024",
                    first.grad_raw / last.grad_raw));
  check(grad_hi / grad_lo < 1.5,
        fmt::format("scaled, it stays within a factor {:.2f} at every d_k", grad_hi / grad_lo));
  check(last.stalled_raw > 0.5 && stalled_scaled == 0.0,
        fmt::format("unscaled, {:.0f}% of the queries get less than 1e-3 at d_k = 1024; scaled, "
                    "none at any d_k",
                    100 * last.stalled_raw));
  check(first.mean_grad_raw / last.mean_grad_raw < 30,
        fmt::format("the mean falls only {:.0f}x: the minority of queries whose two best keys "
                    "nearly tie still get a large gradient",
                    first.mean_grad_raw / last.mean_grad_raw));
  check(grad_q_hi / grad_q_lo < 1.5 && last.grad_q_raw < last.grad_q_scaled / fall_at_q,
        fmt::format("at q, scaled stays within a factor {:.2f}; unscaled ends {:.0f}x below it",
                    grad_q_hi / grad_q_lo, last.grad_q_scaled / last.grad_q_raw));
}

void why_the_scale(bool quick, uint64_t seed, const std::string& out_dir, Checks& check) {
  banner("3. Why divide by sqrt(d_k)");
  projected_query_variance(seed, check);
  const int64_t trials = quick ? 200 : 2000, n = 16;
  std::vector<Measurement> rows;
  const auto start = std::chrono::steady_clock::now();
  for (int64_t d_k = 4; d_k <= 1024; d_k *= 2) rows.push_back(measure(d_k, trials, n, seed));
  fmt::print("\n  {} random queries per d_k, each against n = {} random keys ({:.2f} s)\n\n",
             trials, n, seconds_since(start));
  print_measurements(rows);
  plot_measurements(rows, n, out_dir);
  check_measurements(rows, quick, check);
}

// ---- 4. A saturated softmax, seen ----

void saturated_heatmaps(uint64_t seed, const std::string& out_dir, Checks& check) {
  banner("4. A saturated softmax, seen");
  Rng rng(seed + 4);
  const int64_t length = 8, d_k = 512;
  const Tensor q = Tensor::randn({length, d_k}, rng), k = Tensor::randn({length, d_k}, rng);
  // [snippet: saturated]
  const Tensor raw = matmul(q, transpose(k, 0, 1));  // [T, S], scores of variance d_k = 512
  const Tensor unscaled = softmax(raw);
  const Tensor scaled = softmax(raw * (1.0f / std::sqrt(static_cast<float>(d_k))));
  // [/snippet]
  const Tensor largest_unscaled = max(unscaled, -1), largest_scaled = max(scaled, -1);  // [T]
  const double mean_unscaled = mean(largest_unscaled).item(),
               mean_scaled = mean(largest_scaled).item();
  bool same_winner = true;  // dividing every score of a row by one number keeps their order
  for (int64_t t = 0; t < length; ++t)
    for (int64_t s = 0; s < length; ++s)
      if (unscaled.at({t, s}) == largest_unscaled.at({t}))
        same_winner = same_winner && scaled.at({t, s}) == largest_scaled.at({t});
  fmt::print(
      "  {} random queries and keys, d_k = {}: the largest weight of a row averages {:.3f} "
      "unscaled, {:.3f} scaled\n\n",
      length, d_k, mean_unscaled, mean_scaled);
  const viz::HeatmapOptions options{
      .value_label = "attention weight", .cell_size = 44, .show_values = true};
  viz::HeatmapOptions left = options, right = options;
  left.title = "scaled: softmax(Q K^T / sqrt(512))";
  right.title = "unscaled: softmax(Q K^T)";
  save_png(viz::grid({viz::heatmap(scaled, left), viz::heatmap(unscaled, right)}, 2,
                     "The same random Q and K, d_k = 512", 40),
           out_dir + "/saturated.png");
  check(same_winner, "in every row the same key wins with and without the scale");
  check(mean_unscaled > 0.8, "unscaled, the rows are nearly one-hot");
  check(mean_scaled < 0.6, "scaled, the rows spread their weight over several keys");
}

// ---- 5. The scale in training ----

// Three ways to score query t against key s (§3.2.1): the paper's q.k / sqrt(d_k), the same
// without the scale, and additive attention (Bahdanau et al. 2015), v . tanh(q_t + k_s + b).
enum class Scoring { kScaled, kUnscaled, kAdditive };
constexpr Scoring kScorings[] = {Scoring::kScaled, Scoring::kUnscaled, Scoring::kAdditive};

const char* name_of(Scoring scoring) {
  switch (scoring) {
    case Scoring::kScaled:
      return "scaled";
    case Scoring::kUnscaled:
      return "unscaled";
    case Scoring::kAdditive:
      return "additive";
  }
  return "";
}

// The task: dictionaries of kEntries entries. A key is a random direction in kWidth dimensions,
// of length sqrt(kWidth) (unit-variance components); the value of entry s is label s, as the
// one-hot vector e_s. Each query is one of the keys plus noise of variance kNoise per component,
// and the layer must return that key's value.
constexpr int64_t kEntries = 16, kWidth = 8;
constexpr float kNoise = 1.0f;

struct Dictionaries {
  Tensor keys;        // [B, S, D] with S = kEntries and D = kWidth
  Tensor queries;     // [B, T, D] with T = kEntries queries per dictionary
  IndexTensor match;  // [B, T]: the entry each query asks for
};

// e_i for each i in ids [N]: [N, kEntries]
Tensor one_hot(const IndexTensor& ids) {
  Tensor rows = Tensor::zeros({ids.numel(), kEntries});
  for (int64_t r = 0; r < ids.numel(); ++r) rows.data()[r * kEntries + ids.data()[r]] = 1.0f;
  return rows;
}

// The values [S, S], the same in every dictionary: row s is e_s, the one-hot label of entry s.
Tensor one_hot_values() {
  Tensor values = Tensor::zeros({kEntries, kEntries});
  for (int64_t s = 0; s < kEntries; ++s) values.data()[s * kEntries + s] = 1.0f;
  return values;
}

// Scales a key of kWidth numbers to the given length, keeping its direction.
void stretch_to_length(float* row, float length) {
  float squares = 0;
  for (int64_t i = 0; i < kWidth; ++i) squares += row[i] * row[i];
  for (int64_t i = 0; i < kWidth; ++i) row[i] *= length / std::sqrt(squares);
}

Dictionaries make_dictionaries(int64_t count, Rng& rng) {
  Dictionaries d{.keys = Tensor::randn({count, kEntries, kWidth}, rng),
                 .queries = Tensor::randn({count, kEntries, kWidth}, rng, std::sqrt(kNoise)),
                 .match = IndexTensor::zeros({count, kEntries})};
  const float length = std::sqrt(static_cast<float>(kWidth));
  for (int64_t r = 0; r < count * kEntries; ++r)
    stretch_to_length(d.keys.data() + r * kWidth, length);
  for (int64_t r = 0; r < count * kEntries; ++r) {
    const int64_t wanted = rng.below(kEntries), dictionary = r / kEntries;
    d.match.data()[r] = static_cast<int32_t>(wanted);
    const float* key = d.keys.data() + (dictionary * kEntries + wanted) * kWidth;
    for (int64_t i = 0; i < kWidth; ++i) d.queries.data()[r * kWidth + i] += key[i];
  }
  return d;
}

// One attention layer that learns W^Q and W^K [D, K]. They start with variance 1/D, so that
// its queries and keys start with unit-variance components, as footnote 4 assumes (and as
// section 3 measured for the Transformer's own projections).
struct AttentionLayer {
  Scoring scoring = Scoring::kScaled;
  Tensor w_q{}, w_k{};  // [D, K]
  Tensor bias{}, v{};   // additive only: [K] and [K, 1]

  std::vector<Tensor> parameters() const {
    if (scoring == Scoring::kAdditive) return {w_q, w_k, bias, v};
    return {w_q, w_k};
  }

  // The scores [B, T, S]; *floats, if given, receives the size of the tensors made between the
  // projections and the scores: what this way of scoring costs in memory.
  Tensor scores(const Tensor& queries, const Tensor& keys, int64_t* floats = nullptr) const {
    const Tensor q = matmul(queries, w_q), k = matmul(keys, w_k);  // [B, T, K], [B, S, K]
    const int64_t B = q.dim(0), T = q.dim(1), S = k.dim(1), K = q.dim(2);
    if (scoring == Scoring::kAdditive) {
      // [snippet: additive]
      // e_ts = v . tanh(q_t + k_s + b): a K-wide vector for every (query, key) pair
      const Tensor sums = reshape(q, {B, T, 1, K}) + reshape(k + bias, {B, 1, S, K});
      const Tensor pairs = tanh(sums);                        // [B, T, S, K]
      const Tensor e = reshape(matmul(pairs, v), {B, T, S});  // [B, T, S, 1] -> [B, T, S]
      // [/snippet]
      if (floats) *floats = sums.numel() + pairs.numel() + e.numel();
      return e;
    }
    const Tensor dots = matmul(q, transpose(k, -1, -2));  // [B, T, S]
    if (scoring == Scoring::kUnscaled) {
      if (floats) *floats = dots.numel();
      return dots;
    }
    const Tensor scaled = dots * (1.0f / std::sqrt(static_cast<float>(K)));
    if (floats) *floats = dots.numel() + scaled.numel();
    return scaled;
  }
};

AttentionLayer make_layer(Scoring scoring, int64_t d_k, Rng& rng) {
  const float stddev = 1.0f / std::sqrt(static_cast<float>(kWidth));
  AttentionLayer layer{.scoring = scoring,
                       .w_q = Tensor::randn({kWidth, d_k}, rng, stddev).set_requires_grad(),
                       .w_k = Tensor::randn({kWidth, d_k}, rng, stddev).set_requires_grad()};
  if (scoring == Scoring::kAdditive) {
    layer.bias = Tensor::zeros({d_k}).set_requires_grad();
    layer.v =
        Tensor::randn({d_k, 1}, rng, 1.0f / std::sqrt(static_cast<float>(d_k))).set_requires_grad();
  }
  return layer;
}

// The layer's output for every query, [B * T, S]: a blend of the one-hot values, so entry s of
// a row is the weight on key s.
Tensor retrieve(const AttentionLayer& layer, const Dictionaries& d) {
  const Tensor weights = softmax(layer.scores(d.queries, d.keys));  // [B, T, S]
  return reshape(matmul(weights, one_hot_values()), {-1, kEntries});
}

// How far the returned values are from the wanted ones: |output - e_wanted|^2, averaged over
// the queries. Zero only when every query puts all its weight on its own key.
Tensor retrieval_loss(const Tensor& output, const IndexTensor& match) {
  return sum(pow(output - one_hot(match), 2.0f)) / static_cast<float>(output.dim(0));
}

struct Outcome {
  double loss = 0, accuracy = 0;  // on held-out dictionaries, after training
  double largest_weight = 0;      // mean over the held-out queries
};

Outcome evaluate(const AttentionLayer& layer, const Dictionaries& test) {
  NoGrad no_grad;
  const Tensor output = retrieve(layer, test);  // [N, S]
  int64_t right = 0;
  double largest = 0;
  for (int64_t r = 0; r < output.dim(0); ++r) {
    const float* row = output.data() + r * kEntries;
    const float* best = std::max_element(row, row + kEntries);
    right += best - row == test.match.data()[r];
    largest += *best;
  }
  const auto rows = static_cast<double>(output.dim(0));
  return {.loss = retrieval_loss(output, test.match).item(),
          .accuracy = static_cast<double>(right) / rows,
          .largest_weight = largest / rows};
}

struct TrainingSetup {
  int64_t steps = 0, batch = 0;  // batch: dictionaries per step
  float lr = 0;
  uint64_t seed = 0;
};

Outcome train(Scoring scoring, int64_t d_k, const TrainingSetup& setup, const Dictionaries& test) {
  Rng init(setup.seed * 1000 + static_cast<uint64_t>(d_k));  // the same W^Q, W^K for all three
  const AttentionLayer layer = make_layer(scoring, d_k, init);
  Rng data(setup.seed * 1000 + 1);  // the same dictionaries, in the same order, for every run
  // [snippet: training-step]
  nn::Adam adam(layer.parameters(), {.lr = setup.lr});
  for (int64_t step = 0; step < setup.steps; ++step) {
    const Dictionaries batch = make_dictionaries(setup.batch, data);
    const Tensor loss = retrieval_loss(retrieve(layer, batch), batch.match);
    adam.zero_grad();
    loss.backward();
    adam.step();
  }
  // [/snippet]
  return evaluate(layer, test);
}

// What one training step (forward and backward) of a layer costs, on one batch.
struct Cost {
  double seconds = 0;  // the fastest of several steps
  int64_t floats = 0;  // in the tensors between the projections and the scores
};

Cost step_cost(Scoring scoring, int64_t d_k, const Dictionaries& batch) {
  Rng init(1);
  const AttentionLayer layer = make_layer(scoring, d_k, init);
  Cost cost;
  layer.scores(batch.queries, batch.keys, &cost.floats);
  cost.seconds =
      fastest_of(5, [&] { retrieval_loss(retrieve(layer, batch), batch.match).backward(); });
  return cost;
}

// One width d_k: how each way of scoring learnt, and what dot product and additive cost.
struct WidthResult {
  int64_t d_k = 0;
  std::array<Outcome, 3> outcomes{};  // in the order of kScorings
  Cost dot{}, additive{};             // dot: the scaled dot product
  const Outcome& of(Scoring s) const { return outcomes[static_cast<size_t>(s)]; }
};

void print_training(const std::vector<WidthResult>& rows, const TrainingSetup& setup) {
  const int64_t pairs = setup.batch * kEntries * kEntries;
  fmt::print("  {:5}   {:^28}   {:>22}\n", "", "held-out loss", "held-out accuracy");
  fmt::print("  {:>5}   {:>9}{:>10}{:>9}   {:>9}{:>10}{:>9}\n", "d_k", "scaled", "unscaled",
             "additive", "scaled", "unscaled", "additive");
  for (const WidthResult& r : rows) {
    fmt::print("  {:>5}   {:>9.3f}{:>10.3f}{:>9.3f}", r.d_k, r.of(Scoring::kScaled).loss,
               r.of(Scoring::kUnscaled).loss, r.of(Scoring::kAdditive).loss);
    fmt::print("   {:>8.1f}%{:>9.1f}%{:>8.1f}%\n", 100 * r.of(Scoring::kScaled).accuracy,
               100 * r.of(Scoring::kUnscaled).accuracy, 100 * r.of(Scoring::kAdditive).accuracy);
  }
  const WidthResult& last = rows.back();
  fmt::print(
      "\n  mean largest weight after training, d_k = {}: scaled {:.3f}, unscaled {:.3f}, "
      "additive {:.3f}\n\n",
      last.d_k, last.of(Scoring::kScaled).largest_weight,
      last.of(Scoring::kUnscaled).largest_weight, last.of(Scoring::kAdditive).largest_weight);
  fmt::print("  one step (forward + backward) on {} (query, key) pairs:\n", pairs);
  fmt::print("  {:>5}   {:>12}{:>12}{:>8}   {:>18}\n", "d_k", "dot product", "additive", "ratio",
             "floats per pair");
  for (const WidthResult& r : rows)
    fmt::print("  {:>5}   {:>9.2f} ms{:>9.2f} ms{:>7.0f}x   {:>8.1f}  vs {:>5.1f}\n", r.d_k,
               1e3 * r.dot.seconds, 1e3 * r.additive.seconds, r.additive.seconds / r.dot.seconds,
               static_cast<double>(r.dot.floats) / static_cast<double>(pairs),
               static_cast<double>(r.additive.floats) / static_cast<double>(pairs));
  fmt::print("\n");
}

void plot_training(const std::vector<WidthResult>& rows, const std::string& out_dir) {
  std::vector<float> xs;
  for (const WidthResult& r : rows) xs.push_back(std::log2(static_cast<float>(r.d_k)));
  const auto series = [&](Scoring s, double Outcome::*field, double factor) {
    std::vector<float> ys;
    for (const WidthResult& r : rows) ys.push_back(static_cast<float>(factor * (r.of(s).*field)));
    return viz::Series{.name = name_of(s), .xs = xs, .ys = ys};
  };
  const auto panel = [&](double Outcome::*field, double factor, const char* title,
                         const char* y_label) {
    std::vector<viz::Series> lines;
    for (const Scoring s : kScorings) lines.push_back(series(s, field, factor));
    return viz::line_plot(lines, {.title = title,
                                  .x_label = "log2(d_k): 3 is d_k = 8, 9 is 512",
                                  .y_label = y_label,
                                  .width = 600,
                                  .height = 420});
  };
  save_png(
      viz::grid(
          {panel(&Outcome::loss, 1, "held-out loss (lower is better)", "mean |output - value|^2"),
           panel(&Outcome::accuracy, 100, "held-out accuracy", "queries answered right (%)")},
          2, "One attention layer trained on the same task at each d_k", 30),
      out_dir + "/training.png");
}

// The claims about learning, with margins that held over several seeds. --quick trains only
// d_k = 8 and 64, on fewer steps: there it asserts what already shows at those widths.
void check_learning(const std::vector<WidthResult>& rows, bool quick, Checks& check) {
  const auto loss = [](const WidthResult& r, Scoring s) {
    return r.of(s).loss;
  };
  const WidthResult &first = rows.front(), &last = rows.back();
  check(std::abs(loss(first, Scoring::kUnscaled) / loss(first, Scoring::kScaled) - 1) < 0.1,
        fmt::format("at d_k = {}, unscaled and scaled learn alike (loss {:.3f} and {:.3f})",
                    first.d_k, loss(first, Scoring::kUnscaled), loss(first, Scoring::kScaled)));
  check(loss(last, Scoring::kUnscaled) > (quick ? 1.15 : 1.3) * loss(last, Scoring::kScaled),
        fmt::format("unscaled falls behind as d_k grows: at d_k = {} its loss is {:.2f}x scaled's",
                    last.d_k, loss(last, Scoring::kUnscaled) / loss(last, Scoring::kScaled)));
  if (quick) return;
  const WidthResult& wide = rows[rows.size() - 2];  // d_k = 128
  const Outcome &scaled = last.of(Scoring::kScaled), &unscaled = last.of(Scoring::kUnscaled),
                &additive = last.of(Scoring::kAdditive);
  check(loss(wide, Scoring::kUnscaled) > 1.3 * loss(wide, Scoring::kScaled) &&
            unscaled.accuracy < scaled.accuracy - 0.015,
        fmt::format("unscaled's loss is already {:.2f}x scaled's at d_k = {}; at {} it answers "
                    "{:.1f} points fewer queries right",
                    loss(wide, Scoring::kUnscaled) / loss(wide, Scoring::kScaled), wide.d_k,
                    last.d_k, 100 * (scaled.accuracy - unscaled.accuracy)));
  double scaled_lo = 1e30, scaled_hi = 0;
  bool additive_close = true;
  for (const WidthResult& r : rows) {
    scaled_lo = std::min(scaled_lo, loss(r, Scoring::kScaled));
    scaled_hi = std::max(scaled_hi, loss(r, Scoring::kScaled));
    if (r.d_k > first.d_k)
      additive_close =
          additive_close && loss(r, Scoring::kAdditive) < 1.2 * loss(r, Scoring::kScaled);
  }
  check(scaled_hi / scaled_lo < 1.15,
        fmt::format("scaled, the loss stays between {:.3f} and {:.3f} at every d_k", scaled_lo,
                    scaled_hi));
  check(unscaled.largest_weight > 0.98 && scaled.largest_weight < 0.9,
        fmt::format("unscaled, the trained layer is still nearly one-hot at d_k = {} (largest "
                    "weight {:.3f}; scaled {:.3f})",
                    last.d_k, unscaled.largest_weight, scaled.largest_weight));
  check(loss(wide, Scoring::kUnscaled) > 1.25 * loss(wide, Scoring::kAdditive) &&
            unscaled.loss > 1.25 * additive.loss,
        fmt::format("additive beats unscaled at d_k = {} and {} (loss {:.3f} against {:.3f} at "
                    "{}), as §3.2.1 says",
                    wide.d_k, last.d_k, additive.loss, unscaled.loss, last.d_k));
  check(additive_close, "from d_k = 32 on, additive comes within 20% of scaled's loss");
  check(loss(first, Scoring::kAdditive) > 1.4 * loss(first, Scoring::kScaled),
        fmt::format("at d_k = {}, additive learns much less in the same steps (loss {:.3f})",
                    first.d_k, loss(first, Scoring::kAdditive)));
}

// The claims about cost: the memory is counted from the shapes, the time measured.
void check_cost(const std::vector<WidthResult>& rows, Checks& check) {
  bool memory_grows = true, slower = true;
  for (const WidthResult& r : rows) {
    memory_grows = memory_grows && r.additive.floats >= r.d_k * r.dot.floats;
    slower = slower && r.additive.seconds > 2 * r.dot.seconds;
  }
  const WidthResult& last = rows.back();
  check(memory_grows,
        "additive attention makes at least d_k times the floats per (query, key) "
        "pair that the dot product makes");
  check.timing(slower && last.additive.seconds > 10 * last.dot.seconds,
               fmt::format("additive is slower at every d_k: {:.0f}x at d_k = {}",
                           last.additive.seconds / last.dot.seconds, last.d_k));
}

void the_scale_in_training(bool quick, uint64_t seed, const std::string& out_dir, Checks& check) {
  banner("5. The scale in training");
  check.timings_checked = timings_checkable(quick);
  const TrainingSetup setup{.steps = quick ? 200 : 300, .batch = 8, .lr = 0.01f, .seed = seed};
  const std::vector<int64_t> widths =
      quick ? std::vector<int64_t>{8, 64} : std::vector<int64_t>{8, 32, 128, 512};
  Rng test_rng(seed * 1000 + 2);
  const Dictionaries test = make_dictionaries(quick ? 16 : 64, test_rng);
  const auto start = std::chrono::steady_clock::now();
  std::vector<WidthResult> rows;
  for (const int64_t d_k : widths) {
    WidthResult row{.d_k = d_k};
    for (const Scoring s : kScorings)
      row.outcomes[static_cast<size_t>(s)] = train(s, d_k, setup, test);
    rows.push_back(row);
  }
  fmt::print(
      "  {} steps of Adam (lr {}) on {} dictionaries of {} entries each, per run ({:.1f} s)\n\n",
      setup.steps, setup.lr, setup.batch, kEntries, seconds_since(start));
  Rng batch_rng(seed * 1000 + 3);
  const Dictionaries batch = make_dictionaries(setup.batch, batch_rng);
  for (WidthResult& row : rows) {
    row.dot = step_cost(Scoring::kScaled, row.d_k, batch);
    row.additive = step_cost(Scoring::kAdditive, row.d_k, batch);
  }
  print_training(rows, setup);
  plot_training(rows, out_dir);
  check_learning(rows, quick, check);
  check_cost(rows, check);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Lesson 02: scaled dot-product attention"};
  LessonFlags flags(app, "02_attention",
                    "fewer random trials and smaller training runs, in a second or two",
                    "seed for the random queries and keys, and for the training runs");
  CLI11_PARSE(app, argc, argv);

  Checks check;
  try {
    soft_lookup(check);
    attention_by_hand(flags.out(), check);
    why_the_scale(flags.quick, flags.seed, flags.out(), check);
    saturated_heatmaps(flags.seed, flags.out(), check);
    the_scale_in_training(flags.quick, flags.seed, flags.out(), check);
  } catch (const std::exception& e) {
    fmt::print("\nlesson 02: stopped by an exception: {}\n", e.what());
    return 1;
  }
  return check.summary("lesson 02");
}
