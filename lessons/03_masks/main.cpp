// Lesson 03: masks.
//
// Attention lets every position look at every other one. Two kinds of looking are wrong: at
// padding, which is not part of the sentence, and, in the decoder, at later target tokens,
// which do not exist yet when the model generates. A mask removes both by setting their
// scores to -inf before the softmax (Vaswani et al. 2017, §3.2.3). Five steps: the padding
// mask; the look-ahead mask; why the look-ahead mask makes one teacher-forced training pass
// compute exactly what step-by-step decoding computes; what a decoder trained without it
// learns; and what a row with every key masked does. README.md is the text that walks
// through this file. Every claim is checked; a failed check makes the program exit with 1.
//
// main(), at the end, is the table of contents: it calls the sections in the order of
// README.md, and they are defined above it in the same order.
//
// Shape legend: B batch, T query length, S key length, D width, V vocabulary.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
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
#include "models/decode.h"
#include "models/transformer.h"
#include "nn/attention.h"
#include "nn/optim.h"
#include "viz/heatmap.h"
#include "viz/line_plot.h"
#include "viz/png.h"

using namespace gf;
using namespace gf::lessons;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// A toy vocabulary with the library's special ids: pad 0, bos 1, eos 2 (data/vocab.h).
const std::vector<std::string> kVocab = {"<pad>", "<bos>", "<eos>", "the", "a",   "cat",
                                         "dog",   "sat",   "ran",   "on",  "mat", "big",
                                         "red",   "saw",   "home",  "it"};
constexpr int32_t kPad = 0, kBos = 1, kEos = 2, kFirstWord = 3;
const auto kVocabSize = static_cast<int64_t>(kVocab.size());
const auto kWords = static_cast<int32_t>(kVocabSize - kFirstWord);  // the 13 real words

using Words = std::vector<std::string>;

// Words to ids and back, defined below the sections.
int32_t id_of(const std::string& word);
IndexTensor pad_batch(const std::vector<Words>& sentences, int64_t length);  // [B, length]
Words labels_of(const IndexTensor& ids, int64_t b = 0);                      // row b of [B, L]
std::string join(const Words& words);

// ---- 1. The padding mask ----

// One attention head over token embeddings, without positions: the smallest model whose
// scores can be masked, the attention of lesson 02, single-headed as there (lesson 04 splits
// it). Sections 1 and 2 mask it.
struct Head {
  Tensor embed, wq, wk, wv;  // [V, D], [D, D] x3

  Head(int64_t d, Rng& rng)
      : embed(Tensor::randn({kVocabSize, d}, rng)),
        wq(Tensor::randn({d, d}, rng, 1.5f / std::sqrt(static_cast<float>(d)))),
        wk(Tensor::randn({d, d}, rng, 1.5f / std::sqrt(static_cast<float>(d)))),
        wv(Tensor::randn({d, d}, rng, 1.0f / std::sqrt(static_cast<float>(d)))) {}

  // ids [B, T] -> q, k, v [B, 1, T, D] (one head).
  Tensor project(const IndexTensor& ids, const Tensor& w) const {
    const int64_t b = ids.shape()[0], t = ids.shape()[1], d = embed.dim(1);
    return reshape(matmul(embedding(embed, ids), w), {b, 1, t, d});
  }
  // ids [B, T] -> output [B, 1, T, D]; *probs gets the weights [B, 1, T, T].
  Tensor operator()(const IndexTensor& ids, const Tensor& mask, Tensor* probs = nullptr) const {
    return nn::scaled_dot_product_attention(project(ids, wq), project(ids, wk), project(ids, wv),
                                            mask, probs);
  }
};

// The padding mask of ids [B, S], as nn::padding_mask computes it.
Tensor padding_mask_by_hand(const IndexTensor& ids) {
  const int64_t batch = ids.shape()[0], length = ids.shape()[1];
  // [snippet: padding-mask-by-hand]
  // 1 where key s of sentence b is padding. Shape [B, 1, 1, S]: the same for every head
  // (dimension 1) and every query (dimension 2), which broadcasting supplies.
  Tensor mask = Tensor::zeros({batch, 1, 1, length});
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t s = 0; s < length; ++s)
      if (ids.at({b, s}) == kPad) mask.data()[b * length + s] = 1.0f;
  // [/snippet]
  return mask;
}

// The masked softmax once more with explicit loops, for sentence 1 (the padded one): the
// largest difference from the library's weights probs_masked [B, 1, T, S].
double masked_softmax_by_hand(const Head& head, const IndexTensor& ids, const Tensor& mask,
                              const Tensor& probs_masked) {
  const int64_t length = ids.shape()[1];
  const Tensor q = head.project(ids, head.wq), k = head.project(ids, head.wk);
  const int64_t d = q.dim(-1);
  double max_diff = 0.0;
  for (int64_t b = 1, t = 0; t < length; ++t) {  // sentence b = 1, every query t
    // [snippet: masked-softmax-by-hand]
    // Query t of sentence b: score_s = q_t . k_s / sqrt(D), and -inf where key s is blocked.
    // exp(-inf) = 0, so a blocked key gets weight exactly 0; the others share all of it.
    std::vector<float> w(static_cast<size_t>(length));
    float m = -kInf;
    for (int64_t s = 0; s < length; ++s) {
      float score = 0.0f;
      for (int64_t i = 0; i < d; ++i) score += q.at({b, 0, t, i}) * k.at({b, 0, s, i});
      score /= std::sqrt(static_cast<float>(d));
      if (mask.at({b, 0, 0, s}) != 0.0f) score = -kInf;
      w[static_cast<size_t>(s)] = score;
      m = std::max(m, score);
    }
    float total = 0.0f;
    for (float& x : w) {
      x = std::exp(x - m);  // exp(-inf - m) = 0
      total += x;
    }
    for (float& x : w) x /= total;
    // [/snippet]
    for (int64_t s = 0; s < length; ++s)
      max_diff = std::max(max_diff, static_cast<double>(std::abs(w[static_cast<size_t>(s)] -
                                                                 probs_masked.at({b, 0, t, s}))));
  }
  return max_diff;
}

