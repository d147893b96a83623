// Lesson 04: multi-head attention.
//
// Why does the Transformer run h small attention heads of width d_model / h instead of one
// head of full width? Four steps answer it: the heads computed one by one by hand, the
// reshape-and-transpose trick that computes them all at once (checked against
// nn::MultiHeadAttention), the parameter and operation count that does not depend on h, and
// a small task that one head cannot solve and two heads can, with heatmaps of what each head
// learned. README.md is the text that walks through this file. Every claim is checked; a
// failed check makes the program exit with 1.
//
// main(), at the end, is the table of contents: it calls the sections in the order of
// README.md, and they are defined above it in the same order.
//
// Shape legend: B batch, T sequence length, D d_model, H heads, K = D / H, V vocabulary.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <exception>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "autograd/graph.h"
#include "autograd/ops.h"
#include "autograd/random.h"
#include "autograd/tensor.h"
#include "lessons/lesson.h"
#include "nn/attention.h"
#include "nn/layers.h"
#include "nn/module.h"
#include "nn/optim.h"
#include "viz/heatmap.h"
#include "viz/line_plot.h"
#include "viz/png.h"

using namespace gf;
using namespace gf::lessons;

namespace {

// One head's [T, T] probabilities out of attention probabilities [1, H, T, T] (sections 2 and
// 4; defined below them).
Tensor head_probs(const Tensor& probs, int64_t head);

// ---- 1. Heads by hand ----

// softmax(q k^T / sqrt(K)) v for one head, as explicit loops (lesson 02 in brief).
// q, k, v [T, K] -> [T, K]; the probabilities [T, T] go to probs.
Tensor attention_by_hand(const Tensor& q, const Tensor& k, const Tensor& v, Tensor& probs) {
  const int64_t t_len = q.dim(0), d_k = q.dim(1);
  const float scale = 1.0f / std::sqrt(static_cast<float>(d_k));
  probs = Tensor::zeros({t_len, t_len});
  Tensor out = Tensor::zeros({t_len, d_k});
  for (int64_t t = 0; t < t_len; ++t) {
    float* p = probs.data() + t * t_len;
    float top = -std::numeric_limits<float>::infinity();
    for (int64_t s = 0; s < t_len; ++s) {
      float dot = 0.0f;
      for (int64_t c = 0; c < d_k; ++c) dot += q.data()[t * d_k + c] * k.data()[s * d_k + c];
      p[s] = dot * scale;
      top = std::max(top, p[s]);
    }
    float total = 0.0f;
    for (int64_t s = 0; s < t_len; ++s) total += p[s] = std::exp(p[s] - top);
    for (int64_t s = 0; s < t_len; ++s) p[s] /= total;
    for (int64_t s = 0; s < t_len; ++s)
      for (int64_t c = 0; c < d_k; ++c) out.data()[t * d_k + c] += p[s] * v.data()[s * d_k + c];
  }
  return out;
}

// What section 1 computes and section 2 compares against.
struct ByHand {
  Tensor x;                   // [1, T, D] the input
  Tensor output;              // [1, T, D] MultiHead(x, x, x)
  std::vector<Tensor> q;      // per head [T, K]: x W_i^Q
  std::vector<Tensor> probs;  // per head [T, T]
};

ByHand heads_by_hand(nn::MultiHeadAttention& mha, const std::vector<std::string>& words, Rng& rng,
                     Checks& check) {
  banner("1. Heads by hand");
  NoGrad no_grad;
  const int64_t t_len = static_cast<int64_t>(words.size());
  const int64_t d_model = mha.config.d_model, heads = mha.config.heads;
  ByHand r;
  r.x = Tensor::randn({1, t_len, d_model}, rng);    // six token vectors, one per word
  const Tensor x = reshape(r.x, {t_len, d_model});  // [T, D]: B = 1, so drop it by hand

  // [snippet: heads-by-hand]
  const int64_t d_k = d_model / heads;  // K: each head works in d_model / h dimensions
  std::vector<Tensor> head_outputs;
  for (int64_t i = 0; i < heads; ++i) {
    // A Linear stores W^T ([out, in]), so head i's W_i^Q [D, K], columns i*K .. (i+1)*K of
    // the paper's W^Q, is rows i*K .. (i+1)*K of q.weight. It reads ALL D input features:
    // what is split among the heads is the projection's output, not the input.
    const int64_t lo = i * d_k, hi = lo + d_k;
    const auto project = [&](const nn::Linear& w) {  // x W_i + b_i: [T, D] -> [T, K]
      return linear(x, slice(w.weight, 0, lo, hi), slice(w.bias, 0, lo, hi));
    };
    const Tensor q_i = project(mha.q), k_i = project(mha.k), v_i = project(mha.v);
    Tensor probs;                                                     // [T, T]
    head_outputs.push_back(attention_by_hand(q_i, k_i, v_i, probs));  // head_i [T, K]
    r.q.push_back(q_i);
    r.probs.push_back(probs);
  }
  // MultiHead(x) = Concat(head_1, ..., head_h) W^O: [T, h K] = [T, D] -> [T, D]
  const Tensor output = mha.o.forward(concat(head_outputs, 1));
  // [/snippet]
  r.output = reshape(output, {1, t_len, d_model});

  fmt::print("  {} tokens, d_model = {}, h = {} heads of d_k = d_model / h = {}\n\n", t_len,
             d_model, heads, d_k);
  fmt::print("  each head's attention weights, query (row) over key (column):\n\n");
  const int width = 6 * static_cast<int>(t_len), gap = 4;
  fmt::print("  {:<6}", "");
  for (int64_t i = 0; i < heads; ++i)
    fmt::print("{:>{}}{:<{}}", "", i > 0 ? gap : 0, fmt::format("   head {}", i + 1),
               i + 1 < heads ? width : 0);
  fmt::print("\n  {:<6}", "");
  for (int64_t i = 0; i < heads; ++i) {
    fmt::print("{:>{}}", "", i > 0 ? gap : 0);
    for (const std::string& w : words) fmt::print("{:>6}", w);
  }
  fmt::print("\n");
  for (int64_t t = 0; t < t_len; ++t) {
    fmt::print("  {:<6}", words[static_cast<size_t>(t)]);
    for (int64_t i = 0; i < heads; ++i) {
      fmt::print("{:>{}}", "", i > 0 ? gap : 0);
      for (int64_t s = 0; s < t_len; ++s)
        fmt::print("{:>6.2f}", r.probs[static_cast<size_t>(i)].at({t, s}));
    }
    fmt::print("\n");
  }
  float tv = 0.0f;  // mean total variation distance between the two heads' rows
  for (int64_t t = 0; t < t_len; ++t)
    for (int64_t s = 0; s < t_len; ++s)
      tv += 0.5f * std::abs(r.probs[0].at({t, s}) - r.probs[1].at({t, s}));
  tv /= static_cast<float>(t_len);
  fmt::print("\n  the two heads' rows differ by a total variation distance of {:.2f} on average\n",
             tv);
  fmt::print("  (0: identical, 1: no overlap), with random weights and the same input\n\n");
  check(output.shape() == Shape({t_len, d_model}),
        fmt::format("{} heads of [{}, {}] concatenate to [{}, {}], the input's width", heads, t_len,
                    d_k, t_len, d_model));
  check(tv > 0.01f, "the heads see the same tokens but weight them differently");
  return r;
}

// ---- 2. The reshape trick ----

// The picture: q [B, T, D] and its [T, K] blocks in qh [B, H, T, K], one per head, on one
// colour scale.
void draw_head_blocks(const Tensor& q, const Tensor& qh, const std::vector<std::string>& words,
                      const std::string& out_dir) {
  const int64_t t = qh.dim(2), h = qh.dim(1), d_k = qh.dim(3), d_model = q.dim(2);
  std::vector<std::string> cols;
  for (int64_t i = 0; i < h; ++i)
    for (int64_t c = 0; c < d_k; ++c) cols.push_back(fmt::format("{}.{}", i + 1, c + 1));
  float lo = 0.0f, hi = 0.0f;
  for (int64_t n = 0; n < q.numel(); ++n) {
    lo = std::min(lo, q.data()[n]);
    hi = std::max(hi, q.data()[n]);
  }
  const float range = std::ceil(std::max(-lo, hi) * 2.0f) / 2.0f;
  const auto options = [&](std::string title, std::vector<std::string> col_labels) {
    return viz::HeatmapOptions{.title = std::move(title),
                               .row_labels = words,
                               .col_labels = std::move(col_labels),
                               .row_axis = "token",
                               .col_axis = "feature (head.index)",
                               .vmin = -range,
                               .vmax = range,
                               .cell_size = 50,
                               .colour_bar = false,
                               .show_values = true};
  };
  std::vector<viz::Image> panels = {
      viz::heatmap(reshape(q, {t, d_model}), options("q = x W^Q + b  [T, D]", cols))};
  for (int64_t i = 0; i < h; ++i) {
    std::vector<std::string> block(cols.begin() + i * d_k, cols.begin() + (i + 1) * d_k);
    panels.push_back(
        viz::heatmap(reshape(slice(qh, 1, i, i + 1), {t, d_k}),
                     options(fmt::format("head {} = qh[0, {}]  [T, K]", i + 1, i), block)));
  }
  const std::string path = out_dir + "/reshape.png";
  viz::write_png(viz::grid(panels, h + 1, "reshape + transpose: head i is column block i of q"),
                 path);
  fmt::print("  wrote {}\n", path);
}

// The largest difference, over the heads, of each head's queries and attention weights in the
// reshaped tensors qh [B, H, T, K] and weights [B, H, T, T] from section 1's by hand.
std::pair<float, float> differences_per_head(const Tensor& qh, const Tensor& weights,
                                             const ByHand& hand) {
  const int64_t heads = qh.dim(1), t = qh.dim(2), d_k = qh.dim(3);
  float q_diff = 0.0f, p_diff = 0.0f;
  for (int64_t i = 0; i < heads; ++i) {
    const Tensor qi = reshape(slice(qh, 1, i, i + 1), {t, d_k});
    q_diff = std::max(q_diff, max_abs_diff(qi, hand.q[static_cast<size_t>(i)]));
    p_diff =
        std::max(p_diff, max_abs_diff(head_probs(weights, i), hand.probs[static_cast<size_t>(i)]));
  }
  return {q_diff, p_diff};
}

void reshape_trick(nn::MultiHeadAttention& mha, const ByHand& hand,
                   const std::vector<std::string>& words, const std::string& out_dir,
                   Checks& check) {
  banner("2. The reshape trick");
  NoGrad no_grad;
  const Tensor& x = hand.x;
  const int64_t d_model = mha.config.d_model, heads = mha.config.heads;
  fmt::print("  {:<44} {}\n", "step", "shape");
  const auto show = [](const char* what, const Tensor& t) {
    fmt::print("  {:<44} {}\n", what, t.shape());
  };
  // [snippet: reshape-trick]
  const int64_t b = x.dim(0), t = x.dim(1), h = heads, d_k = d_model / heads;
  const Tensor q = mha.q.forward(x);             // [B, T, D]    x W_i^Q of every head, side by side
  const Tensor q4 = reshape(q, {b, t, h, d_k});  // [B, T, H, K] the same numbers: no copy
  const Tensor qh = transpose(q4, 1, 2);         // [B, H, T, K] head i is one [T, K] matrix
  const auto split_heads = [&](const Tensor& z) {  // k and v alike
    return transpose(reshape(z, {b, t, h, d_k}), 1, 2);
  };
  const Tensor kh = split_heads(mha.k.forward(x));  // [B, H, T, K]
  const Tensor vh = split_heads(mha.v.forward(x));  // [B, H, T, K]
  // scores [B, H, T, T]: matmul treats [B, H] as batch dimensions, so one call serves all heads.
  const Tensor scores = matmul(qh, transpose(kh, 2, 3)) / std::sqrt(static_cast<float>(d_k));
  const Tensor weights = softmax(scores);        // [B, H, T, T]
  const Tensor heads_out = matmul(weights, vh);  // [B, H, T, K] head_1, ..., head_h
  // Concat(head_1, ..., head_h) is the same two steps backwards, then W^O.
  const Tensor back = transpose(heads_out, 1, 2);              // [B, T, H, K]
  const Tensor concatenated = reshape(back, {b, t, d_model});  // [B, T, D]
  const Tensor y = mha.o.forward(concatenated);                // [B, T, D]
  // [/snippet]
  show("x", x);
  show("q = x W^Q + b", q);
  show("reshape(q, {B, T, H, K})", q4);
  show("transpose(., 1, 2)          (k, v alike)", qh);
  show("scores = q k^T / sqrt(K)", scores);
  show("weights = softmax(scores)", weights);
  show("heads = weights v", heads_out);
  show("transpose(heads, 1, 2)", back);
  show("reshape(., {B, T, D})       Concat", concatenated);
  show("y = Concat(...) W^O + b", y);

  // The library's module, with the same weights.
  mha.record_attention = true;
  const Tensor library = mha.forward(x, x);
  mha.record_attention = false;

  const auto [q_diff, p_diff] = differences_per_head(qh, weights, hand);
  // [snippet: wrong-split]
  // A tempting shortcut, and a silent bug: reshape straight to [B, H, T, K]. q's numbers lie in
  // the order (t, i, k), so this cuts them into h runs of T*K numbers: "head 1" gets the first
  // T/h tokens with ALL their features. Every shape is right, so nothing complains.
  const auto wrong_split = [&](const Tensor& z) {
    return reshape(z, {b, h, t, d_k});
  };
  const Tensor wrong_weights =
      softmax(matmul(wrong_split(q), transpose(wrong_split(mha.k.forward(x)), 2, 3)) /
              std::sqrt(static_cast<float>(d_k)));
  const Tensor wrong_heads = matmul(wrong_weights, wrong_split(mha.v.forward(x)));  // [B, H, T, K]
  const Tensor y_wrong = mha.o.forward(reshape(wrong_heads, {b, t, d_model}));      // [B, T, D]
  // [/snippet]
  const float y_diff = max_abs_diff(y, hand.output);
  const float lib_diff = max_abs_diff(library, hand.output);
  fmt::print("\n  {:<52} {:>9}\n", "compared with the heads by hand", "max diff");
  fmt::print("  {:<52} {:>9.1e}\n", "head i of transpose(reshape(q)) vs x W_i^Q + b_i", q_diff);
  fmt::print("  {:<52} {:>9.1e}\n", "attention weights, all heads", p_diff);
  fmt::print("  {:<52} {:>9.1e}\n", "y, reshape trick", y_diff);
  fmt::print("  {:<52} {:>9.1e}\n", "y, MultiHeadAttention::forward", lib_diff);
  fmt::print("  {:<52} {:>9.1e}\n\n", "y, reshape straight to [B, H, T, K] (the bug)",
             max_abs_diff(y_wrong, hand.output));
  check(q4.data() == q.data(), "reshape to [B, T, H, K] shares q's storage: it moves no number");
  check(qh.data() != q.data() && q4.at({0, 2, 1, 3}) == q.at({0, 2, 1 * d_k + 3}),
        "element [b, t, i, k] of the reshape is column i*K + k of q (so head i = block i)");
  check(q_diff <= 1e-5f, "head i of the [B, H, T, K] tensor equals x W_i^Q + b_i by hand");
  check(p_diff <= 1e-5f, "one batched softmax gives every head's weights from section 1");
  check(y_diff <= 1e-5f, "the reshape trick equals the loops over heads (1e-5)");
  check(lib_diff <= 1e-5f && max_abs_diff(mha.last_attention, weights) <= 1e-6f,
        "MultiHeadAttention::forward computes the same y and the same weights");
  check(y_wrong.shape() == y.shape() && max_abs_diff(y_wrong, hand.output) > 0.1f,
        "without the transpose, every shape is right and y is wrong");

  draw_head_blocks(q, qh, words, out_dir);
}

// ---- 3. The same parameters for any h ----

void parameter_count(bool quick, uint64_t seed, Checks& check) {
  banner("3. The same parameters for any h");
  const int64_t d_model = quick ? 64 : 512, t_len = quick ? 32 : 128;
  fmt::print("  d_model = {}, T = {} tokens, self-attention on one sequence\n\n", d_model, t_len);
  fmt::print("  {:>3} {:>5} {:>12} {:>14} {:>14} {:>11} {:>10} {:>12}\n", "h", "d_k", "parameters",
             "projections", "q k^T + a v", "softmax", "forward", "h full heads");
  fmt::print("  {:>3} {:>5} {:>12} {:>14} {:>14} {:>11} {:>10} {:>12}\n", "", "", "", "mult-adds",
             "mult-adds", "exps", "time", "parameters");
  Rng rng(seed);
  const Tensor x = Tensor::randn({1, t_len, d_model}, rng);
  const int64_t expected = 4 * (d_model * d_model + d_model);
  bool counts_equal = true, work_equal = true;
  std::vector<double> times;
  for (const int64_t h : {1, 2, 4, 8}) {
    nn::MultiHeadAttention mha({.d_model = d_model, .heads = h}, rng);
    const int64_t d_k = d_model / h;
    // [snippet: counting]
    const int64_t params = mha.parameter_count();  // q, k, v, o: D x D weights + D biases
    const int64_t projections = 4 * t_len * d_model * d_model;  // x W^Q, x W^K, x W^V, Concat W^O
    const int64_t attend = 2 * h * t_len * t_len * d_k;  // q k^T and weights v, per head T*T*K
    const int64_t exps = h * t_len * t_len;              // one softmax row per head and query
    // h heads of full width D would need h times the q, k, v projections and a W^O of hD x D.
    const int64_t full_width =
        3 * h * (d_model * d_model + d_model) + h * d_model * d_model + d_model;
    // [/snippet]
    NoGrad no_grad;
    const double seconds = fastest_of(quick ? 2 : 5, [&] { mha.forward(x, x); });
    times.push_back(seconds);
    fmt::print("  {:>3} {:>5} {:>12} {:>14} {:>14} {:>11} {:>7.2f} ms {:>12}\n", h, d_k, params,
               projections, attend, exps, 1e3 * seconds, full_width);
    counts_equal = counts_equal && params == expected;
    work_equal = work_equal && attend == 2 * t_len * t_len * d_model;
  }
  const auto [fastest, slowest] = std::minmax_element(times.begin(), times.end());
  fmt::print("\n  the slowest h took {:.2f}x the time of the fastest (your times will differ)\n\n",
             *slowest / *fastest);
  check(counts_equal,
        fmt::format("every h has 4 (D^2 + D) = {} parameters, one full-width head's", expected));
  check(work_equal, "q k^T and weights v cost 2 T^2 D multiply-adds for every h");
}

// The base model's scaling: d_k = 512 / 8 = 64 per head, so the scores of lesson 02 are
// divided by sqrt(64) = 8, not by sqrt(512). Recomputes head 1's weights of a {512, 8} layer
// with both scales and compares them with what the layer computed.
void base_model_scale(uint64_t seed, Checks& check) {
  NoGrad no_grad;
  Rng rng(seed);
  const int64_t d_model = 512, heads = 8, d_k = d_model / heads, t_len = 6;
  nn::MultiHeadAttention mha({.d_model = d_model, .heads = heads}, rng);
  const Tensor x = Tensor::randn({t_len, d_model}, rng);
  mha.record_attention = true;
  mha.forward(reshape(x, {1, t_len, d_model}), reshape(x, {1, t_len, d_model}));
  const Tensor library = reshape(slice(mha.last_attention, 1, 0, 1), {t_len, t_len});  // head 1
  const auto head1 = [&](const nn::Linear& w) {  // x W_1 + b_1: [T, D] -> [T, d_k]
    return linear(x, slice(w.weight, 0, 0, d_k), slice(w.bias, 0, 0, d_k));
  };
  const Tensor dots = matmul(head1(mha.q), transpose(head1(mha.k), 0, 1));  // [T, T]
  const float right = 1.0f / std::sqrt(static_cast<float>(d_k));
  const float wrong = 1.0f / std::sqrt(static_cast<float>(d_model));
  const float d_right = max_abs_diff(softmax(dots * right), library);
  const float d_wrong = max_abs_diff(softmax(dots * wrong), library);
  fmt::print(
      "  base model, h = {}: d_k = {} / {} = {}; head 1's weights recomputed\n"
      "    with 1/sqrt({}) = {:.4f}: max diff {:.1e}\n"
      "    with 1/sqrt({}) = {:.4f}: max diff {:.2f}\n\n",
      heads, d_model, heads, d_k, d_k, right, d_right, d_model, wrong, d_wrong);
  check(d_right <= 1e-5f && d_wrong > 0.01f,
        fmt::format("the base model's heads have d_k = {}: the layer divides the scores by "
                    "sqrt({}) = {:.0f}, not by sqrt({})",
                    d_k, d_k, 1.0f / right, d_model));
}

// ---- 4. Heads that learn different things ----

// The task: a ring of T letters from an alphabet of V; at every position, name the letter
// before it and the letter after it. Input = one-hot letter (V) next to one-hot position (T),
// so D = V + T and attention can find neighbours by position and read letters by value.
constexpr int64_t kV = 8, kT = 8, kD = kV + kT;

struct NeighbourBatch {
  Tensor x;             // [B, T, D]
  IndexTensor targets;  // [B, T, 2]: the letter at t - 1, the letter at t + 1 (on the ring)
  IndexTensor letters;  // [B, T]
};

NeighbourBatch neighbour_batch(const std::vector<int32_t>& letters, int64_t batch) {
  const auto letter = [&](int64_t n, int64_t t) {  // ring n's letter at t, wrapping around
    return letters[static_cast<size_t>(n * kT + (t + kT) % kT)];
  };
  NeighbourBatch r{Tensor::zeros({batch, kT, kD}), IndexTensor::zeros({batch, kT, 2}),
                   IndexTensor::from({batch, kT}, letters)};
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t t = 0; t < kT; ++t) {
      float* row = r.x.data() + (n * kT + t) * kD;
      row[letter(n, t)] = 1.0f;  // which letter
      row[kV + t] = 1.0f;        // where it stands
      int32_t* target = r.targets.data() + (n * kT + t) * 2;
      target[0] = letter(n, t - 1);
      target[1] = letter(n, t + 1);
    }
  return r;
}

