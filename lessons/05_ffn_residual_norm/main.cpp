// Lesson 05: the position-wise feed-forward network, residual connections, LayerNorm versus
// BatchNorm.
//
// Around each attention layer the Transformer puts three plainer pieces: a two-layer MLP
// applied to every position on its own, a residual connection x + Sublayer(x), and a
// LayerNorm. Three sections ask what each one does: the FFN computed token by token and
// checked against nn::PositionwiseFeedForward, gradient norms through a deep stack with and
// without residual connections, and LayerNorm against BatchNorm on padded batches of
// sequences of very different lengths. README.md is the text that walks through this file.
// Every claim is checked; a failed check makes the program exit with 1.
//
// Shape legend: B batch, T sequence length, D d_model, F d_ff.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <exception>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "autograd/graph.h"
#include "autograd/ops.h"
#include "autograd/random.h"
#include "autograd/tensor.h"
#include "lessons/lesson.h"
#include "nn/batch_norm.h"
#include "nn/feed_forward.h"
#include "nn/layers.h"
#include "nn/module.h"
#include "viz/heatmap.h"
#include "viz/line_plot.h"
#include "viz/png.h"

using namespace gf;
using namespace gf::lessons;

namespace {

// ---- 1. The position-wise FFN ----

void feed_forward(Rng& rng, Checks& check) {
  banner("1. The position-wise FFN");
  NoGrad no_grad;
  const int64_t b = 2, t_len = 5, d_model = 16, d_ff = 4 * d_model;
  nn::PositionwiseFeedForward ffn(d_model, d_ff, rng);
  for (nn::Linear* layer : {&ffn.linear1, &ffn.linear2})  // random biases, so they are tested
    for (int64_t i = 0; i < layer->bias.numel(); ++i) layer->bias.data()[i] = 0.2f * rng.normal();
  const Tensor x = Tensor::randn({b, t_len, d_model}, rng);
  const Tensor y = ffn.forward(x);  // [B, T, D], all positions at once

  // [snippet: ffn-by-hand]
  // FFN(x) = max(0, x W1 + b1) W2 + b2 for ONE position: x is a row of D numbers. A Linear
  // stores W^T ([out, in]), so (x W1)_f = sum_d x_d linear1.weight[f, d].
  const auto ffn_one_position = [&](const float* x_row, float* y_row) {
    const float* w1 = ffn.linear1.weight.data();  // [F, D]
    const float* w2 = ffn.linear2.weight.data();  // [D, F]
    std::vector<float> hidden(static_cast<size_t>(d_ff));
    for (int64_t f = 0; f < d_ff; ++f) {
      float s = ffn.linear1.bias.data()[f];
      for (int64_t d = 0; d < d_model; ++d) s += x_row[d] * w1[f * d_model + d];
      hidden[static_cast<size_t>(f)] = std::max(0.0f, s);  // ReLU
    }
    for (int64_t d = 0; d < d_model; ++d) {
      float s = ffn.linear2.bias.data()[d];
      for (int64_t f = 0; f < d_ff; ++f) s += hidden[static_cast<size_t>(f)] * w2[d * d_ff + f];
      y_row[d] = s;
    }
  };
  // The same function, the same weights, at every (b, t): no position sees another.
  Tensor by_hand = Tensor::zeros({b, t_len, d_model});
  for (int64_t n = 0; n < b * t_len; ++n)
    ffn_one_position(x.data() + n * d_model, by_hand.data() + n * d_model);
  // [/snippet]

  // One position alone through the library module: a [1, 1, D] input.
  float alone_diff = 0.0f;
  for (int64_t n = 0; n < b; ++n)
    for (int64_t t = 0; t < t_len; ++t) {
      const Tensor one = slice(slice(x, 0, n, n + 1), 1, t, t + 1);
      alone_diff = std::max(
          alone_diff, max_abs_diff(ffn.forward(one), slice(slice(y, 0, n, n + 1), 1, t, t + 1)));
    }
  // Change one token: only its own output row moves.
  Tensor x2 = x.clone();
  for (int64_t d = 0; d < d_model; ++d) x2.data()[(0 * t_len + 3) * d_model + d] += 1.0f;
  const Tensor y2 = ffn.forward(x2);
  int64_t rows_changed = 0;
  for (int64_t n = 0; n < b * t_len; ++n) {
    bool same = true;
    for (int64_t d = 0; d < d_model; ++d)
      same = same && y.data()[n * d_model + d] == y2.data()[n * d_model + d];
    rows_changed += same ? 0 : 1;
  }

  const auto count = [](int64_t d, int64_t f) {
    return d * f + f + f * d + d;
  };
  fmt::print("  x [{}, {}, {}], d_model = {}, d_ff = 4 d_model = {}\n\n", b, t_len, d_model,
             d_model, d_ff);
  fmt::print("  {:<52} {:>9}\n", "compared with the loops over positions", "max diff");
  fmt::print("  {:<52} {:>9.1e}\n", "PositionwiseFeedForward on [B, T, D]",
             max_abs_diff(y, by_hand));
  fmt::print("  {:<52} {:>9.1e}\n\n", "the module on each position alone, [1, 1, D]", alone_diff);
  fmt::print("  one token changed -> {} of {} output rows changed\n\n", rows_changed, b * t_len);
  fmt::print("  parameters: W1 D x F + b1 F + W2 F x D + b2 D = 2 D F + F + D\n");
  fmt::print("    this lesson  D = {:>3}, F = {:>4}: {:>9}\n", d_model, d_ff,
             ffn.parameter_count());
  fmt::print("    the paper    D = 512, F = 2048: {:>9}  (per layer; attention has {})\n\n",
             count(512, 2048), 4 * (512 * 512 + 512));
  check(max_abs_diff(y, by_hand) <= 1e-5f,
        "the module equals one MLP applied position by position");
  check(alone_diff <= 1e-5f, "a position's output is the same with or without the others");
  check(rows_changed == 1, "changing one token changes exactly one output row");
  check(ffn.parameter_count() == count(d_model, d_ff) && count(512, 2048) == 2099712,
        "2 D F + F + D parameters: 2,099,712 in the paper's base model, twice attention's");
}

// ---- 2. Residual connections ----

// The Euclidean norm of all of t's elements.
float norm(const Tensor& t) {
  double s = 0.0;
  for (int64_t i = 0; i < t.numel(); ++i) s += static_cast<double>(t.data()[i]) * t.data()[i];
  return static_cast<float>(std::sqrt(s));
}

// [snippet: residual-stack]
// A stack of L sub-layers f_i(h) = tanh(h W_i^T + b_i), with or without the residual path.
// probe_i is a zero tensor added to layer i's input: it changes nothing, but it is a leaf, so
// after backward() its grad() is dL/dh_i, the gradient that reaches layer i's input.
std::vector<float> input_gradient_norms(const std::vector<std::unique_ptr<nn::Linear>>& layers,
                                        const Tensor& x, const Tensor& target, bool residual) {
  std::vector<Tensor> probes;
  Tensor h = x;
  for (const auto& layer : layers) {
    Tensor probe = Tensor::zeros(h.shape());
    probe.set_requires_grad();
    probes.push_back(probe);
    h = h + probe;                             // h_i, the input of layer i
    const Tensor f = tanh(layer->forward(h));  // Sublayer(h_i)
    h = residual ? h + f : f;                  // h_{i+1}
  }
  const Tensor loss = mean(pow(h - target, 2.0f));
  loss.backward();
  std::vector<float> norms;
  for (const Tensor& p : probes) norms.push_back(norm(p.grad()));
  return norms;
}
// [/snippet]

void residual_connections(bool quick, Rng& rng, const std::string& out_dir, Checks& check) {
  banner("2. Residual connections");
  const int64_t depth = quick ? 24 : 32, width = 32, batch = 16;
  const Tensor x = Tensor::randn({batch, width}, rng);
  const Tensor target = Tensor::randn({batch, width}, rng);
  // The same layers at two scales: Xavier's weights (gain 1), and the same weights halved.
  std::vector<std::unique_ptr<nn::Linear>> layers;
  for (int64_t i = 0; i < depth; ++i)
    layers.push_back(std::make_unique<nn::Linear>(width, width, rng));
  const std::vector<float> plain_xavier = input_gradient_norms(layers, x, target, false);
  const std::vector<float> resid_xavier = input_gradient_norms(layers, x, target, true);
  const float gain = 0.5f;
  for (const auto& layer : layers)
    for (int64_t i = 0; i < layer->weight.numel(); ++i) layer->weight.data()[i] *= gain;
  const std::vector<float> plain = input_gradient_norms(layers, x, target, false);
  const std::vector<float> resid = input_gradient_norms(layers, x, target, true);

  fmt::print("  {} layers of tanh(Linear({}, {})), batch {}, loss = mean (h_L - target)^2\n\n",
             depth, width, width, batch);
  fmt::print("  {:>6} {:>16} {:>16}   weights = {} x Xavier\n", "layer", "|dL/dh| plain",
             "|dL/dh| residual", gain);
  for (int64_t i = depth - 1; i >= 0; --i)
    if (i % (depth / 8) == 0 || i == depth - 1)
      fmt::print("  {:>6} {:>16.3e} {:>16.3e}\n", i + 1, plain[static_cast<size_t>(i)],
                 resid[static_cast<size_t>(i)]);
  const auto ratio = [](const std::vector<float>& v) {
    return v.front() / v.back();
  };
  fmt::print("\n  bottom / top        {:>10} {:>10}\n", "plain", "residual");
  fmt::print("  {} x Xavier        {:>10.1e} {:>10.2f}\n", gain, ratio(plain), ratio(resid));
  fmt::print("  Xavier (gain 1)     {:>10.1e} {:>10.2f}\n\n", ratio(plain_xavier),
             ratio(resid_xavier));

  std::vector<viz::Series> curves = {{.name = "plain, 0.5 x Xavier"},
                                     {.name = "residual, 0.5 x Xavier"},
                                     {.name = "plain, Xavier"},
                                     {.name = "residual, Xavier"}};
  const std::vector<const std::vector<float>*> data = {&plain, &resid, &plain_xavier,
                                                       &resid_xavier};
  for (size_t c = 0; c < curves.size(); ++c)
    for (int64_t i = 0; i < depth; ++i) {
      curves[c].xs.push_back(static_cast<float>(i + 1));
      curves[c].ys.push_back((*data[c])[static_cast<size_t>(i)]);
    }
  const std::string path = out_dir + "/05_ffn_residual_norm/gradients.png";
  viz::write_png(viz::line_plot(curves, {.title = fmt::format(
                                             "gradient at each layer's input, {} layers", depth),
                                         .x_label = "layer (1 = bottom, nearest the input)",
                                         .y_label = "|dL/dh_i|",
                                         .log_y = true}),
                 path);
  fmt::print("  wrote {}\n\n", path);
  check(ratio(plain) < 1e-6f, fmt::format("without residuals the bottom layer gets {:.1e} of the "
                                          "top layer's gradient",
                                          ratio(plain)));
  check(ratio(resid) > 0.1f && ratio(resid) < 10.0f,
        fmt::format("with residuals it gets {:.2f} of it: within a factor of 10", ratio(resid)));
  bool never_below = true;  // d h_{i+1} / d h_i = I + J_i: the identity carries the gradient
  for (int64_t i = 0; i < depth; ++i)
    never_below = never_below && resid[static_cast<size_t>(i)] >= 0.5f * resid.back();
  check(never_below, "with residuals no layer gets less than half the top layer's gradient");
  check(ratio(plain_xavier) < 0.5f && ratio(resid_xavier) > 1.0f,
        "at Xavier's scale the plain gradient still shrinks and the residual one grows");
}

// ---- 3. LayerNorm versus BatchNorm ----

constexpr int64_t kD = 8;  // features per token

// A sentence of `length` token vectors [length, D]: every feature is 1 + noise, and feature 0
// also carries the position, t / 10 (as a positional encoding would), so long sentences
// reach values that short ones never do.
std::vector<float> sentence(int64_t length, Rng& rng) {
  std::vector<float> v(static_cast<size_t>(length * kD));
  for (int64_t t = 0; t < length; ++t)
    for (int64_t d = 0; d < kD; ++d)
      v[static_cast<size_t>(t * kD + d)] =
          1.0f + rng.normal() + (d == 0 ? static_cast<float>(t) / 10.0f : 0.0f);
  return v;
}

struct Padded {
  Tensor x;     // [B, T, D], zeros after each sentence's end
  Tensor mask;  // [B, T], 1 for a real token, 0 for padding
};

Padded pad(const std::vector<std::vector<float>>& sentences) {
  int64_t t_max = 0;
  for (const auto& s : sentences) t_max = std::max(t_max, static_cast<int64_t>(s.size()) / kD);
  const int64_t b = static_cast<int64_t>(sentences.size());
  Padded p{Tensor::zeros({b, t_max, kD}), Tensor::zeros({b, t_max})};
  for (int64_t n = 0; n < b; ++n) {
    const auto& s = sentences[static_cast<size_t>(n)];
    std::copy(s.begin(), s.end(), p.x.data() + n * t_max * kD);
    for (int64_t t = 0; t < static_cast<int64_t>(s.size()) / kD; ++t)
      p.mask.data()[n * t_max + t] = 1.0f;
  }
  return p;
}

// The picture of which numbers each normalisation averages over: the [B, T, D] block drawn as
// B slabs of T rows (tokens) by D columns (features), one above the other. Cells that share one
// mean and variance with the highlighted cell are bright, padding is grey.
void draw_slices(const std::string& path) {
  const std::vector<int64_t> lengths = {6, 3, 4};
  const int64_t t_max = 6, feature = 2, seq = 1, token = 1;
  std::vector<std::string> rows;
  for (size_t n = 0; n < lengths.size(); ++n)
    for (int64_t t = 0; t < t_max; ++t) rows.push_back(fmt::format("s{} t{}", n + 1, t + 1));
  std::vector<std::string> cols;
  for (int64_t d = 0; d < kD; ++d) cols.push_back(fmt::format("d{}", d + 1));
  const int64_t n_rows = static_cast<int64_t>(rows.size());
  const auto block = [&](bool batch_norm, bool masked) {
    Tensor v = Tensor::zeros({n_rows, kD});
    for (int64_t r = 0; r < n_rows; ++r) {
      const int64_t n = r / t_max, t = r % t_max;
      const bool real = t < lengths[static_cast<size_t>(n)];
      for (int64_t d = 0; d < kD; ++d) {
        const bool group = batch_norm ? d == feature && (real || !masked) : n == seq && t == token;
        float value = group ? 1.0f : 0.25f;
        if (!real && !group) value = std::numeric_limits<float>::quiet_NaN();  // padding
        v.data()[r * kD + d] = value;
      }
    }
    return v;
  };
  const auto options = [&](std::string title) {
    return viz::HeatmapOptions{.title = std::move(title),
                               .row_labels = rows,
                               .col_labels = cols,
                               .row_axis = "sentence, token",
                               .col_axis = "feature",
                               .cell_size = 24,
                               .colour_bar = false};
  };
  std::vector<viz::Image> panels = {
      viz::heatmap(block(false, false), options("LayerNorm: one token")),
      viz::heatmap(block(true, true), options("BatchNorm, masked")),
      viz::heatmap(block(true, false), options("BatchNorm, no mask"))};
  viz::write_png(
      viz::grid(panels, 3, "which cells share one mean and variance (bright); grey = padding"),
      path);
}

// What the normalisations make of one token in different company: d1 of the probe token after
// each of them, and d1's batch mean, over real tokens and over all cells, batch by batch.
struct Drift {
  viz::Series ln{}, bnm{}, bnp{};       // the probe token's d1: LayerNorm, BatchNorm (masked, not)
  viz::Series mean_real{}, mean_all{};  // d1's batch mean
  bool ln_same = true;                  // LayerNorm gave the probe token the same numbers
  bool padding_pulls = true;            // in every padded batch, padding lowered d1's mean
};

// `batches` batches of the probe sentence and batch - 1 random sentences of 2 to 40 tokens,
// through the three normalisations in training mode; prints the first 10 as a table.
Drift norms_on_batches(const std::vector<float>& probe_sentence, int64_t batches, int64_t batch,
                       int64_t probe_t, Rng& rng, nn::LayerNorm& layer_norm,
                       nn::BatchNorm& bn_masked, nn::BatchNorm& bn_plain) {
  // The probe sentence alone: LayerNorm's answer for it, with no batch around it.
  const Tensor alone = layer_norm.forward(Tensor::from({1, 5, kD}, probe_sentence));
  const auto probe_row = [&](const Tensor& y) {  // [B, T, D] -> the probe token's D outputs
    return slice(slice(slice(y, 0, 0, 1), 1, probe_t, probe_t + 1), 2, 0, kD);
  };
  viz::Series ln{.name = "LayerNorm"}, bnm{.name = "BatchNorm, masked"},
      bnp{.name = "BatchNorm, no mask"};
  viz::Series mean_real{.name = "real tokens only"}, mean_all{.name = "padding counted"};
  bool ln_same = true, padding_pulls = true;
  fmt::print(
      "  every batch: the same 5-token probe sentence + {} random sentences of 2..40 "
      "tokens\n\n",
      batch - 1);
  fmt::print("  {:>5} {:>20} {:>8} {:>12} {:>12} {:>10} {:>10} {:>10}\n", "batch", "lengths",
             "padding", "mean d1", "mean d1", "probe d1", "probe d1", "probe d1");
  fmt::print("  {:>5} {:>20} {:>8} {:>12} {:>12} {:>10} {:>10} {:>10}\n", "", "", "", "real", "all",
             "LN", "BN mask", "BN all");
  for (int64_t k = 0; k < batches; ++k) {
    std::vector<std::vector<float>> sentences = {probe_sentence};
    std::string lengths = "5";
    for (int64_t n = 1; n < batch; ++n) {
      const int64_t length = 2 + rng.below(39);  // 2 .. 40
      sentences.push_back(sentence(length, rng));
      lengths += fmt::format(" {}", length);
    }
    const Padded p = pad(sentences);
    NoGrad no_grad;
    // [snippet: norms-on-a-batch]
    const Tensor y_ln = layer_norm.forward(p.x);          // per token: over its D features
    const Tensor y_bnm = bn_masked.forward(p.x, p.mask);  // per feature: over real tokens of B
    const Tensor y_bnp = bn_plain.forward(p.x);           // per feature: over all B x T cells
    // LayerNorm's answer for the probe token must not depend on the batch, to the bit.
    const Tensor ln_probe = probe_row(y_ln);
    for (int64_t d = 0; d < kD; ++d)
      ln_same = ln_same && ln_probe.data()[d] == alone.at({0, probe_t, d});
    // [/snippet]
    // Feature d1's batch mean, over the real tokens and over every cell.
    double real_sum = 0.0, all_sum = 0.0, real_count = 0.0;
    const int64_t cells = p.mask.numel();
    for (int64_t c = 0; c < cells; ++c) {
      all_sum += p.x.data()[c * kD];
      real_sum += p.mask.data()[c] * p.x.data()[c * kD];
      real_count += p.mask.data()[c];
    }
    const float m_real = static_cast<float>(real_sum / real_count);
    const float m_all = static_cast<float>(all_sum / static_cast<double>(cells));
    padding_pulls = padding_pulls && (real_count == static_cast<double>(cells) || m_all < m_real);
    const float step = static_cast<float>(k + 1);
    for (viz::Series* s : {&ln, &bnm, &bnp, &mean_real, &mean_all}) s->xs.push_back(step);
    ln.ys.push_back(ln_probe.data()[0]);
    bnm.ys.push_back(probe_row(y_bnm).data()[0]);
    bnp.ys.push_back(probe_row(y_bnp).data()[0]);
    mean_real.ys.push_back(m_real);
    mean_all.ys.push_back(m_all);
    if (k < 10)
      fmt::print("  {:>5} {:>20} {:>7.0f}% {:>12.3f} {:>12.3f} {:>10.4f} {:>10.4f} {:>10.4f}\n",
                 k + 1, lengths, 100.0 * (1.0 - real_count / static_cast<double>(cells)), m_real,
                 m_all, ln.ys.back(), bnm.ys.back(), bnp.ys.back());
  }
  return {.ln = ln,
          .bnm = bnm,
          .bnp = bnp,
          .mean_real = mean_real,
          .mean_all = mean_all,
          .ln_same = ln_same,
          .padding_pulls = padding_pulls};
}

// The probe token's d1 and the batch means of d1, batch after batch.
void draw_drift(const Drift& drift, const std::string& out_dir) {
  const viz::Series &ln = drift.ln, &bnm = drift.bnm, &bnp = drift.bnp;
  const viz::Series &mean_real = drift.mean_real, &mean_all = drift.mean_all;
  const std::string drift_path = out_dir + "/05_ffn_residual_norm/drift.png";
  viz::write_png(
      viz::grid(
          {viz::line_plot({ln, bnm, bnp}, {.title = "one fixed token's d1, normalised",
                                           .x_label = "batch",
                                           .y_label = "normalised value",
                                           .width = 600,
                                           .height = 380}),
           viz::line_plot({mean_real, mean_all}, {.title = "BatchNorm's batch mean of feature d1",
                                                  .x_label = "batch",
                                                  .y_label = "mean",
                                                  .width = 600,
                                                  .height = 380})},
          2, "the same sentence in different batches (training mode)"),
      drift_path);
  fmt::print("  wrote {}\n\n", drift_path);
}

// The largest |output| of each normalisation on one sentence.
struct Largest {
  float batch_norm = 0, layer_norm = 0;
};

// A sentence far longer than any seen in training, in eval mode (running statistics).
Largest on_a_long_sentence(Rng& rng, nn::LayerNorm& layer_norm, nn::BatchNorm& bn_masked) {
  bn_masked.eval();
  NoGrad no_grad;
  const int64_t long_len = 200;
  const Tensor long_x = Tensor::from({1, long_len, kD}, sentence(long_len, rng));
  const Tensor long_bn = bn_masked.forward(long_x);
  const Tensor long_ln = layer_norm.forward(long_x);
  float bn_max = 0.0f, ln_max = 0.0f;
  for (int64_t i = 0; i < long_x.numel(); ++i) {
    bn_max = std::max(bn_max, std::abs(long_bn.data()[i]));
    ln_max = std::max(ln_max, std::abs(long_ln.data()[i]));
  }
  const float bound = std::sqrt(static_cast<float>(kD - 1));
  fmt::print("  eval mode, one sentence of {} tokens (training saw at most 40):\n", long_len);
  fmt::print(
      "    largest |output|: BatchNorm {:.1f}, LayerNorm {:.2f} (never above sqrt(D - 1) "
      "= {:.2f})\n\n",
      bn_max, ln_max, bound);
  return {.batch_norm = bn_max, .layer_norm = ln_max};
}

void layer_norm_vs_batch_norm(bool quick, Rng& rng, const std::string& out_dir, Checks& check) {
  banner("3. LayerNorm versus BatchNorm");
  const std::string slices_path = out_dir + "/05_ffn_residual_norm/slices.png";
  draw_slices(slices_path);
  fmt::print("  wrote {}\n\n", slices_path);

  const int64_t batches = quick ? 12 : 40, batch = 4, probe_t = 2;
  const std::vector<float> probe_sentence = sentence(5, rng);  // the same sentence every batch
  nn::LayerNorm layer_norm(kD);
  nn::BatchNorm bn_masked(kD), bn_plain(kD);
  const Drift drift = norms_on_batches(probe_sentence, batches, batch, probe_t, rng, layer_norm,
                                       bn_masked, bn_plain);
  const auto spread = [](const viz::Series& s) {
    const auto [lo, hi] = std::minmax_element(s.ys.begin(), s.ys.end());
    return *hi - *lo;
  };
  fmt::print("  ...\n\n  probe token, feature d1, spread (max - min) over {} batches:\n", batches);
  fmt::print("    LayerNorm {:.4f}, BatchNorm masked {:.4f}, BatchNorm padding counted {:.4f}\n",
             spread(drift.ln), spread(drift.bnm), spread(drift.bnp));
  fmt::print(
      "  BatchNorm's running statistics of d1 after {} batches:\n"
      "    masked: mean {:.3f}, var {:.3f}; padding counted: mean {:.3f}, var {:.3f}\n\n",
      batches, bn_masked.running_mean.at({0}), bn_masked.running_var.at({0}),
      bn_plain.running_mean.at({0}), bn_plain.running_var.at({0}));

  draw_drift(drift, out_dir);
  const Largest largest = on_a_long_sentence(rng, layer_norm, bn_masked);
  const float bn_max = largest.batch_norm, ln_max = largest.layer_norm;
  const float bound = std::sqrt(static_cast<float>(kD - 1));

  check(drift.ln_same,
        fmt::format("LayerNorm gives the probe token the same {} numbers, bit for bit, in "
                    "all {} batches and alone",
                    kD, batches));
  check(spread(drift.bnm) > 0.2f,
        fmt::format("BatchNorm (masked) moves the same token by {:.2f} from "
                    "batch to batch",
                    spread(drift.bnm)));
  check(bn_plain.running_mean.at({0}) < 0.75f * bn_masked.running_mean.at({0}),
        fmt::format("counting padding, the running mean of d1 learns {:.2f} instead of {:.2f}",
                    bn_plain.running_mean.at({0}), bn_masked.running_mean.at({0})));
  check(drift.padding_pulls, "in every padded batch the zeros drag feature d1's mean down");
  check(bn_max > 3.0f * bound && ln_max <= bound + 1e-4f,
        fmt::format("on the long sentence BatchNorm's running statistics give {:.1f}; "
                    "LayerNorm stays within {:.2f}",
                    bn_max, bound));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Lesson 05: feed-forward, residual connections, LayerNorm versus BatchNorm"};
  bool quick = false;
  uint64_t seed = 1;
  std::string out_dir = "out";
  app.add_flag("--quick", quick, "a smaller run, in about a second (the tests use it)");
  app.add_option("--seed", seed, "seed for the random inputs, weights and data")
      ->capture_default_str();
  app.add_option("--out", out_dir, "pictures go to <out>/05_ffn_residual_norm/")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  Checks check;
  try {
    Rng rng(seed);
    feed_forward(rng, check);
    residual_connections(quick, rng, out_dir, check);
    layer_norm_vs_batch_norm(quick, rng, out_dir, check);
  } catch (const std::exception& e) {
    fmt::print("\nlesson 05: stopped by an exception: {}\n", e.what());
    return 1;
  }
  return check.summary("lesson 05");
}