// How much of each real query's attention lands on padding, without and with the mask.
void weight_on_padding(const std::vector<Words>& sentences, const IndexTensor& ids,
                       const Tensor& probs_free, const Tensor& probs_masked, Checks& check) {
  const int64_t batch = ids.shape()[0], length = ids.shape()[1];
  fmt::print("\n  {:<10} {:>26} {:>26}\n", "", "weight on <pad>, no mask", "with the padding mask");
  bool pad_weights_zero = true, rows_sum_to_one = true;
  for (int64_t b = 0; b < batch; ++b) {
    double free_sum = 0.0, masked_sum = 0.0;
    const auto real = static_cast<int64_t>(sentences[static_cast<size_t>(b)].size());
    for (int64_t t = 0; t < real; ++t) {
      double row = 0.0;
      for (int64_t s = 0; s < length; ++s) {
        row += probs_masked.at({b, 0, t, s});
        if (ids.at({b, s}) != kPad) continue;
        free_sum += probs_free.at({b, 0, t, s});
        masked_sum += probs_masked.at({b, 0, t, s});
        pad_weights_zero = pad_weights_zero && probs_masked.at({b, 0, t, s}) == 0.0f;
      }
      rows_sum_to_one = rows_sum_to_one && std::abs(row - 1.0) < 1e-6;
    }
    fmt::print("  sentence {} {:>25.1f}% {:>25.1f}%\n", b,
               100.0 * free_sum / static_cast<double>(real),
               100.0 * masked_sum / static_cast<double>(real));
  }
  fmt::print("\n");
  check(pad_weights_zero, "with the mask, every <pad> key gets weight exactly 0");
  check(rows_sum_to_one, "and every row still sums to 1 (within 1e-6)");
}

// Whether the outputs of real tokens depend on how much padding their batch has: out_free and
// out_masked [B, 1, T, D] are the head's outputs at padding to 6, without and with the mask.
void extra_padding(const Head& head, const std::vector<Words>& sentences, const Tensor& out_free,
                   const Tensor& out_masked, Checks& check) {
  const int64_t batch = out_masked.dim(0), d = out_masked.dim(-1);
  // [snippet: more-padding]
  // The same two sentences padded to 10 instead of 6: four more <pad> keys in every row.
  const IndexTensor longer = pad_batch(sentences, 10);
  const Tensor out_longer = head(longer, nn::padding_mask(longer, kPad));
  const Tensor out_longer_free = head(longer, Tensor{});
  // [/snippet]
  float moved_masked = 0.0f, moved_free = 0.0f;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < static_cast<int64_t>(sentences[static_cast<size_t>(b)].size()); ++t)
      for (int64_t i = 0; i < d; ++i) {
        moved_masked = std::max(
            moved_masked, std::abs(out_longer.at({b, 0, t, i}) - out_masked.at({b, 0, t, i})));
        moved_free = std::max(
            moved_free, std::abs(out_longer_free.at({b, 0, t, i}) - out_free.at({b, 0, t, i})));
      }
  fmt::print("  padding to 10 instead of 6 moves the outputs of real tokens by at most\n");
  fmt::print("    {:.1e} with the padding mask\n    {:.1e} without it\n\n", moved_masked,
             moved_free);
  check(moved_masked <= 1e-6f, "with the mask, extra padding leaves every real output unchanged");
  check(moved_free > 1e-2f, "without it, extra padding changes them");
}

// Pictures: the mask as stored, [B, S], and as sentence 1's scores see it, [T, S]; sentence 1's
// attention weights without and with it.
void draw_padding(const IndexTensor& ids, const Tensor& mask, const Tensor& probs_free,
                  const Tensor& probs_masked, const std::string& out) {
  const int64_t batch = ids.shape()[0], length = ids.shape()[1];
  const Words words = labels_of(ids, 1);
  Tensor broadcast = Tensor::zeros({length, length});
  for (int64_t t = 0; t < length; ++t)
    for (int64_t s = 0; s < length; ++s) broadcast.data()[t * length + s] = mask.at({1, 0, 0, s});
  save_png(viz::grid({viz::heatmap(mask.view({batch, length}),
                                   {.title = "stored: [B, 1, 1, S]",
                                    .row_labels = {"sentence 0", "sentence 1"},
                                    .row_axis = "",
                                    .col_axis = "key position",
                                    .colour_bar = false,
                                    .show_values = true}),
                      viz::heatmap(broadcast, {.title = "seen by sentence 1's scores",
                                               .row_labels = words,
                                               .col_labels = words,
                                               .value_label = "1 = blocked"})},
                     2, "the padding mask"),
           out + "/padding_mask.png");
  std::vector<viz::Image> weights;  // sentence 1's: matrix 1 of [B, 1, T, S]
  weights.push_back(viz::heatmap(probs_free, 1,
                                 {.title = "no mask",
                                  .row_labels = words,
                                  .col_labels = words,
                                  .colour_bar = false,
                                  .show_values = true}));
  weights.push_back(viz::heatmap(probs_masked, 1,
                                 {.title = "padding mask",
                                  .row_labels = words,
                                  .col_labels = words,
                                  .value_label = "attention weight",
                                  .show_values = true}));
  save_png(viz::grid(weights, 2, "sentence 1: attention weights"), out + "/padding_attention.png");
}