NeighbourBatch random_batch(int64_t batch, Rng& rng) {
  std::vector<int32_t> letters(static_cast<size_t>(batch * kT));
  for (int32_t& l : letters) l = static_cast<int32_t>(rng.below(kV));
  return neighbour_batch(letters, batch);
}

// [snippet: model]
// One multi-head self-attention layer and a linear read-out: [B, T, D] -> logits [B, T, 2, V]
// for the letter before and the letter after. Its parameter count does not depend on h.
struct NeighbourModel : nn::Module {
  nn::MultiHeadAttention attn;
  nn::Linear readout;
  NeighbourModel(int64_t heads, Rng& rng)
      : attn({.d_model = kD, .heads = heads}, rng), readout(kD, 2 * kV, rng) {
    register_module("attn", attn);
    register_module("readout", readout);
  }
  Tensor forward(const Tensor& x) {
    return reshape(readout.forward(attn.forward(x, x)), {x.dim(0), kT, 2, kV});
  }
};
// [/snippet]

struct Accuracy {
  float before = 0, after = 0, both = 0;  // fractions of positions
};

Accuracy accuracy(NeighbourModel& model, const NeighbourBatch& data) {
  NoGrad no_grad;
  const Tensor logits = model.forward(data.x);  // [B, T, 2, V]
  Accuracy a;
  const int64_t positions = data.letters.numel();
  for (int64_t p = 0; p < positions; ++p) {
    bool right[2];
    for (int64_t side = 0; side < 2; ++side) {
      const float* l = logits.data() + (p * 2 + side) * kV;
      const int64_t guess = std::max_element(l, l + kV) - l;
      right[side] = guess == data.targets.data()[p * 2 + side];
    }
    a.before += right[0] ? 1.0f : 0.0f;
    a.after += right[1] ? 1.0f : 0.0f;
    a.both += right[0] && right[1] ? 1.0f : 0.0f;
  }
  const float n = static_cast<float>(positions);
  return {a.before / n, a.after / n, a.both / n};
}