void padding(const Head& head, const std::string& out, Checks& check) {
  banner("1. The padding mask");
  const std::vector<Words> sentences = {{"the", "cat", "sat", "on", "the", "mat"},
                                        {"a", "dog", "ran"}};
  const IndexTensor ids = pad_batch(sentences, 6);  // [2, 6]
  for (int64_t b = 0; b < ids.shape()[0]; ++b)
    fmt::print("  sentence {}: {}\n", b, join(labels_of(ids, b)));

  const Tensor mask = padding_mask_by_hand(ids);
  fmt::print("  padding mask {}: {}\n\n", mask.shape(), to_string(mask, 0));
  check(max_abs_diff(mask, nn::padding_mask(ids, kPad)) == 0.0f &&
            mask.shape() == nn::padding_mask(ids, kPad).shape(),
        "the mask by hand equals nn::padding_mask(ids, pad), shape [2, 1, 1, 6]");

  Tensor probs_free, probs_masked;
  const Tensor out_free = head(ids, Tensor{}, &probs_free);
  const Tensor out_masked = head(ids, mask, &probs_masked);

  const double max_diff = masked_softmax_by_hand(head, ids, mask, probs_masked);
  check(max_diff < 1e-6, fmt::format("the loops match scaled_dot_product_attention's weights "
                                     "(largest difference {:.1e})",
                                     max_diff));

  weight_on_padding(sentences, ids, probs_free, probs_masked, check);
  extra_padding(head, sentences, out_free, out_masked, check);

  draw_padding(ids, mask, probs_free, probs_masked, out);
}

// ---- 2. The look-ahead mask ----

// The look-ahead mask [1, 1, T, T] for `length` positions, as nn::look_ahead_mask computes it.
Tensor look_ahead_mask_by_hand(int64_t length) {
  // [snippet: look-ahead-by-hand]
  // Query i may see key j only if j <= i: 1 (blocked) strictly above the diagonal.
  Tensor mask = Tensor::zeros({1, 1, length, length});
  for (int64_t i = 0; i < length; ++i)
    for (int64_t j = i + 1; j < length; ++j) mask.data()[i * length + j] = 1.0f;
  // [/snippet]
  return mask;
}

// How far the decoder's output at each position t moves when every token after position i
// changes: [T - 1, T], row i for the change after i. tgt [1, T] is the decoder's input.
Tensor output_changes(Transformer& model, const IndexTensor& tgt, const Tensor& memory,
                      const Tensor& src_mask, const Tensor& tgt_mask) {
  const int64_t length = tgt.shape()[1];
  const int64_t edits = length - 1;  // i = 0 .. T-2: there is something after i to change
  Tensor change = Tensor::zeros({edits, length});
  // [snippet: edit-after]
  // Change every token after position i to another word, run the decoder again, and
  // measure how far each position's output moved: max over d of |y[t, d] - y'[t, d]|.
  const Tensor y = model.decode(tgt, memory, src_mask, tgt_mask);  // [1, T, D]
  for (int64_t i = 0; i < edits; ++i) {
    IndexTensor edited = IndexTensor::from(tgt.shape(), {tgt.data(), tgt.data() + length});
    for (int64_t t = i + 1; t < length; ++t)  // each later word becomes the next in kVocab
      edited.data()[t] = kFirstWord + (edited.data()[t] - kFirstWord + 1) % kWords;
    const Tensor y_edited = model.decode(edited, memory, src_mask, tgt_mask);
    for (int64_t t = 0; t < length; ++t)
      for (int64_t d = 0; d < y.dim(2); ++d)
        change.data()[i * length + t] = std::max(
            change.data()[i * length + t], std::abs(y.at({0, t, d}) - y_edited.at({0, t, d})));
  }
  // [/snippet]
  return change;
}

// The decoder of a whole Transformer (2 layers, untrained): does position t's output depend on
// the tokens after it? tgt [1, T] is the decoder's input.
void later_tokens_changed(Transformer& model, const IndexTensor& tgt, const std::string& out,
                          Checks& check) {
  const int64_t length = tgt.shape()[1];
  const Words words = labels_of(tgt);
  const IndexTensor src = pad_batch({{"a", "red", "cat", "saw", "the", "big", "dog", "<eos>"}}, 8);
  const Tensor src_mask = nn::padding_mask(src, kPad);
  NoGrad no_grad;
  model.eval();  // no dropout: the same input gives the same output
  const Tensor memory = model.encode(src, src_mask);
  const int64_t edits = length - 1;  // i = 0 .. T-2: there is something after i to change
  const Tensor change_masked =
      output_changes(model, tgt, memory, src_mask, nn::look_ahead_mask(length));
  const Tensor change_free = output_changes(model, tgt, memory, src_mask, Tensor{});
  int64_t unchanged_before = 0, changed_after = 0, free_changed_before = 0, before = 0, after = 0;
  float largest = 0.0f;
  for (int64_t i = 0; i < edits; ++i)
    for (int64_t t = 0; t < length; ++t) {
      const float c = change_masked.at({i, t}), f = change_free.at({i, t});
      largest = std::max({largest, c, f});
      if (t <= i) {
        ++before;
        unchanged_before += c == 0.0f ? 1 : 0;
        free_changed_before += f > 1e-3f ? 1 : 0;
      } else {
        ++after;
        changed_after += c > 1e-3f ? 1 : 0;
      }
    }
  fmt::print(
      "\n  tokens after position i changed; largest change of the decoder output at position t\n");
  fmt::print("  {:>3} {:<6}  {:>18} {:>18}\n", "i", "token", "t <= i, masked", "t > i, masked");
  for (int64_t i = 0; i < edits; ++i) {
    float lo = 0.0f, hi = 0.0f;  // the largest change at t <= i and at t > i
    for (int64_t t = 0; t <= i; ++t) lo = std::max(lo, change_masked.at({i, t}));
    for (int64_t t = i + 1; t < length; ++t) hi = std::max(hi, change_masked.at({i, t}));
    fmt::print("  {:>3} {:<6}  {:>18.1e} {:>18.1e}\n", i, words[static_cast<size_t>(i)], lo, hi);
  }
  fmt::print("\n");
  check(unchanged_before == before,
        fmt::format("with the mask, all {} outputs at t <= i are bit-for-bit unchanged", before));
  check(changed_after == after,
        fmt::format("and all {} outputs at t > i change (by more than 1e-3)", after));
  check(free_changed_before == before,
        fmt::format("without the mask, all {} outputs at t <= i change too", before));

  Words edit_rows;
  for (int64_t i = 0; i < edits; ++i)
    edit_rows.push_back(fmt::format("{} {}", i, words[static_cast<size_t>(i)]));
  const viz::HeatmapOptions change_options{.row_labels = edit_rows,
                                           .col_labels = words,
                                           .row_axis = "changed after i",
                                           .col_axis = "output at position t",
                                           .vmax = std::ceil(largest),
                                           .colour_bar = false};
  viz::HeatmapOptions masked_options = change_options, free_options = change_options;
  masked_options.title = "with the look-ahead mask";
  free_options.title = "without it";
  free_options.colour_bar = true;
  free_options.value_label = "max |change|";
  save_png(viz::grid({viz::heatmap(change_masked, masked_options),
                      viz::heatmap(change_free, free_options)},
                     2, "decoder output: how much it moves when later tokens change"),
           out + "/edit_after.png");
}