// The attention probabilities [B, H, T, T] of the model's layer on data.
Tensor attention_on(NeighbourModel& model, const Tensor& x) {
  NoGrad no_grad;
  model.attn.record_attention = true;
  model.forward(x);
  model.attn.record_attention = false;
  return model.attn.last_attention;
}

// Where each head's attention goes, averaged over a batch: the mass on offsets -1, 0, +1 from
// the query (on the ring) and elsewhere. p [B, H, T, T]; returns [H][4].
std::vector<std::array<float, 4>> mass_by_offset(const Tensor& p) {
  const int64_t b = p.dim(0), h = p.dim(1);
  std::vector<std::array<float, 4>> mass(static_cast<size_t>(h), {0, 0, 0, 0});
  for (int64_t n = 0; n < b; ++n)
    for (int64_t i = 0; i < h; ++i)
      for (int64_t t = 0; t < kT; ++t)
        for (int64_t s = 0; s < kT; ++s) {
          const int64_t offset = (s - t + kT) % kT;  // 0, 1, ..., T-1 on the ring
          const size_t slot = offset == kT - 1 ? 0 : offset == 0 ? 1 : offset == 1 ? 2 : 3;
          mass[static_cast<size_t>(i)][slot] +=
              p.data()[((n * h + i) * kT + t) * kT + s] / static_cast<float>(b * kT);
        }
  return mass;
}

// How differently heads i and j spread their attention: the total variation distance
// 1/2 sum_s |p_i(s) - p_j(s)| between their rows, averaged over queries. 0 when the heads
// agree, 1 when they never look at the same key.
float head_distance(const Tensor& p, int64_t i, int64_t j) {
  const int64_t b = p.dim(0), h = p.dim(1);
  double d = 0.0;
  for (int64_t n = 0; n < b; ++n)
    for (int64_t t = 0; t < kT; ++t)
      for (int64_t s = 0; s < kT; ++s)
        d += 0.5 * std::abs(p.data()[((n * h + i) * kT + t) * kT + s] -
                            p.data()[((n * h + j) * kT + t) * kT + s]);
  return static_cast<float>(d / static_cast<double>(b * kT));
}

// One model of h heads, trained: what section 4 prints, checks and draws of it.
struct TrainedHeads {
  std::vector<float> initial_weights{};  // before the first step
  Accuracy held_out{};                   // on the held-out rings, after the last step
  int64_t parameters = 0;
  Tensor test_probs{};               // its attention on the held-out rings [B, H, T, T]
  viz::Series curve{};               // held-out accuracy (both neighbours) while it trains
  std::vector<viz::Image> panels{};  // one heatmap per head, on the example ring
  double seconds = 0;                // the training's
};