// The decoder's real mask: look-ahead OR padding, for a batch of targets of two lengths.
void target_mask_is_the_union(const std::string& out, Checks& check) {
  const IndexTensor targets = pad_batch(
      {{"<bos>", "the", "cat", "sat", "on", "the", "mat"}, {"<bos>", "a", "dog", "ran"}}, 7);
  const Tensor combined = nn::target_mask(targets, kPad);  // [2, 1, 7, 7]
  const Tensor ahead = nn::look_ahead_mask(7), pads = nn::padding_mask(targets, kPad);
  bool is_or = true;
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t i = 0; i < 7; ++i)
      for (int64_t j = 0; j < 7; ++j)
        is_or = is_or && combined.at({b, 0, i, j}) ==
                             std::max(ahead.at({0, 0, i, j}), pads.at({b, 0, 0, j}));
  check(is_or, "nn::target_mask = look-ahead OR padding, [B, 1, T, T]");
  const Words short_words = labels_of(targets, 1);
  Tensor pad_rows = Tensor::zeros({7, 7});
  for (int64_t i = 0; i < 7; ++i)
    for (int64_t j = 0; j < 7; ++j) pad_rows.data()[i * 7 + j] = pads.at({1, 0, 0, j});
  const viz::HeatmapOptions m{
      .row_labels = short_words, .col_labels = short_words, .colour_bar = false};
  viz::HeatmapOptions m1 = m, m2 = m, m3 = m;
  m1.title = "look-ahead";
  m2.title = "padding";
  m3.title = "target mask (OR)";
  m3.colour_bar = true;
  m3.value_label = "1 = blocked";
  save_png(viz::grid({viz::heatmap(ahead.view({7, 7}), m1), viz::heatmap(pad_rows, m2),
                      viz::heatmap(combined, 1, m3)},
                     3, "the decoder's mask for a padded target"),
           out + "/target_mask.png");
}

void look_ahead(const Head& head, Transformer& model, const std::string& out, Checks& check) {
  banner("2. The look-ahead mask");
  const IndexTensor tgt = pad_batch({{"<bos>", "the", "big", "dog", "saw", "a", "red", "cat"}}, 8);
  const int64_t length = tgt.shape()[1];
  const Words words = labels_of(tgt);
  fmt::print("  decoder input: {}\n", join(words));

  const Tensor mask = look_ahead_mask_by_hand(length);
  check(max_abs_diff(mask, nn::look_ahead_mask(length)) == 0.0f,
        "the mask by hand equals nn::look_ahead_mask(8), shape [1, 1, 8, 8]");

  Tensor probs;
  head(tgt, mask, &probs);
  bool above_zero = true;
  for (int64_t i = 0; i < length; ++i)
    for (int64_t j = i + 1; j < length; ++j)
      above_zero = above_zero && probs.at({0, 0, i, j}) == 0.0f;
  check(above_zero, "every weight above the diagonal is exactly 0");
  check(probs.at({0, 0, 0, 0}) == 1.0f, "so <bos>, which sees only itself, gives itself weight 1");

  // Scores with -inf written in, as masked_fill leaves them, next to the softmax of them.
  const Tensor q = head.project(tgt, head.wq), k = head.project(tgt, head.wk);
  const Tensor scores = masked_fill(
      matmul(q, transpose(k, -1, -2)) / std::sqrt(static_cast<float>(q.dim(-1))), mask, -kInf);
  save_png(
      viz::grid({viz::heatmap(mask.view({length, length}), {.title = "look-ahead mask",
                                                            .row_labels = words,
                                                            .col_labels = words,
                                                            .value_label = "1 = blocked"}),
                 viz::heatmap(scores.view({length, length}), {.title = "masked scores (grey: -inf)",
                                                              .row_labels = words,
                                                              .col_labels = words,
                                                              .value_label = "score",
                                                              .auto_range = true}),
                 viz::heatmap(probs.view({length, length}), {.title = "softmax",
                                                             .row_labels = words,
                                                             .col_labels = words,
                                                             .value_label = "attention weight",
                                                             .show_values = true})},
                3, "decoder self-attention with the look-ahead mask"),
      out + "/look_ahead.png");

  later_tokens_changed(model, tgt, out, check);
  target_mask_is_the_union(out, check);
}

// ---- 3. Training in one pass, decoding step by step ----

// Greedy decoding with the library, at most `length` tokens, then the same tokens
// teacher-forced in one pass.
void greedy_in_one_pass(Transformer& model, const IndexTensor& src, const Tensor& memory,
                        const Tensor& src_mask, int64_t length, Checks& check) {
  const int64_t vocab = kVocabSize;
  const std::vector<TokenIds> greedy = greedy_decode(model, src, {.max_len = length});
  TokenIds produced = greedy[0];
  if (static_cast<int64_t>(produced.size()) < length)
    produced.push_back(kEos);  // it stopped at eos
  TokenIds fed = {kBos};
  fed.insert(fed.end(), produced.begin(), produced.end() - 1);
  const auto n = static_cast<int64_t>(fed.size());
  const Tensor forced = model.generate(
      model.decode(IndexTensor::from({1, n}, fed), memory, src_mask, nn::look_ahead_mask(n)));
  int64_t agree = 0;
  Words produced_words;
  for (int64_t t = 0; t < n; ++t) {
    const float* row = forced.data() + t * vocab;
    const auto best = static_cast<int32_t>(std::max_element(row, row + vocab) - row);
    agree += best == produced[static_cast<size_t>(t)] ? 1 : 0;
    produced_words.push_back(kVocab[static_cast<size_t>(produced[static_cast<size_t>(t)])]);
  }
  fmt::print("  greedy_decode (untrained model):    {}\n", join(produced_words));
  check(agree == n, fmt::format("teacher-forcing greedy's own output in one pass picks the same "
                                "next token at all {} positions",
                                n));
}

// Section 3's logits [1, T, V] for the same target, computed four ways.
struct FourWays {
  Tensor pass, steps, cached, free;
};

// The probability of the right next token at each position, and the training loss, from
// each of the four: the masked pass, the steps and the cache agree; without the mask, not.
void compare_four_ways(const FourWays& l, const IndexTensor& tgt_out, const Words& input,
                       const Words& target, Checks& check) {
  const int64_t length = tgt_out.shape()[1];
  const auto prob_of_target = [&](const Tensor& logits) {
    const Tensor p = softmax(logits);
    std::vector<float> probs;
    for (int64_t t = 0; t < length; ++t) probs.push_back(p.at({0, t, tgt_out.at({0, t})}));
    return probs;
  };
  const std::vector<float> p_pass = prob_of_target(l.pass), p_steps = prob_of_target(l.steps),
                           p_cached = prob_of_target(l.cached), p_free = prob_of_target(l.free);
  fmt::print("  {:>3} {:<6} {:<7} {:>10} {:>10} {:>10} {:>13}\n", "t", "input", "target",
             "one pass", "steps", "cached", "pass, no mask");
  for (int64_t t = 0; t < length; ++t) {
    const auto i = static_cast<size_t>(t);
    fmt::print("  {:>3} {:<6} {:<7} {:>10.6f} {:>10.6f} {:>10.6f} {:>13.6f}\n", t, input[i],
               target[i], p_pass[i], p_steps[i], p_cached[i], p_free[i]);
  }
  const float diff_steps = max_abs_diff(l.pass, l.steps),
              diff_cached = max_abs_diff(l.pass, l.cached),
              diff_free = max_abs_diff(l.free, l.steps);
  fmt::print("\n  largest |logit difference| from step-by-step decoding:\n");
  fmt::print("    one pass with the look-ahead mask  {:.1e}\n", diff_steps);
  fmt::print("    steps with the key/value cache      {:.1e}\n", max_abs_diff(l.cached, l.steps));
  fmt::print("    one pass without the mask           {:.1e}\n\n", diff_free);
  check(diff_steps <= 1e-5f,
        "one masked pass gives the logits of step-by-step decoding (within 1e-5)");
  check(diff_cached <= 1e-5f, "and so do the steps with the key/value cache");
  check(diff_free > 1e-1f, "without the mask, one pass computes something else");

  // The training loss is the mean of the step-by-step losses: the same conditionals.
  const float loss_pass = cross_entropy(l.pass, tgt_out).item();
  double loss_steps = 0.0;
  for (int64_t t = 0; t < length; ++t)
    loss_steps -= std::log(static_cast<double>(p_steps[static_cast<size_t>(t)]));
  loss_steps /= static_cast<double>(length);
  fmt::print("  training loss, one pass:            {:.6f}\n", loss_pass);
  fmt::print("  mean of -log p over the 8 steps:    {:.6f}\n\n", loss_steps);
  check(std::abs(loss_pass - loss_steps) <= 1e-5 * loss_steps,
        "the one-pass training loss equals the mean step-by-step loss");
}