// Trains a model of h heads for `steps` steps of Adam on fresh batches; every h starts from the
// same weights and sees the same batches. test: the held-out rings; example: the ring drawn,
// with its letters as labels.
TrainedHeads train_heads(int64_t h, int steps, int batch, int eval_every, uint64_t seed,
                         const NeighbourBatch& test, const NeighbourBatch& example,
                         const std::vector<std::string>& labels) {
  TrainedHeads r;
  Rng rng(seed);
  NeighbourModel model(h, rng);  // the same rng draws: the same initial weights for every h
  for (const Tensor& p : model.parameters())
    for (const float w : p.to_vector()) r.initial_weights.push_back(w);
  nn::Adam adam(model.parameters(), {.lr = 0.02f});
  viz::Series curve{.name = fmt::format("{} head{} of d_k = {}", h, h > 1 ? "s" : "", kD / h)};
  const auto start = std::chrono::steady_clock::now();
  const auto record = [&](int step) {  // accuracy on the held-out rings, for the plot
    curve.xs.push_back(static_cast<float>(step));
    curve.ys.push_back(100.0f * accuracy(model, test).both);
  };
  record(0);
  // [snippet: training]
  for (int step = 1; step <= steps; ++step) {
    const NeighbourBatch data = random_batch(batch, rng);     // fresh rings every step
    const Tensor logits = model.forward(data.x);              // [B, T, 2, V]
    const Tensor loss = cross_entropy(logits, data.targets);  // targets [B, T, 2]: both answers
    loss.backward();
    adam.step();
    adam.zero_grad();
    if (step % eval_every == 0) record(step);
  }
  // [/snippet]
  r.seconds = seconds_since(start);
  r.held_out = accuracy(model, test);
  r.parameters = model.parameter_count();
  r.test_probs = attention_on(model, test.x);
  r.curve = curve;

  // One heatmap per head, on the example ring.
  const Tensor probs = attention_on(model, example.x);  // [1, H, T, T]
  for (int64_t i = 0; i < h; ++i)
    r.panels.push_back(
        viz::heatmap(head_probs(probs, i),
                     {.title = h == 1 ? fmt::format("1 head, d_k = {}", kD)
                                      : fmt::format("head {} of {}, d_k = {}", i + 1, h, kD / h),
                      .row_labels = labels,
                      .col_labels = labels,
                      .value_label = "weight",
                      .cell_size = 24,
                      .colour_bar = i + 1 == h}));
  return r;
}

// Where each head looks, printed: its mean attention weight by offset from the query, and how
// far apart the heads of each model are. test_probs[m] is the attention [B, H, T, T] of the
// model with head_counts[m] heads; returns mass_by_offset of each.
std::vector<std::vector<std::array<float, 4>>> where_heads_look(
    const std::vector<int64_t>& head_counts, const std::vector<Tensor>& test_probs) {
  fmt::print("\n  where each head looks: its mean attention weight by offset from the query\n\n");
  fmt::print("  {:>3} {:>5} {:>8} {:>8} {:>8} {:>10}\n", "h", "head", "t - 1", "t", "t + 1",
             "elsewhere");
  std::vector<std::vector<std::array<float, 4>>> mass;
  for (size_t m = 0; m < head_counts.size(); ++m) {
    mass.push_back(mass_by_offset(test_probs[m]));
    for (size_t i = 0; i < mass[m].size(); ++i)
      fmt::print("  {:>3} {:>5} {:>8.2f} {:>8.2f} {:>8.2f} {:>10.2f}\n", head_counts[m], i + 1,
                 mass[m][i][0], mass[m][i][1], mass[m][i][2], mass[m][i][3]);
  }
  fmt::print("\n  distance between heads (total variation, 0 = same weights, 1 = disjoint):\n");
  for (size_t m = 1; m < head_counts.size(); ++m) {
    fmt::print("  h = {}:", head_counts[m]);
    for (int64_t i = 0; i < head_counts[m]; ++i)
      for (int64_t j = i + 1; j < head_counts[m]; ++j)
        fmt::print("  {}-{} {:.2f}", i + 1, j + 1, head_distance(test_probs[m], i, j));
    fmt::print("\n");
  }
  return mass;
}