void one_pass_and_steps(Transformer& model, Checks& check) {
  banner("3. Training in one pass, decoding step by step");
  NoGrad no_grad;
  model.eval();
  const IndexTensor src = pad_batch({{"a", "red", "cat", "saw", "the", "big", "dog", "<eos>"}}, 8);
  const Tensor src_mask = nn::padding_mask(src, kPad);
  const Tensor memory = model.encode(src, src_mask);

  // [snippet: shift-right]
  // Teacher forcing (§3.1: "the output embeddings are offset by one position"): the decoder
  // reads the target shifted right behind <bos>, and position t must predict target[t].
  const Words target = {"the", "big", "dog", "saw", "a", "red", "cat", "<eos>"};
  Words input = {"<bos>"};
  input.insert(input.end(), target.begin(), target.end() - 1);
  // [/snippet]
  const IndexTensor tgt_in = pad_batch({input}, 8), tgt_out = pad_batch({target}, 8);
  const int64_t length = tgt_in.shape()[1], vocab = kVocabSize;
  // The shift as a table (rows without trailing spaces).
  const auto table_row = [](const std::string& name, const Words& cells) {
    std::string line = fmt::format("  {:<10}", name);
    for (const std::string& cell : cells) line += fmt::format(" {:<6}", cell);
    return line.substr(0, line.find_last_not_of(' ') + 1);
  };
  fmt::print("{}\n{}\n{}\n\n", table_row("position", {"0", "1", "2", "3", "4", "5", "6", "7"}),
             table_row("input", input), table_row("target", target));

  // [snippet: one-pass]
  // Training: all T positions in one pass, under the look-ahead mask.
  const Tensor logits = model.generate(
      model.decode(tgt_in, memory, src_mask, nn::look_ahead_mask(length)));  // [1, T, V]
  // [/snippet]
  const Tensor logits_free = model.generate(model.decode(tgt_in, memory, src_mask, Tensor{}));

  // [snippet: step-by-step]
  // Decoding: step t feeds the prefix input[0..t] and keeps only the newest position's output.
  Tensor logits_steps = Tensor::zeros({1, length, vocab});
  for (int64_t t = 0; t < length; ++t) {
    const IndexTensor prefix =
        IndexTensor::from({1, t + 1}, {tgt_in.data(), tgt_in.data() + t + 1});
    const Tensor y = model.decode(prefix, memory, src_mask, nn::look_ahead_mask(t + 1));
    const Tensor newest = model.generate(slice(y, 1, t, t + 1));  // [1, 1, V]
    std::copy_n(newest.data(), vocab, logits_steps.data() + t * vocab);
  }
  // [/snippet]

  // [snippet: kv-cache]
  // The same with a key/value cache, as gf::greedy_decode runs: step t feeds only token t;
  // the keys and values of positions 0..t-1 were computed at their own steps, when nothing
  // after them existed. No mask is needed: the cache holds nothing later.
  Tensor logits_cached = Tensor::zeros({1, length, vocab});
  std::vector<DecoderLayerCache> cache;
  for (int64_t t = 0; t < length; ++t) {
    const IndexTensor token = IndexTensor::from({1, 1}, {tgt_in.data()[t]});
    const Tensor y = model.decode(token, memory, src_mask, Tensor{}, &cache, /*offset=*/t);
    std::copy_n(model.generate(y).data(), vocab, logits_cached.data() + t * vocab);
  }
  // [/snippet]

  compare_four_ways(
      {.pass = logits, .steps = logits_steps, .cached = logits_cached, .free = logits_free},
      tgt_out, input, target, check);

  greedy_in_one_pass(model, src, memory, src_mask, length, check);
}

// ---- 4. Training without the mask ----

// A batch of random words (no <pad>, <bos>, <eos>): nothing predicts the next one, so the
// best loss an honest model can reach is log(13), the entropy of a uniform guess.
IndexTensor random_words(Rng& rng, int64_t batch, int64_t length) {
  std::vector<int32_t> ids;
  for (int64_t i = 0; i < batch * length; ++i)
    ids.push_back(static_cast<int32_t>(kFirstWord + rng.below(kWords)));
  return IndexTensor::from({batch, length}, ids);
}

// Columns begin .. end-1 of ids [B, L].
IndexTensor columns(const IndexTensor& ids, int64_t begin, int64_t end) {
  std::vector<int32_t> out;
  for (int64_t b = 0; b < ids.shape()[0]; ++b)
    for (int64_t t = begin; t < end; ++t) out.push_back(ids.at({b, t}));
  return IndexTensor::from({ids.shape()[0], end - begin}, out);
}

// The target behind <bos>: [B, L] -> [B, L], the last token dropped.
IndexTensor shift_right(const IndexTensor& y) {
  std::vector<int32_t> out;
  for (int64_t b = 0; b < y.shape()[0]; ++b) {
    out.push_back(kBos);
    for (int64_t t = 0; t + 1 < y.shape()[1]; ++t) out.push_back(y.at({b, t}));
  }
  return IndexTensor::from(y.shape(), out);
}

struct Example {
  IndexTensor src, tgt_in, tgt_out;
};

Example random_example(Rng& rng, int64_t batch, int64_t length) {
  const IndexTensor src = random_words(rng, batch, length), y = random_words(rng, batch, length);
  return {src, shift_right(y), y};
}

// The loss a model gets when it predicts as a decoder must, one token at a time from the
// prefix alone: at step t it is fed tgt_in[0..t] and nothing after.
float decoding_loss(Transformer& model, const Example& e, bool masked) {
  NoGrad no_grad;
  model.eval();
  const Tensor src_mask = nn::padding_mask(e.src, kPad);
  const Tensor memory = model.encode(e.src, src_mask);
  const int64_t length = e.tgt_in.shape()[1];
  double total = 0.0;
  for (int64_t t = 0; t < length; ++t) {
    const Tensor y = model.decode(columns(e.tgt_in, 0, t + 1), memory, src_mask,
                                  masked ? nn::look_ahead_mask(t + 1) : Tensor{});
    total +=
        cross_entropy(model.generate(slice(y, 1, t, t + 1)), columns(e.tgt_out, t, t + 1)).item();
  }
  model.train();
  return static_cast<float>(total / static_cast<double>(length));
}