// The pictures: the heatmaps of each model's heads, one row per model (rows[m], padded with
// blank panels to the widest row), and the training curves.
void draw_heads(const std::vector<std::vector<viz::Image>>& rows,
                const std::vector<viz::Series>& curves, const std::string& out_dir) {
  std::vector<viz::Image> all;
  const size_t columns = rows.back().size();
  for (const std::vector<viz::Image>& row : rows)
    for (size_t i = 0; i < columns; ++i)
      all.push_back(i < row.size() ? row[i] : viz::Image(row[0].width(), row[0].height()));
  const std::string heads_path = out_dir + "/heads.png";
  viz::write_png(
      viz::grid(all, static_cast<int64_t>(columns),
                "name the letters before and after: one trained layer per row, one panel per head"),
      heads_path);
  const std::string curve_path = out_dir + "/training.png";
  viz::write_png(viz::line_plot(curves, {.title = "both neighbours named right (held-out rings)",
                                         .y_label = "accuracy (%)"}),
                 curve_path);
  fmt::print("\n  wrote {}\n  wrote {}\n\n", heads_path, curve_path);
}

void heads_that_differ(bool quick, uint64_t seed, const std::string& out_dir, Checks& check) {
  banner("4. Heads that learn different things");
  const int steps = quick ? 160 : 300, batch = 32, eval_every = quick ? 20 : 10;
  Rng test_rng(seed + 100);
  const NeighbourBatch test = random_batch(200, test_rng);  // held out: never trained on
  // An example whose letters all differ, so that each label names one position.
  const std::vector<int32_t> example_letters = {2, 5, 0, 7, 3, 6, 1, 4};
  const NeighbourBatch example = neighbour_batch(example_letters, 1);
  std::vector<std::string> labels;
  for (int32_t l : example_letters) labels.push_back(std::string(1, static_cast<char>('A' + l)));

  fmt::print("  rings of {} letters from {} (A..H); input = one-hot letter + one-hot position,\n",
             kT, kV);
  fmt::print("  d_model = {} + {} = {}; {} steps of Adam on batches of {} fresh rings;\n", kV, kT,
             kD, steps, batch);
  fmt::print("  the same initial weights, data and parameter count for every h\n\n");
  fmt::print("  accuracy on {} held-out rings ({} positions)\n\n", test.x.dim(0),
             test.letters.numel());
  fmt::print("  {:>3} {:>5} {:>11} {:>9} {:>9} {:>9} {:>8}\n", "h", "d_k", "parameters", "before",
             "after", "both", "time");
  const std::vector<int64_t> head_counts = {1, 2, 4};
  std::vector<viz::Series> curves;
  std::vector<std::vector<viz::Image>> rows;
  std::vector<Accuracy> results;
  std::vector<int64_t> params;
  std::vector<Tensor> test_probs;
  std::vector<float> initial_weights;
  bool same_start = true;
  for (const int64_t h : head_counts) {
    const TrainedHeads t = train_heads(h, steps, batch, eval_every, seed, test, example, labels);
    same_start = same_start && (initial_weights.empty() || t.initial_weights == initial_weights);
    initial_weights = t.initial_weights;
    const Accuracy& a = t.held_out;
    results.push_back(a);
    params.push_back(t.parameters);
    test_probs.push_back(t.test_probs);
    curves.push_back(t.curve);
    fmt::print("  {:>3} {:>5} {:>11} {:>8.1f}% {:>8.1f}% {:>8.1f}% {:>6.2f} s\n", h, kD / h,
               params.back(), 100 * a.before, 100 * a.after, 100 * a.both, t.seconds);
    rows.push_back(t.panels);
  }

  const std::vector<std::vector<std::array<float, 4>>> mass =
      where_heads_look(head_counts, test_probs);
  draw_heads(rows, curves, out_dir);

  const float goal = quick ? 0.9f : 0.99f;
  const auto& one = mass[0][0];
  const auto& two = mass[1];
  const float sharp = quick ? 0.6f : 0.75f, apart = quick ? 0.5f : 0.6f;
  const bool split =
      (two[0][0] >= sharp && two[1][2] >= sharp) || (two[0][2] >= sharp && two[1][0] >= sharp);
  check(params[0] == params[1] && params[1] == params[2] && same_start,
        fmt::format("the models for h = 1, 2, 4 have the same {} parameters, and start from "
                    "the same values",
                    params[0]));
  check(results[1].both >= goal, fmt::format("2 heads of d_k = {} name both neighbours ({:.1f}%)",
                                             kD / 2, 100 * results[1].both));
  check(split, fmt::format("of the 2 heads, one puts >= {:.0f}% of its weight on t - 1, the "
                           "other on t + 1",
                           100 * sharp));
  check(head_distance(test_probs[1], 0, 1) >= apart,
        fmt::format("the 2 heads' weights are far apart (total variation >= {})", apart));
  check(results[0].both <= 0.5f, fmt::format("1 head of d_k = {} names both in at most half the "
                                             "positions ({:.1f}%)",
                                             kD, 100 * results[0].both));
  check(one[0] >= 0.25f && one[2] >= 0.25f,
        fmt::format("the single head averages: {:.2f} of its weight on t - 1, {:.2f} on t + 1",
                    one[0], one[2]));
  check(std::max(results[0].before, results[0].after) >= (quick ? 0.6f : 0.9f) &&
            std::min(results[0].before, results[0].after) <= 0.5f,
        "from that average the read-out recovers one neighbour, not both");
}