void training_without_the_mask(bool quick, uint64_t seed, const std::string& out, Checks& check) {
  banner("4. Training without the mask");
  const int64_t steps = quick ? 150 : 300, batch = 32, length = 8, every = quick ? 25 : 15;
  const TransformerConfig config{.vocab_size = kVocabSize,
                                 .d_model = 32,
                                 .d_ff = 64,
                                 .heads = 4,
                                 .encoder_layers = 1,
                                 .decoder_layers = 1,
                                 .max_len = 32,
                                 .dropout = 0.0f};
  Rng held_out_rng(seed + 100);
  const Example held_out = random_example(held_out_rng, 64, length);
  const float honest = std::log(static_cast<float>(kWords));
  std::vector<viz::Series> curves = {{.name = "log 13: a uniform guess",  // drawn first, below
                                      .xs = {1.0f, static_cast<float>(steps)},
                                      .ys = {honest, honest},
                                      .colour = viz::Rgb{150, 150, 150}}};
  float final_train[2] = {0, 0}, final_decode[2] = {0, 0};
  for (const bool masked : {true, false}) {
    Rng rng(seed + 10);  // both models start from the same weights and see the same batches
    Transformer model(config, rng);
    nn::Adam adam(model.parameters(), {.lr = 1e-2f});
    viz::Series train{.name = masked ? "masked: training loss" : "no mask: training loss"};
    viz::Series decode{.name = masked ? "masked: decoding loss" : "no mask: decoding loss"};
    for (int64_t step = 1; step <= steps; ++step) {
      const Example e = random_example(rng, batch, length);
      // [snippet: train-without-mask]
      // Teacher forcing, the whole target in one pass; the only difference is the mask.
      const Tensor src_mask = nn::padding_mask(e.src, kPad);
      const Tensor tgt_mask = masked ? nn::look_ahead_mask(length) : Tensor{};
      const Tensor memory = model.encode(e.src, src_mask);
      const Tensor loss = cross_entropy(
          model.generate(model.decode(e.tgt_in, memory, src_mask, tgt_mask)), e.tgt_out);
      adam.zero_grad();
      loss.backward();
      adam.step();
      // [/snippet]
      train.xs.push_back(static_cast<float>(step));
      train.ys.push_back(loss.item());
      if (step % every == 0 || step == 1) {
        decode.xs.push_back(static_cast<float>(step));
        decode.ys.push_back(decoding_loss(model, held_out, masked));
      }
    }
    const auto k = masked ? 0 : 1;
    float tail = 0.0f;  // the training loss averaged over the last 20 steps: less noisy
    for (size_t i = train.ys.size() - 20; i < train.ys.size(); ++i) tail += train.ys[i] / 20.0f;
    final_train[k] = tail;
    final_decode[k] = decode.ys.back();
    curves.push_back(train);
    curves.push_back(decode);
  }
  fmt::print("  random targets of {} words from {}, batches of {}, {} Adam steps\n\n", length,
             kWords, batch, steps);
  fmt::print("  {:<10} {:>22} {:>26}\n", "", "training loss (1 pass)",
             "decoding loss (step by step)");
  fmt::print("  {:<10} {:>22.3f} {:>26.3f}\n", "masked", final_train[0], final_decode[0]);
  fmt::print("  {:<10} {:>22.3f} {:>26.3f}\n", "no mask", final_train[1], final_decode[1]);
  fmt::print("  {:<10} {:>22.3f} {:>26.3f}\n\n", "log 13", honest, honest);
  save_png(viz::line_plot(curves, {.title = "random targets: training loss vs decoding loss",
                                   .y_label = "cross-entropy (nats)"}),
           out + "/training_without_mask.png");
  check(std::abs(final_train[0] - honest) < 0.15f && std::abs(final_decode[0] - honest) < 0.15f,
        "masked: training and decoding loss both stay near log 13 = 2.565");
  if (quick)  // 150 steps: well on the way down, not always at the floor
    check(final_train[1] < honest - 0.5f,
          "no mask: the training loss falls far below log 13, which no honest model can");
  else
    check(std::abs(final_train[1] - honest / 8) < 0.1f,
          "no mask: the training loss falls to about log(13) / 8 = 0.32, which no honest model "
          "can");
  check(final_decode[1] > honest,
        "no mask: decoding step by step, the same model does worse than a uniform guess");
}

// ---- 5. A fully masked row ----

// The softmax of a row whose every score is -inf, by hand and by the library.
void softmax_of_a_blocked_row(Checks& check) {
  // [snippet: naive-softmax]
  // A query whose every key is blocked: all its scores are -inf.
  const float row[3] = {-kInf, -kInf, -kInf};
  const float m = std::max({row[0], row[1], row[2]});  // -inf
  float with_max[3], without_max[3], total_with = 0.0f, total_without = 0.0f;
  for (int i = 0; i < 3; ++i) {
    with_max[i] = std::exp(row[i] - m);  // -inf - (-inf) = NaN, exp(NaN) = NaN
    without_max[i] = std::exp(row[i]);   // exp(-inf) = 0
    total_with += with_max[i];
    total_without += without_max[i];
  }
  for (int i = 0; i < 3; ++i) {
    with_max[i] /= total_with;        // NaN / NaN = NaN
    without_max[i] /= total_without;  // 0 / 0 = NaN
  }
  // [/snippet]
  const Tensor blocked = softmax(Tensor::full({1, 3}, -kInf));
  const Tensor big_negative = softmax(Tensor::full({1, 3}, -1e9f));
  const Tensor partly = softmax(Tensor::from({1, 3}, {0.5f, -1e9f, 1.5f}));
  fmt::print("  softmax of a row of -inf\n");
  fmt::print("    by hand, max subtracted   {} {} {}\n", with_max[0], with_max[1], with_max[2]);
  fmt::print("    by hand, plain exp / sum  {} {} {}\n", without_max[0], without_max[1],
             without_max[2]);
  fmt::print("    gf::softmax               {}\n", to_string(blocked, 4));
  fmt::print("  softmax of a row of -1e9    {}\n", to_string(big_negative, 4));
  fmt::print("  softmax of (0.5, -1e9, 1.5) {}\n\n", to_string(partly, 4));
  check(std::isnan(with_max[0]) && std::isnan(without_max[0]),
        "by hand, a row of -inf gives NaN either way");
  check(blocked.at({0, 0}) == 0.0f && blocked.at({0, 1}) == 0.0f && blocked.at({0, 2}) == 0.0f,
        "gf::softmax gives that row zeros");
  check(std::abs(big_negative.at({0, 1}) - 1.0f / 3.0f) < 1e-6f,
        "with -1e9 instead of -inf, the row spreads 1/3 over the keys it was to ignore");
  check(partly.at({0, 1}) == 0.0f,
        "while in a partly masked row -1e9 gives exactly 0, as -inf does");
}