// ---- Shared by sections 2 and 4 ----

Tensor head_probs(const Tensor& probs, int64_t head) {
  const int64_t t = probs.dim(2);
  return reshape(slice(probs, 1, head, head + 1), {t, t});
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Lesson 04: multi-head attention"};
  LessonFlags flags(app, "04_multi_head", "a smaller run, in about a second",
                    "seed for the random inputs, weights and data");
  CLI11_PARSE(app, argc, argv);

  Checks check;
  try {
    Rng rng(flags.seed);
    const std::vector<std::string> words = {"the", "cat", "sat", "on", "a", "mat"};
    nn::MultiHeadAttention mha({.d_model = 8, .heads = 2}, rng);
    // Random biases too (the library starts them at 0), so that slicing them is tested.
    for (nn::Linear* layer : {&mha.q, &mha.k, &mha.v, &mha.o})
      for (int64_t i = 0; i < layer->bias.numel(); ++i) layer->bias.data()[i] = 0.3f * rng.normal();
    const ByHand hand = heads_by_hand(mha, words, rng, check);
    reshape_trick(mha, hand, words, flags.out(), check);
    parameter_count(flags.quick, flags.seed, check);
    base_model_scale(flags.seed, check);
    heads_that_differ(flags.quick, flags.seed, flags.out(), check);
  } catch (const std::exception& e) {
    fmt::print("\nlesson 04: stopped by an exception: {}\n", e.what());
    return 1;
  }
  return check.summary("lesson 04");
}