// One NaN spreads. Attention of 3 queries over 3 keys, query 2 with every key blocked and its
// output ignored by the loss (as a padded position is): the gradient should not care.
void nan_spreads(Checks& check) {
  Rng rng(3);
  const Tensor scores = Tensor::randn({3, 3}, rng);
  const Tensor mask = Tensor::from({3, 3}, {0, 1, 1, 0, 0, 1, 1, 1, 1});
  const Tensor keep = Tensor::from({3, 1}, {1, 1, 0});  // the loss ignores query 2
  // [snippet: nan-spreads]
  Tensor v = Tensor::randn({3, 4}, rng).set_requires_grad();
  const Tensor s = masked_fill(scores, mask, -kInf);
  const Tensor naive = exp(s) / sum(exp(s), -1, /*keepdim=*/true);  // row 2: 0 / 0 = NaN
  const Tensor loss_naive = sum(matmul(naive, v) * keep);           // NaN * 0 = NaN: ignoring fails
  loss_naive.backward();
  const Tensor grad_naive = v.grad();
  v.zero_grad();
  const Tensor loss = sum(matmul(softmax(s), v) * keep);  // gf::softmax: row 2 is zeros
  loss.backward();
  // [/snippet]
  const auto count_nan = [](const Tensor& t) {
    int64_t c = 0;
    for (int64_t i = 0; i < t.numel(); ++i) c += std::isnan(t.data()[i]) ? 1 : 0;
    return c;
  };
  fmt::print("  through exp(s) / sum(exp(s)): loss {}, dL/dv {}\n", loss_naive.item(),
             to_string(grad_naive, 2));
  fmt::print("  through gf::softmax:          loss {:.4f}, dL/dv {}\n\n", loss.item(),
             to_string(v.grad(), 2));
  check(count_nan(grad_naive) == v.numel(),
        "through the naive softmax, every element of dL/dv is NaN, though query 2 was ignored");
  check(count_nan(v.grad()) == 0 && std::isfinite(loss.item()),
        "through gf::softmax, the loss and every gradient are finite");
}

// Which batches have such a row? Every row of a right-padded batch sees key 0.
void which_batches_have_one(Checks& check) {
  const auto fully_masked_rows = [](const Tensor& mask4, int64_t rows, int64_t cols) {
    int64_t count = 0;  // rows of mask4 viewed as [rows, cols] with every entry 1
    for (int64_t r = 0; r < rows; ++r) {
      bool all = true;
      for (int64_t c = 0; c < cols; ++c) all = all && mask4.data()[r * cols + c] != 0.0f;
      count += all ? 1 : 0;
    }
    return count;
  };
  const IndexTensor right = pad_batch({{"<bos>", "the", "cat", "sat"}, {"<bos>", "a"}}, 4);
  const IndexTensor left = IndexTensor::from(
      {2, 4}, {kBos, id_of("the"), id_of("cat"), id_of("sat"), kPad, kPad, kBos, id_of("a")});
  const IndexTensor empty = pad_batch({{"the", "cat"}, {}}, 4);
  const int64_t right_rows = fully_masked_rows(nn::target_mask(right, kPad), 8, 4);
  const int64_t left_rows = fully_masked_rows(nn::target_mask(left, kPad), 8, 4);
  const int64_t empty_rows =
      fully_masked_rows(expand(nn::padding_mask(empty, kPad), {2, 1, 4, 4}), 8, 4);
  fmt::print("  fully masked rows (of 8 query rows) in\n");
  fmt::print("    target_mask, right-padded targets      {}\n", right_rows);
  fmt::print("    target_mask, left-padded targets       {}\n", left_rows);
  fmt::print("    padding_mask, one sentence all <pad>   {}\n\n", empty_rows);
  check(right_rows == 0, "right-padded targets that start with <bos>: no fully masked row");
  check(left_rows == 2 && empty_rows == 4,
        "left padding under the look-ahead mask, or an empty sentence, makes some");
}

void fully_masked_row(Checks& check) {
  banner("5. A fully masked row");
  softmax_of_a_blocked_row(check);
  nan_spreads(check);
  which_batches_have_one(check);
}

// ---- Words and ids ----

int32_t id_of(const std::string& word) {
  const auto it = std::find(kVocab.begin(), kVocab.end(), word);
  if (it == kVocab.end()) throw std::invalid_argument("lesson 03: no word \"" + word + "\"");
  return static_cast<int32_t>(it - kVocab.begin());
}

// Sentences as one [B, length] batch, each padded on the right with <pad>.
IndexTensor pad_batch(const std::vector<Words>& sentences, int64_t length) {
  std::vector<int32_t> ids;
  for (const Words& s : sentences)
    for (int64_t i = 0; i < length; ++i)
      ids.push_back(i < static_cast<int64_t>(s.size()) ? id_of(s[static_cast<size_t>(i)]) : kPad);
  return IndexTensor::from({static_cast<int64_t>(sentences.size()), length}, ids);
}

// The words of row b of ids [B, L]: the heatmaps' labels.
Words labels_of(const IndexTensor& ids, int64_t b) {
  Words words;
  for (int64_t i = 0; i < ids.shape()[1]; ++i)
    words.push_back(kVocab[static_cast<size_t>(ids.at({b, i}))]);
  return words;
}

std::string join(const Words& words) {
  return fmt::format("{}", fmt::join(words, " "));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Lesson 03: masks"};
  LessonFlags flags(app, "03_masks", "a smaller model",
                    "seed for the embeddings and the model's weights");
  CLI11_PARSE(app, argc, argv);

  Checks check;
  try {
    Rng rng(flags.seed);
    const Head head(16, rng);
    Transformer model({.vocab_size = kVocabSize,
                       .d_model = flags.quick ? 16 : 32,
                       .d_ff = flags.quick ? 32 : 64,
                       .heads = 4,
                       .encoder_layers = 2,
                       .decoder_layers = 2,
                       .max_len = 32},
                      rng);
    padding(head, flags.out(), check);
    look_ahead(head, model, flags.out(), check);
    one_pass_and_steps(model, check);
    training_without_the_mask(flags.quick, flags.seed, flags.out(), check);
    fully_masked_row(check);
  } catch (const std::exception& e) {
    fmt::print("\nlesson 03: stopped by an exception: {}\n", e.what());
    return 1;
  }
  return check.summary("lesson 03");
}
