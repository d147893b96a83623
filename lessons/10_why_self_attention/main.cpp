// Lesson 10: why self-attention.
//
// §4 of the paper compares four kinds of layer that map a sequence of n vectors of width d to
// another: self-attention, a recurrent layer, a convolution and self-attention restricted to a
// neighbourhood of r positions. Its Table 1 gives three costs for each: the work per layer,
// the sequential operations (how many steps must wait for one another) and the maximum path
// length between two positions. This program measures all three on this machine instead of
// quoting them, then trains four models on the copy task: a recurrent encoder-decoder whose
// decoder sees only the encoder's final state, the same with attention over every encoder
// state, a Transformer, and the same Transformer whose decoder sees only the mean of its
// encoder's outputs. The first forgets long sequences and the next two do not; the fourth has
// the first one's bottleneck without its long path, and forgets too.
// README.md is the text that walks through this file. Every claim is checked; a failed check
// makes the program exit with 1.
//
// main(), at the end, is the table of contents: it calls the sections in the order of
// README.md, and they are defined above it in the same order.
//
// Shape legend: B batch, N sequence length, D width, r neighbourhood, V vocabulary.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <exception>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "autograd/graph.h"
#include "autograd/ops.h"
#include "autograd/random.h"
#include "autograd/tensor.h"
#include "data/batch.h"
#include "data/batch_source.h"
#include "data/tasks.h"
#include "data/vocab.h"
#include "lessons/lesson.h"
#include "models/transformer.h"
#include "nn/attention.h"
#include "nn/conv.h"
#include "nn/layers.h"
#include "nn/optim.h"
#include "nn/recurrent.h"
#include "training/evaluate.h"
#include "training/trainer.h"
#include "viz/line_plot.h"
#include "viz/png.h"

using namespace gf;
using namespace gf::lessons;

namespace {

// The least-squares slope of log(y) against log(x): the growth exponent, y ~ x^slope.
double log_log_slope(const std::vector<double>& x, const std::vector<double>& y) {
  double mx = 0, my = 0;
  for (size_t i = 0; i < x.size(); ++i) mx += std::log(x[i]), my += std::log(y[i]);
  mx /= static_cast<double>(x.size());
  my /= static_cast<double>(x.size());
  double sxy = 0, sxx = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxy += (std::log(x[i]) - mx) * (std::log(y[i]) - my);
    sxx += (std::log(x[i]) - mx) * (std::log(x[i]) - mx);
  }
  return sxy / sxx;
}

// ---- 1. Time per layer ----

// [snippet: restricted]
// Self-attention restricted to the band |i - j| <= r (§4), in O(r N D): the sequence is cut
// into N/r blocks of r positions, and each block's queries attend only to the keys of itself
// and its two neighbour blocks (3r keys), which hold the whole band. The blocks play the part
// of heads, so the library's attention runs them all as batched [r, 3r] products.
// q, k, v [B, N, D] with N a multiple of r -> [B, N, D].
Tensor restricted_self_attention(const Tensor& q, const Tensor& k, const Tensor& v, int64_t r) {
  const int64_t batch = q.shape()[0], n = q.shape()[1], d = q.shape()[2], blocks = n / r;
  const auto neighbourhoods = [&](const Tensor& x) {  // [B, N, D] -> [B, N/r, 3r, D]
    const Tensor zero = Tensor::zeros({batch, 1, r, d});
    const Tensor padded = concat({zero, reshape(x, {batch, blocks, r, d}), zero}, 1);
    return concat({slice(padded, 1, 0, blocks), slice(padded, 1, 1, blocks + 1),
                   slice(padded, 1, 2, blocks + 2)},
                  2);
  };
  // Query a of block b sits at b*r + a; key p of its window at (b-1)*r + p. Block the keys
  // outside the band and the zero blocks beyond either end (1 = may not attend).
  std::vector<float> mask(static_cast<size_t>(blocks * r * 3 * r), 0.0f);
  for (int64_t b = 0; b < blocks; ++b)
    for (int64_t a = 0; a < r; ++a)
      for (int64_t p = 0; p < 3 * r; ++p) {
        const bool outside =
            std::abs(p - r - a) > r || (b == 0 && p < r) || (b == blocks - 1 && p >= 2 * r);
        mask[static_cast<size_t>((b * r + a) * 3 * r + p)] = outside ? 1.0f : 0.0f;
      }
  const Tensor out = nn::scaled_dot_product_attention(reshape(q, {batch, blocks, r, d}),
                                                      neighbourhoods(k), neighbourhoods(v),
                                                      Tensor::from({1, blocks, r, 3 * r}, mask));
  return reshape(out, {batch, n, d});
}
// [/snippet]

// Full attention under the band mask, the O(N^2 D) way, to check the blocked version.
Tensor banded_full_attention(const Tensor& x, int64_t r) {
  const int64_t batch = x.shape()[0], n = x.shape()[1], d = x.shape()[2];
  std::vector<float> mask(static_cast<size_t>(n * n));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) mask[static_cast<size_t>(i * n + j)] = std::abs(i - j) > r;
  const Tensor x4 = reshape(x, {batch, 1, n, d});
  return reshape(nn::scaled_dot_product_attention(x4, x4, x4, Tensor::from({1, 1, n, n}, mask)),
                 {batch, n, d});
}

Tensor self_attention(const Tensor& x) {  // softmax(x x^T / sqrt(D)) x: queries = keys = values
  const Shape& s = x.shape();
  const Tensor x4 = reshape(x, {s[0], 1, s[1], s[2]});
  return reshape(nn::scaled_dot_product_attention(x4, x4, x4), s);
}

// Self-attention is timed twice: the attention alone, softmax(x x^T / sqrt(d)) x, which is
// Table 1's O(n^2 d), and the layer a Transformer runs, with its projections q, k, v and o
// (one head: more heads do the same multiply-adds), which adds 4 n d^2. The GRU is timed
// with all its projections, so only the second is a like-for-like comparison.
enum Kind { kSelfAttention, kAttentionLayer, kRecurrent, kConvolution, kRestricted, kKinds };
const std::vector<std::string> kNames = {"self-attention", "attention layer", "recurrent (GRU)",
                                         "convolution (k=3)", "restricted"};

struct Layers {
  // Its forward is not const (it can keep its attention for a heatmap, off here): timing it
  // changes nothing.
  mutable nn::MultiHeadAttention attention;
  nn::GRU gru;
  nn::Conv1d conv;
  int64_t r;
  Layers(int64_t d, int64_t r_, Rng& rng)
      : attention({.d_model = d, .heads = 1}, rng),
        gru(d, d, rng),
        conv({.in_channels = d, .out_channels = d, .kernel_size = 3}, rng),
        r(r_) {}

  Tensor forward(Kind kind, const Tensor& x) const {
    switch (kind) {
      case kSelfAttention:
        return self_attention(x);
      case kAttentionLayer:
        return attention.forward(x, x);
      case kRecurrent:
        return gru.forward(x).outputs;
      case kConvolution:
        return conv.forward(x);
      default:
        return restricted_self_attention(x, x, x, r);
    }
  }
};

// The median of `repeats` timed forward passes (after one untimed warm-up), in seconds.
double time_forward(const Layers& layers, Kind kind, const Tensor& x, int repeats) {
  NoGrad no_grad;
  layers.forward(kind, x);
  std::vector<double> times;
  for (int i = 0; i < repeats; ++i) {
    const auto start = std::chrono::steady_clock::now();
    layers.forward(kind, x);
    times.push_back(seconds_since(start));
  }
  return median(times);
}

struct Timings {
  std::vector<double> ns;
  std::vector<std::vector<double>> seconds;  // [kind][i]
};

// Time against log2 N, one curve per kind of layer.
void draw_time_per_layer(const Timings& t, int64_t batch, int64_t d, const std::string& out_dir) {
  std::vector<viz::Series> series;
  std::vector<float> log2n;
  for (const double n : t.ns) log2n.push_back(static_cast<float>(std::log2(n)));
  for (int kind = 0; kind < kKinds; ++kind) {
    std::vector<float> ms;
    for (const double s : t.seconds[static_cast<size_t>(kind)])
      ms.push_back(static_cast<float>(1e3 * s));
    series.push_back({.name = kNames[static_cast<size_t>(kind)], .xs = log2n, .ys = ms});
  }
  const std::string path = out_dir + "/time_per_layer.png";
  viz::write_png(viz::line_plot(series, {.title = fmt::format(
                                             "forward time per layer, B = {}, D = {}", batch, d),
                                         .x_label = "log2 N (sequence length)",
                                         .y_label = "ms (log scale)",
                                         .log_y = true}),
                 path);
  fmt::print("\n  wrote {}\n", path);
}

// Times every kind of layer at N = 16, 32, ... longest, printing a row per N with the two
// ratios of attention's time to the GRU's, which pass 1 where the turn is.
Timings time_table(const Layers& layers, int64_t batch, int64_t d, int64_t longest, bool quick,
                   Rng& rng) {
  Timings t;
  t.seconds.resize(kKinds);
  fmt::print("  forward time per layer (ms, median of repeats), B = {}, D = {}, r = {}\n", batch, d,
             layers.r);
  fmt::print("  {:>6}", "N");
  for (const auto& name : kNames) fmt::print(" {:>17}", name);
  fmt::print(" {:>9} {:>9}\n", "attn/GRU", "layer/GRU");
  for (int64_t n = 16; n <= longest; n *= 2) {
    const Tensor x = Tensor::uniform({batch, n, d}, rng, -1.0f, 1.0f);
    t.ns.push_back(static_cast<double>(n));
    fmt::print("  {:>6}", n);
    for (int kind = 0; kind < kKinds; ++kind) {
      const int repeats = quick ? 3 : (n <= 256 ? 15 : 7);
      const double s = time_forward(layers, static_cast<Kind>(kind), x, repeats);
      t.seconds[static_cast<size_t>(kind)].push_back(s);
      fmt::print(" {:>17.3f}", 1e3 * s);
    }
    const auto ratio = [&](Kind kind) {
      return t.seconds[static_cast<size_t>(kind)].back() / t.seconds[kRecurrent].back();
    };
    fmt::print(" {:>9.2f} {:>9.2f}\n", ratio(kSelfAttention), ratio(kAttentionLayer));
  }
  return t;
}

Timings time_per_layer(bool quick, uint64_t seed, const std::string& out_dir, Checks& check) {
  banner("1. Time per layer");
  Rng rng(seed);
  const int64_t d = 64, batch = 4, r = 16;
  {  // the blocked restricted attention is the banded full attention
    const Tensor x = Tensor::uniform({2, 12, 8}, rng, -1.0f, 1.0f);
    const float diff =
        max_abs_diff(restricted_self_attention(x, x, x, 3), banded_full_attention(x, 3));
    check(diff < 1e-5f, fmt::format("restricted attention in blocks of r = 3 equals full attention "
                                    "under the band mask |i - j| <= 3 (max diff {:.1e})",
                                    diff));
  }
  const Layers layers(d, r, rng);
  const int64_t longest = quick ? 256 : 2048;
  const Timings t = time_table(layers, batch, d, longest, quick, rng);

  // Growth exponents over the three longest lengths, where fixed per-call costs matter least.
  const size_t tail = 3, first = t.ns.size() - tail;
  const std::vector<double> tail_ns(t.ns.begin() + static_cast<long>(first), t.ns.end());
  std::vector<double> slopes;
  fmt::print("\n  slope of log(time) against log(N) over N = {} .. {}:\n", tail_ns.front(),
             tail_ns.back());
  const std::vector<std::string> expected = {"2 (n^2 d)", "2 (n^2 d + n d^2)", "1 (n d^2)",
                                             "1 (k n d^2)", "1 (r n d)"};
  for (int kind = 0; kind < kKinds; ++kind) {
    const auto& s = t.seconds[static_cast<size_t>(kind)];
    slopes.push_back(log_log_slope(tail_ns, {s.begin() + static_cast<long>(first), s.end()}));
    fmt::print("    {:<18} {:5.2f}   Table 1: {}\n", kNames[static_cast<size_t>(kind)],
               slopes.back(), expected[static_cast<size_t>(kind)]);
  }
  draw_time_per_layer(t, batch, d, out_dir);

  // With --quick the lengths stop at 256, too short for the slopes to mean anything.
  if (quick) return t;
  check.timing(slopes[kSelfAttention] > 1.5,
               fmt::format("self-attention grows faster than linearly at large N (slope {:.2f}, "
                           "Table 1: 2)",
                           slopes[kSelfAttention]));
  // Only the GRU is asserted: its N steps average out interference from other processes,
  // while one disturbed run of a sub-millisecond convolution can bend its slope.
  check.timing(slopes[kRecurrent] < slopes[kSelfAttention] - 0.5,
               fmt::format("the GRU grows about linearly (slope {:.2f}, Table 1: 1), clearly "
                           "slower than self-attention",
                           slopes[kRecurrent]));
  check.timing(
      t.seconds[kSelfAttention].back() > t.seconds[kRestricted].back(),
      fmt::format("at N = {} restricted attention is {:.1f}x faster than full "
                  "self-attention",
                  longest, t.seconds[kSelfAttention].back() / t.seconds[kRestricted].back()));
  // At N = D the layer and the GRU do the same multiply-adds (6 n d^2 each); the GRU spends
  // them in N dependent steps of small ops, the layer in a few large products.
  const size_t at_d = static_cast<size_t>(std::log2(static_cast<double>(d)) - 4);  // N = 16 * 2^i
  check.timing(t.seconds[kAttentionLayer][at_d] < t.seconds[kRecurrent][at_d],
               fmt::format("at N = D = {}, where the two do the same multiply-adds, the attention "
                           "layer takes {:.2f}x the GRU's time",
                           d, t.seconds[kAttentionLayer][at_d] / t.seconds[kRecurrent][at_d]));
  return t;
}

// ---- 2. Sequential operations and path length ----

int64_t longest_path(const Tensor& root, const Tensor& from);  // below the snippet

// [snippet: sequential]
// One layer applied to x [1, N, D]: the depth of its tape from x to the output is the number of
// operations that cannot run at the same time, however many cores there are. The GRU's loop is
// one op of the library, which runs its N steps inside one tape node; its step-by-step form
// records each step's ops, so its tape shows them.
int64_t sequential_operations(const Layers& layers, Kind kind, int64_t n, int64_t d, Rng& rng) {
  const Tensor x = Tensor::uniform({1, n, d}, rng, -1.0f, 1.0f).set_requires_grad();
  const Tensor y =
      kind == kRecurrent ? layers.gru.forward_step_by_step(x).outputs : layers.forward(kind, x);
  return longest_path(y, x);
}
// [/snippet]

// The longest chain of recorded ops from `from` (a leaf) to the tape's end at root: the
// number of operations that must run one after another. -1 when from does not reach root.
int64_t longest_path(const Tensor& root, const Tensor& from) {
  if (root.impl() == from.impl()) return 0;
  std::unordered_map<const Node*, int64_t> memo;
  // The longest chain of nodes from `node` down to `from`; -1 if it does not get there.
  const std::function<int64_t(const Node*)> depth = [&](const Node* node) -> int64_t {
    if (const auto it = memo.find(node); it != memo.end()) return it->second;
    int64_t best = -1;
    for (const Edge& input : node->inputs) {
      const int64_t d = input.leaf.get() == from.impl() ? 0
                        : input.producer                ? depth(input.producer.get())
                                                        : -1;
      if (d >= 0) best = std::max(best, d + 1);
    }
    return memo[node] = best;
  };
  const Node* node = root.impl()->grad_fn.get();
  return node ? depth(node) : -1;
}

// A stack of layers that mix positions, for the path-length measurement.
enum StackKind { kStackAttention, kStackRestricted, kStackConv, kStackDilated, kStackKinds };
const std::vector<std::string> kStackNames = {"self-attention", "restricted (r=8)",
                                              "conv k=3, contiguous", "conv k=3, dilated"};

struct Stack {
  std::vector<std::unique_ptr<nn::Conv1d>> contiguous, dilated;
  static constexpr int64_t kWidth = 4, kR = 8;
  Stack(int64_t depth, Rng& rng) {
    int64_t dilation = 1;
    for (int64_t l = 0; l < depth; ++l) {
      contiguous.push_back(
          std::make_unique<nn::Conv1d>(nn::Conv1dConfig{.in_channels = kWidth,
                                                        .out_channels = kWidth,
                                                        .kernel_size = 3,
                                                        .padding = nn::Padding::Causal},
                                       rng));
      dilated.push_back(
          std::make_unique<nn::Conv1d>(nn::Conv1dConfig{.in_channels = kWidth,
                                                        .out_channels = kWidth,
                                                        .kernel_size = 3,
                                                        .dilation = dilation,
                                                        .padding = nn::Padding::Causal},
                                       rng));
      dilation = std::min<int64_t>(dilation * 3, 1 << 20);
    }
  }
  Tensor forward(StackKind kind, int64_t layers, Tensor x) const {
    for (int64_t l = 0; l < layers; ++l) {
      const auto i = static_cast<size_t>(l);
      if (kind == kStackAttention) x = self_attention(x);
      if (kind == kStackRestricted) x = restricted_self_attention(x, x, x, kR);
      if (kind == kStackConv) x = contiguous[i]->forward(x);
      if (kind == kStackDilated) x = dilated[i]->forward(x);
    }
    return x;
  }
};

// [snippet: path-length]
// The fewest stacked layers after which the output at position N-1 depends on the input at
// position 0: the gradient d y_{N-1} / d x_0 is exactly zero until a path joins them.
int64_t layers_to_connect(const Stack& stack, StackKind kind, int64_t n, Rng& rng) {
  for (int64_t layers = 1; layers <= n; ++layers) {
    const Tensor x = Tensor::uniform({1, n, Stack::kWidth}, rng, -1.0f, 1.0f).set_requires_grad();
    const Tensor last = slice(stack.forward(kind, layers, x), 1, n - 1, n);
    sum(last * last).backward();
    const Tensor grad_first = slice(x.grad(), 1, 0, 1);
    if (sum(grad_first * grad_first).data()[0] > 0.0f) return layers;
  }
  return -1;
}
// [/snippet]

// The maximum path length against N, one curve per stack, and the GRU's cell steps.
void draw_path_length(const std::vector<int64_t>& ns, const std::vector<std::vector<int64_t>>& path,
                      const std::string& out_dir) {
  std::vector<float> xs;
  for (const int64_t n : ns) xs.push_back(static_cast<float>(n));
  std::vector<viz::Series> series;
  for (int kind = 0; kind < kStackKinds; ++kind) {
    std::vector<float> ys;
    for (const int64_t v : path[static_cast<size_t>(kind)]) ys.push_back(static_cast<float>(v));
    series.push_back({.name = kStackNames[static_cast<size_t>(kind)], .xs = xs, .ys = ys});
  }
  const std::string file = out_dir + "/path_length.png";
  viz::write_png(viz::line_plot(series, {.title = "maximum path length from x_0 to y_(N-1)",
                                         .x_label = "N (sequence length)",
                                         .y_label = "layers"}),
                 file);
  fmt::print("\n  wrote {}\n", file);
}

void steps_and_paths(bool quick, uint64_t seed, const std::string& out_dir, Checks& check) {
  banner("2. Sequential operations and path length");
  Rng rng(seed + 1);
  const int64_t d = 8;
  const Layers layers(d, 4, rng);
  const std::vector<int64_t> ns =
      quick ? std::vector<int64_t>{8, 16, 32} : std::vector<int64_t>{8, 16, 32, 64, 128};
  std::vector<std::vector<int64_t>> depth(kKinds);
  for (int kind = 0; kind < kKinds; ++kind)
    for (const int64_t n : ns)
      depth[static_cast<size_t>(kind)].push_back(
          sequential_operations(layers, static_cast<Kind>(kind), n, d, rng));

  const Stack stack(ns.back(), rng);
  std::vector<std::vector<int64_t>> path(kStackKinds);
  for (int kind = 0; kind < kStackKinds; ++kind)
    for (const int64_t n : ns)
      path[static_cast<size_t>(kind)].push_back(
          layers_to_connect(stack, static_cast<StackKind>(kind), n, rng));
  // What one more position adds to the GRU's tape: the ops of one cell step.
  const int64_t per_step = (depth[kRecurrent][1] - depth[kRecurrent][0]) / (ns[1] - ns[0]);

  fmt::print("  sequential operations = depth of one layer's tape (ops), D = {}, r = 4\n", d);
  fmt::print("  {:<20} {:>12}", "layer", "Table 1");
  for (const int64_t n : ns) fmt::print(" {:>7}", fmt::format("N={}", n));
  fmt::print("\n");
  const std::vector<std::string> seq_formula = {"O(1)", "O(1)", "O(n)", "O(1)", "O(1)"};
  for (int kind = 0; kind < kKinds; ++kind) {
    fmt::print("  {:<20} {:>12}", kNames[static_cast<size_t>(kind)],
               seq_formula[static_cast<size_t>(kind)]);
    for (const int64_t v : depth[static_cast<size_t>(kind)]) fmt::print(" {:>7}", v);
    fmt::print("\n");
  }
  fmt::print("\n  maximum path length = layers until y_(N-1) depends on x_0\n");
  fmt::print("  {:<20} {:>12}", "layer", "Table 1");
  for (const int64_t n : ns) fmt::print(" {:>7}", fmt::format("N={}", n));
  fmt::print("\n");
  const std::vector<std::string> path_formula = {"O(1)", "O(n/r)", "O(n/k)", "O(log_k n)"};
  for (int kind = 0; kind < kStackKinds; ++kind) {
    fmt::print("  {:<20} {:>12}", kStackNames[static_cast<size_t>(kind)],
               path_formula[static_cast<size_t>(kind)]);
    for (const int64_t v : path[static_cast<size_t>(kind)]) fmt::print(" {:>7}", v);
    fmt::print("\n");
  }
  // Not measured but built in: one GRU layer joins x_0 to y_(N-1), through the N - 1 steps
  // of its loop over time.
  fmt::print(
      "  (a GRU joins them in one layer, through the N - 1 steps of its loop, {} ops each on "
      "the tape)\n",
      per_step);

  // The formulas, exactly, for these kernels: a causal k = 3 layer reaches 2 positions back,
  // a dilated stack 3^L - 1, a band of r reaches r.
  bool exact = true;
  for (size_t i = 0; i < ns.size(); ++i) {
    const int64_t n = ns[i];
    int64_t log3 = 0;
    for (int64_t reach = 1; reach < n; reach *= 3) ++log3;
    exact = exact && path[kStackAttention][i] == 1 &&
            path[kStackRestricted][i] == (n - 1 + 7) / 8 &&
            path[kStackConv][i] == (n - 1 + 1) / 2 && path[kStackDilated][i] == log3;
  }
  check(exact,
        "measured path lengths: self-attention 1, restricted ceil((N-1)/r), contiguous "
        "conv ceil((N-1)/(k-1)), dilated conv ceil(log_3 N)");
  const bool flat = depth[kSelfAttention].front() == depth[kSelfAttention].back() &&
                    depth[kAttentionLayer].front() == depth[kAttentionLayer].back() &&
                    depth[kConvolution].front() == depth[kConvolution].back() &&
                    depth[kRestricted].front() == depth[kRestricted].back();
  const int64_t growth = ns.back() / ns.front();
  check(flat && depth[kRecurrent].back() > growth * depth[kRecurrent].front() / 2,
        fmt::format("sequential ops: constant in N for attention, the attention layer, "
                    "convolution and restricted attention; the GRU's grow with N ({} -> {})",
                    depth[kRecurrent].front(), depth[kRecurrent].back()));

  draw_path_length(ns, path, out_dir);
}

// ---- 3. A recurrent model forgets ----

using Decoded = std::vector<std::vector<int32_t>>;  // each row's tokens, without bos and eos

// Greedy decoding of a batch of B rows: step maps the previous tokens [B] to logits [B, V]
// (keeping whatever state it needs); each row stops at its first eos.
Decoded greedy_decode(int64_t batch, int64_t max_len,
                      const std::function<Tensor(const IndexTensor&)>& step) {
  NoGrad no_grad;
  std::vector<int32_t> tokens(static_cast<size_t>(batch), data::kBos);
  Decoded out(static_cast<size_t>(batch));
  std::vector<bool> done(static_cast<size_t>(batch), false);
  for (int64_t t = 0; t < max_len; ++t) {
    const Tensor logits = step(IndexTensor::from({batch}, tokens));
    const int64_t v = logits.shape()[1];
    for (int64_t b = 0; b < batch; ++b) {
      const float* row = logits.data() + b * v;
      const auto best = static_cast<int32_t>(std::max_element(row, row + v) - row);
      tokens[static_cast<size_t>(b)] = best;
      if (best == data::kEos) done[static_cast<size_t>(b)] = true;
      if (!done[static_cast<size_t>(b)]) out[static_cast<size_t>(b)].push_back(best);
    }
  }
  return out;
}

// Sutskever et al. (2014): a GRU reads the source; its final state is all the decoder gets.
class RecurrentSeq2Seq : public nn::Module {
 public:
  RecurrentSeq2Seq(int64_t vocab, int64_t width, Rng& rng)
      : embed(vocab, width, rng),
        encoder(width, width, rng),
        decoder(width, width, rng),
        generator(width, vocab, rng) {
    register_module("embed", embed);
    register_module("encoder", encoder);
    register_module("decoder", decoder);
    register_module("generator", generator);
  }

  // [snippet: bottleneck]
  // Teacher forcing: logits [B, T, V]. The source's padded tail is skipped by the lengths, so
  // final_state [B, D] is the state after each row's eos: one vector for the whole sentence.
  Tensor forward(const data::Batch& batch, const std::vector<int64_t>& src_lengths) const {
    const Tensor summary = encoder.forward(embed.forward(batch.src), {}, src_lengths).final_state;
    const Tensor states = decoder.forward(embed.forward(batch.tgt_in), summary).outputs;
    return generator.forward(states);
  }
  // [/snippet]

  // Greedy decoding, one cell step per generated token; src [B, S] unpadded.
  Decoded greedy(const IndexTensor& src, int64_t max_len) const {
    NoGrad no_grad;
    Tensor h = encoder.forward(embed.forward(src)).final_state;
    return greedy_decode(src.shape()[0], max_len, [&](const IndexTensor& previous) {
      h = decoder.cell.forward(embed.forward(previous), h);
      return generator.forward(h);
    });
  }

  nn::Embedding embed;
  nn::GRU encoder, decoder;
  nn::Linear generator;
};

// Bahdanau et al. (2015): the same encoder, but the decoder keeps every encoder state h_j and,
// before each step, attends over all of them. The scoring is theirs, additive (Appendix
// A.1.2): e_tj = v^T tanh(W s_(t-1) + U h_j), a_t = softmax_j(e_t), c_t = sum_j a_tj h_j. The
// context c_t joins the previous token's embedding as the cell's input, and the new state in
// the readout (theirs, A.2.2, also reads c_t, through a maxout layer; here one Linear). Their
// encoder is bidirectional; this one reads left to right, like the plain model's, so the two
// differ only by the attention.
class AttentionalSeq2Seq : public nn::Module {
 public:
  AttentionalSeq2Seq(int64_t vocab, int64_t width, Rng& rng)
      : embed(vocab, width, rng),
        encoder(width, width, rng),
        decoder(2 * width, width, rng),
        query(width, width, rng),
        key(width, width, rng, /*with_bias=*/false),
        energy(width, 1, rng, /*with_bias=*/false),
        generator(2 * width, vocab, rng) {
    register_module("embed", embed);
    register_module("encoder", encoder);
    register_module("decoder", decoder);
    register_module("query", query);
    register_module("key", key);
    register_module("energy", energy);
    register_module("generator", generator);
  }

  // What the decoder may look at: every encoder state, their keys U h_j (computed once per
  // sentence), 1 at the padding [B, 1, S], and the final state that starts the decoder.
  struct Memory {
    Tensor states, keys, padding, final_state;
  };

  Memory encode(const IndexTensor& src, const std::vector<int64_t>& src_lengths = {}) const {
    const nn::RecurrentOutput read = encoder.forward(embed.forward(src), {}, src_lengths);
    const int64_t batch = src.shape()[0], len = src.shape()[1];
    return {read.outputs, key.forward(read.outputs),
            reshape(nn::padding_mask(src, data::kPad), {batch, 1, len}), read.final_state};
  }

  // [snippet: attentional-step]
  // One decoder step: the previous token embedded [B, D] and the state s [B, D] -> the new
  // state (in s) and the readout [B, 2D]. The context comes from all S encoder states at once:
  // a path of length 1 from every encoder state h_j to this step, whatever S is.
  Tensor step(const Tensor& previous, Tensor& s, const Memory& memory) const {
    const int64_t batch = s.shape()[0], width = s.shape()[1], len = memory.states.shape()[1];
    const Tensor scores = energy.forward(
        tanh(memory.keys + reshape(query.forward(s), {batch, 1, width})));  // [B, S, 1]
    const Tensor weights = softmax(masked_fill(reshape(scores, {batch, 1, len}), memory.padding,
                                               -std::numeric_limits<float>::infinity()));
    const Tensor context = reshape(matmul(weights, memory.states), {batch, width});  // [B, D]
    s = decoder.forward(concat({previous, context}, 1), s);
    return concat({s, context}, 1);
  }
  // [/snippet]

  // Teacher forcing: logits [B, T, V]. The context depends on the state before it, so the
  // decoder runs one step at a time even when it is given every target token.
  Tensor forward(const data::Batch& batch, const std::vector<int64_t>& src_lengths) const {
    const Memory memory = encode(batch.src, src_lengths);
    const Tensor inputs = embed.forward(batch.tgt_in);  // [B, T, D]
    const int64_t rows = inputs.shape()[0], steps = inputs.shape()[1], width = inputs.shape()[2];
    Tensor s = memory.final_state;
    std::vector<Tensor> readouts;
    for (int64_t t = 0; t < steps; ++t) {
      const Tensor previous = reshape(slice(inputs, 1, t, t + 1), {rows, width});
      readouts.push_back(reshape(step(previous, s, memory), {rows, 1, 2 * width}));
    }
    return generator.forward(concat(readouts, 1));
  }

  // Greedy decoding; src [B, S] unpadded.
  Decoded greedy(const IndexTensor& src, int64_t max_len) const {
    NoGrad no_grad;
    const Memory memory = encode(src);
    Tensor s = memory.final_state;
    return greedy_decode(src.shape()[0], max_len, [&](const IndexTensor& previous) {
      return generator.forward(step(embed.forward(previous), s, memory));
    });
  }

  nn::Embedding embed;
  nn::GRU encoder;
  nn::GRUCell decoder;
  nn::Linear query, key, energy, generator;
};

// [snippet: pooled]
// The Transformer with the GRU's bottleneck: its decoder sees one vector, the encoder's
// outputs averaged over the source's non-pad positions. Every source token reaches that vector
// through the encoder's self-attention, within its two layers whatever S is, but the whole
// source must fit through d_model numbers. src [B, S] -> memory [B, 1, D].
Tensor pooled_memory(Transformer& model, const IndexTensor& src) {
  const int64_t batch = src.shape()[0], len = src.shape()[1];
  const Tensor padding = nn::padding_mask(src, data::kPad);  // [B, 1, 1, S], 1 at the padding
  const Tensor states = model.encode(src, padding);          // [B, S, D]
  const Tensor kept = 1.0f - reshape(padding, {batch, len, 1});
  return sum(states * kept, 1, /*keepdim=*/true) / sum(kept, 1, /*keepdim=*/true);
}

// Teacher forcing through the pooled memory: logits [B, T, V]. A memory of one position has
// no padding to block, so the cross-attention needs no mask.
Tensor pooled_forward(Transformer& model, const data::Batch& batch) {
  const Tensor memory = pooled_memory(model, batch.src);
  return model.generate(
      model.decode(batch.tgt_in, memory, {}, nn::target_mask(batch.tgt_in, data::kPad)));
}
// [/snippet]

// Greedy decoding through the pooled memory, one position at a time with the decoder's cache;
// src [B, S] unpadded.
Decoded pooled_greedy(Transformer& model, const IndexTensor& src, int64_t max_len) {
  nn::EvalScope eval(model);
  NoGrad no_grad;
  const Tensor memory = pooled_memory(model, src);
  std::vector<DecoderLayerCache> cache;
  int64_t position = 0;
  return greedy_decode(src.shape()[0], max_len, [&](const IndexTensor& previous) {
    const int64_t batch = previous.shape()[0];
    const IndexTensor newest =
        IndexTensor::from({batch, 1}, {previous.data(), previous.data() + batch});
    const Tensor out = model.decode(newest, memory, {}, {}, &cache, position++);  // [B, 1, D]
    return reshape(model.generate(out), {batch, model.config.vocab_size});
  });
}

// One of the four models as the training and the measurement see it, in this order.
enum Model { kGru, kAttentional, kTransformer, kPooled };
struct Contestant {
  std::string name;
  nn::Module& model;
  float peak_rate;                                 // Adam's, see train_in_lock_step
  int64_t steps;                                   // how many of the batches it trains on
  std::function<Tensor(const data::Batch&)> loss;  // teacher-forced cross-entropy
  std::function<Decoded(const std::vector<std::vector<int32_t>>&, int64_t)> decode;  // greedy
};

// Exact copies and right tokens of each model at each length, as counts.
struct Tally {
  int64_t exact = 0, sequences = 0, right_tokens = 0, tokens = 0;
};

struct ByLength {
  std::vector<int64_t> lengths;
  std::vector<std::vector<Tally>> tallies;  // [model][length]
};

// a / b as a percentage rounded down to a tenth, so that only a perfect score shows 100.0.
double percent(int64_t a, int64_t b) {
  return static_cast<double>(1000 * a / b) / 10.0;
}
double exact_percent(const Tally& t) {
  return percent(t.exact, t.sequences);
}
double token_percent(const Tally& t) {
  return percent(t.right_tokens, t.tokens);
}

// What the training measured: each model's mean loss in each sixth of the steps it took, and
// its time per step.
struct Training {
  std::vector<std::vector<float>> mean_loss;  // [model][sixth]
  std::vector<double> seconds_per_step;
};

// The training and the measurement of this section, below it.
Training train_in_lock_step(std::vector<Contestant>& models, const data::TaskConfig& train_task,
                            int64_t steps, int64_t batch_size, uint64_t seed);
ByLength copy_accuracy_by_length(const std::vector<Contestant>& models, int64_t longest,
                                 int64_t per_length, uint64_t seed);
void draw_copy_accuracy(const std::vector<Contestant>& models, const ByLength& r, int64_t steps,
                        const std::string& out_dir);
void check_copy_claims(const ByLength& r, const Training& training, int64_t steps, Checks& check);

// Each row's length without its padding: where the GRU's final state is read.
std::vector<int64_t> source_lengths(const IndexTensor& src) {
  const int64_t batch = src.shape()[0], len = src.shape()[1];
  std::vector<int64_t> lengths(static_cast<size_t>(batch), 0);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < len; ++t)
      lengths[static_cast<size_t>(b)] += src.data()[b * len + t] != data::kPad;
  return lengths;
}

// The four models behind one interface. The GRUs' peak rate is 3e-3, the Transformers' 9e-3:
// half the peak of §5.3's formula for d_model 32 and 100 warm-up steps (32^-0.5 * 100^-0.5).
// The attentional GRU costs three to four times as much per step as any of the others (its
// decoder runs one step per token even under teacher forcing, each step attending over the
// whole source), so it gets only the first half of the batches.
std::vector<Contestant> contestants(RecurrentSeq2Seq& gru, AttentionalSeq2Seq& attentional,
                                    Transformer& transformer, Transformer& pooled, int64_t steps) {
  // Each returns a function that keeps a pointer to the model, which outlives it.
  const auto src_cross_entropy = [](const auto& model) {
    return [m = &model](const data::Batch& batch) {
      return cross_entropy(m->forward(batch, source_lengths(batch.src)), batch.tgt_out,
                           {.ignore_index = data::kPad});
    };
  };
  const auto greedy_of = [](const auto& model) {
    return [m = &model](const std::vector<std::vector<int32_t>>& sources, int64_t max_len) {
      return m->greedy(data::pad_sequences(sources), max_len);
    };
  };
  return {{"GRU", gru, 3e-3f, steps, src_cross_entropy(gru), greedy_of(gru)},
          {"GRU+attn", attentional, 3e-3f, steps / 2, src_cross_entropy(attentional),
           greedy_of(attentional)},
          {"Transformer", transformer, 9e-3f, steps,
           [&transformer](const data::Batch& batch) {
             return training::teacher_forced_loss(transformer, batch);
           },
           [&transformer](const std::vector<std::vector<int32_t>>& sources, int64_t max_len) {
             transformer.eval();
             return training::decode_corpus(transformer, sources,
                                            {.max_len = max_len,
                                             .batch = static_cast<int64_t>(sources.size()),
                                             .by_length = false});
           }},
          {"Tr. pooled", pooled, 9e-3f, steps,
           [&pooled](const data::Batch& batch) {
             return cross_entropy(pooled_forward(pooled, batch), batch.tgt_out,
                                  {.ignore_index = data::kPad});
           },
           [&pooled](const std::vector<std::vector<int32_t>>& sources, int64_t max_len) {
             return pooled_greedy(pooled, data::pad_sequences(sources), max_len);
           }}};
}

// Whether two models of the same shape hold the same weights, bit for bit.
bool same_weights(const nn::Module& a, const nn::Module& b) {
  const nn::NamedTensors pa = a.named_parameters(), pb = b.named_parameters();
  if (pa.size() != pb.size()) return false;
  for (size_t i = 0; i < pa.size(); ++i)
    if (max_abs_diff(pa[i].second, pb[i].second) != 0.0f) return false;
  return true;
}

void recurrent_forgets(bool quick, uint64_t seed, const std::string& out_dir, Checks& check) {
  banner("3. A recurrent model forgets");
  const int64_t longest = quick ? 8 : 24, steps = quick ? 150 : 1200, batch_size = 32;
  const data::TaskConfig train_task{.vocab_size = 11, .min_len = 2, .max_len = longest};
  // The attentional model draws from its own generator, so that the other two start from the
  // same weights with it or without it.
  Rng rng(seed + 2), attention_rng(seed + 5);
  // [snippet: models]
  RecurrentSeq2Seq gru(11, 60, rng);
  AttentionalSeq2Seq attentional(11, 60, attention_rng);
  const TransformerConfig config{.vocab_size = 11,
                                 .d_model = 32,
                                 .d_ff = 64,
                                 .heads = 4,
                                 .encoder_layers = 2,
                                 .decoder_layers = 2,
                                 .max_len = 64,
                                 .dropout = 0.0f};
  Rng same_start = rng;  // the pooled Transformer starts from the Transformer's weights
  Transformer transformer(config, rng);
  Transformer pooled(config, same_start);
  // [/snippet]
  std::vector<Contestant> models = contestants(gru, attentional, transformer, pooled, steps);
  fmt::print("  parameters: GRU {}, GRU+attn {}, Transformer {}, Tr. pooled {}\n",
             gru.parameter_count(), attentional.parameter_count(), transformer.parameter_count(),
             pooled.parameter_count());
  const double ratio = static_cast<double>(gru.parameter_count()) /
                       static_cast<double>(transformer.parameter_count());
  check(ratio > 0.8 && ratio < 1.25,
        fmt::format("the GRU and the Transformer have comparable sizes (ratio {:.2f})", ratio));
  check(same_weights(transformer, pooled),
        "the pooled Transformer starts from the Transformer's weights");

  const Training training = train_in_lock_step(models, train_task, steps, batch_size, seed);
  const ByLength r = copy_accuracy_by_length(models, longest, quick ? 32 : 100, seed);
  draw_copy_accuracy(models, r, steps, out_dir);

  // The first length from which a model's exact copies stay below a level (0 if they never do).
  const auto below_from = [&](Model model, double level) -> int64_t {
    size_t from = r.lengths.size();
    while (from > 0 && exact_percent(r.tallies[model][from - 1]) < level) --from;
    return from < r.lengths.size() ? r.lengths[from] : 0;
  };
  const int64_t gru_half = below_from(kGru, 50), gru_none = below_from(kGru, 0.1);
  check(gru_half > 0 && gru_half <= 8 && gru_none > 0,
        fmt::format("the plain GRU forgets: its exact copies fall below 50% from length {} and to "
                    "none from length {}",
                    gru_half, gru_none));
  const int64_t pooled_half = below_from(kPooled, 50), pooled_none = below_from(kPooled, 0.1);
  check(pooled_half > 0 && pooled_half <= 12 && pooled_none > 0,
        fmt::format("the Transformer whose decoder sees one pooled vector forgets too: its exact "
                    "copies fall below 50% from length {} and to none from length {}",
                    pooled_half, pooled_none));
  if (quick) return;  // the models only start to learn in 150 steps; the claims need the full run
  check_copy_claims(r, training, steps, check);
}

// Trains the models on the same batches with the same kind of schedule, all clipped. The
// losses are averaged over each sixth of the training, to smooth out single batches.
Training train_in_lock_step(std::vector<Contestant>& models, const data::TaskConfig& train_task,
                            int64_t steps, int64_t batch_size, uint64_t seed) {
  // A linear warm-up over 100 steps, then lr ~ step^-0.5, the shape of §5.3's schedule.
  const auto schedule = [](float peak) -> training::Schedule {
    return [peak](int64_t step) {
      return peak * std::min(static_cast<float>(step) / 100.0f,
                             std::sqrt(100.0f / static_cast<float>(step)));
    };
  };
  std::vector<training::Trainer> trainers;
  for (const Contestant& m : models)
    trainers.emplace_back(nn::Optimizer(m.model.named_parameters(), nn::AdamConfig{}),
                          schedule(m.peak_rate), training::StepOptions{.clip = 1.0f});
  data::BatchSource batches =
      data::BatchSource::generated(data::Task::Copy, train_task, batch_size, Rng(seed + 3));
  const int64_t sixth = steps / 6;
  Training result;
  result.mean_loss.assign(models.size(), {});
  result.seconds_per_step.assign(models.size(), 0.0);
  std::vector<double> loss_sum(models.size(), 0.0);
  fmt::print("  {:<20}", "mean loss, steps");
  for (const Contestant& m : models) fmt::print(" {:>11}", m.name);
  fmt::print("\n");
  // A plain loop rather than training::run, which trains one model: here every model takes
  // its step on the same batch before the next batch is drawn, each step timed on its own.
  for (int64_t step = 1; step <= 6 * sixth; ++step) {
    const data::Batch batch = batches.next();
    for (size_t i = 0; i < models.size(); ++i) {
      if (step > models[i].steps) continue;
      const auto t0 = std::chrono::steady_clock::now();
      loss_sum[i] += trainers[i].step([&] { return models[i].loss(batch); }).loss;
      result.seconds_per_step[i] += seconds_since(t0) / static_cast<double>(models[i].steps);
    }
    if (step % sixth != 0) continue;
    fmt::print("  {:<20}", fmt::format("{:>5}-{}", step - sixth + 1, step));
    for (size_t i = 0; i < models.size(); ++i) {
      const bool trained = step <= models[i].steps;
      const double mean = loss_sum[i] / static_cast<double>(sixth);
      if (trained) result.mean_loss[i].push_back(static_cast<float>(mean));
      fmt::print(" {:>11}", trained ? fmt::format("{:.3f}", mean) : "-");
      loss_sum[i] = 0;
    }
    fmt::print("\n");
  }
  fmt::print("  time per step:");
  for (size_t i = 0; i < models.size(); ++i)
    fmt::print("{} {} {:.0f} ms", i ? "," : "", models[i].name, 1000 * result.seconds_per_step[i]);
  fmt::print("\n");
  return result;
}

// Exact copies and right tokens of decoded outputs against the copy targets.
Tally score(const std::vector<data::Pair>& pairs, const Decoded& out) {
  Tally t;
  for (size_t i = 0; i < pairs.size(); ++i) {
    const std::vector<int32_t> want(pairs[i].tgt.begin() + 1, pairs[i].tgt.end() - 1);
    t.exact += out[i] == want;
    for (size_t j = 0; j < want.size(); ++j)
      t.right_tokens += j < out[i].size() && out[i][j] == want[j];
    t.tokens += static_cast<int64_t>(want.size());
  }
  t.sequences = static_cast<int64_t>(pairs.size());
  return t;
}

// Greedy decoding of fresh sequences, one length at a time.
ByLength copy_accuracy_by_length(const std::vector<Contestant>& models, int64_t longest,
                                 int64_t per_length, uint64_t seed) {
  ByLength r;
  r.tallies.resize(models.size());
  const int width = 12 * static_cast<int>(models.size());
  fmt::print("\n  {:>6}{:>{}}{:>{}}\n", "", "exact copies (%)", width, "right tokens (%)", width);
  fmt::print("  {:>6}", "length");
  for (int column = 0; column < 2; ++column)
    for (const Contestant& m : models) fmt::print(" {:>11}", m.name);
  fmt::print("\n");
  Rng eval_rng(seed + 4);
  for (int64_t len = 2; len <= longest; len += 2) {
    const data::TaskConfig task{.vocab_size = 11, .min_len = len, .max_len = len};
    const std::vector<data::Pair> pairs =
        data::generate(data::Task::Copy, per_length, task, eval_rng);
    std::vector<std::vector<int32_t>> sources;
    for (const auto& p : pairs) sources.push_back(p.src);
    r.lengths.push_back(len);
    for (size_t i = 0; i < models.size(); ++i)
      r.tallies[i].push_back(score(pairs, models[i].decode(sources, len + 2)));
    fmt::print("  {:>6}", len);
    for (const auto& t : r.tallies) fmt::print(" {:>11.1f}", exact_percent(t.back()));
    for (const auto& t : r.tallies) fmt::print(" {:>11.1f}", token_percent(t.back()));
    fmt::print("\n");
  }
  return r;
}

// The claims of the full run.
void check_copy_claims(const ByLength& r, const Training& training, int64_t steps, Checks& check) {
  const auto exact = [&](int model, size_t length) {
    return exact_percent(r.tallies[static_cast<size_t>(model)][length]);
  };
  const auto tokens = [&](int model, size_t length) {
    return token_percent(r.tallies[static_cast<size_t>(model)][length]);
  };
  const size_t middle = r.lengths.size() / 2, last = r.lengths.size() - 1;
  double attentional_exact = 100, attentional_tokens = 100;
  for (size_t l = 0; l < r.lengths.size(); ++l) {
    attentional_exact = std::min(attentional_exact, exact(kAttentional, l));
    attentional_tokens = std::min(attentional_tokens, tokens(kAttentional, l));
  }
  check(attentional_exact >= 50 && attentional_tokens >= 90,
        fmt::format("the GRU with attention copies at least {:.1f}% of the sequences exactly and "
                    "gets at least {:.1f}% of the tokens right at every length up to {}",
                    attentional_exact, attentional_tokens, r.lengths.back()));
  check(exact(kAttentional, middle) > exact(kGru, middle) + 50 &&
            exact(kTransformer, middle) > exact(kGru, middle) + 50,
        fmt::format("at length {} the GRU with attention copies {:.1f}% exactly, the Transformer "
                    "{:.1f}%, the plain GRU {:.1f}%",
                    r.lengths[middle], exact(kAttentional, middle), exact(kTransformer, middle),
                    exact(kGru, middle)));
  check(tokens(kTransformer, last) > tokens(kGru, last) + 40,
        fmt::format("at length {} the Transformer still gets {:.1f}% of the tokens right, the "
                    "plain GRU {:.1f}% (chance: 1/7 = 14%)",
                    r.lengths[last], tokens(kTransformer, last), tokens(kGru, last)));
  // The Transformer and the pooled one start from the same weights and train on the same
  // batches at the same rate: only the memory their decoders see differs.
  check(exact(kTransformer, middle) > exact(kPooled, middle) + 50,
        fmt::format("at length {} the Transformer copies {:.1f}% exactly; from one pooled vector "
                    "the same Transformer copies {:.1f}%",
                    r.lengths[middle], exact(kTransformer, middle), exact(kPooled, middle)));
  check(tokens(kPooled, last) < tokens(kGru, last) + 15 &&
            tokens(kTransformer, last) > tokens(kPooled, last) + 40,
        fmt::format("at length {} the pooled Transformer gets {:.1f}% of the tokens right, near "
                    "the plain GRU's {:.1f}% and far from the Transformer's {:.1f}%",
                    r.lengths[last], tokens(kPooled, last), tokens(kGru, last),
                    tokens(kTransformer, last)));
  const std::vector<float>& pooled_loss = training.mean_loss[kPooled];
  check(pooled_loss.back() > 5 * training.mean_loss[kTransformer].back(),
        fmt::format("over steps {}-{} the pooled Transformer's mean loss is {:.3f}, {:.0f}x the "
                    "Transformer's {:.3f}",
                    steps - steps / 6 + 1, steps, pooled_loss.back(),
                    pooled_loss.back() / training.mean_loss[kTransformer].back(),
                    training.mean_loss[kTransformer].back()));
  // Both trained on steps 401-600: the third sixth. The Transformer's last sixth comes after
  // twice as many batches as the attentional GRU's.
  const std::vector<float>&attentional_loss = training.mean_loss[kAttentional],
        &transformer_loss = training.mean_loss[kTransformer];
  check(transformer_loss[2] > 2 * attentional_loss[2],
        fmt::format("on the same batches (steps {}-{}) the Transformer's mean loss is {:.1f}x the "
                    "GRU with attention's ({:.3f} against {:.3f})",
                    steps / 3 + 1, steps / 2, transformer_loss[2] / attentional_loss[2],
                    transformer_loss[2], attentional_loss[2]));
  const float catch_up = transformer_loss.back() / attentional_loss.back();
  check(catch_up > 0.5f && catch_up < 2.0f,
        fmt::format("after twice the batches (steps {}-{}) the Transformer's mean loss, {:.3f}, is "
                    "about where the GRU with attention's was after steps {}-{}, {:.3f}",
                    steps - steps / 6 + 1, steps, transformer_loss.back(), steps / 3 + 1, steps / 2,
                    attentional_loss.back()));
  // Both GRUs run one cell step per position; the attentional one also scores all S encoder
  // states at each of its decoder's steps, a handful of small ops each time.
  const double slower =
      training.seconds_per_step[kAttentional] / training.seconds_per_step[kTransformer];
  const double plain = training.seconds_per_step[kGru] / training.seconds_per_step[kTransformer];
  check.timing(slower > 2 && plain < slower / 1.5,
               fmt::format("a training step of the GRU with attention takes {:.1f}x as long as "
                           "the Transformer's, a plain GRU's {:.1f}x: the difference is "
                           "the attention at every decoder step",
                           slower, plain));
}

// One curve per model: exact copies against length.
void draw_copy_accuracy(const std::vector<Contestant>& models, const ByLength& r, int64_t steps,
                        const std::string& out_dir) {
  std::vector<viz::Series> curves;
  for (size_t i = 0; i < models.size(); ++i) {
    viz::Series curve{.name = models[i].steps == steps
                                  ? models[i].name
                                  : fmt::format("{} ({} steps)", models[i].name, models[i].steps)};
    for (size_t l = 0; l < r.lengths.size(); ++l) {
      curve.xs.push_back(static_cast<float>(r.lengths[l]));
      curve.ys.push_back(static_cast<float>(exact_percent(r.tallies[i][l])));
    }
    curves.push_back(curve);
  }
  const std::string file = out_dir + "/copy_accuracy.png";
  viz::write_png(viz::line_plot(curves, {.title = fmt::format("exact copies after {} steps, by "
                                                              "length",
                                                              steps),
                                         .x_label = "sequence length",
                                         .y_label = "% copied exactly"}),
                 file);
  fmt::print("  wrote {}\n", file);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Lesson 10: why self-attention"};
  LessonFlags flags(app, "10_why_self_attention", "a smaller run in a few seconds",
                    "seed for weights and data");
  CLI11_PARSE(app, argc, argv);

  Checks check;
  check.timings_checked = timings_checkable(flags.quick);
  try {
    const auto start = std::chrono::steady_clock::now();
    time_per_layer(flags.quick, flags.seed, flags.out(), check);
    steps_and_paths(flags.quick, flags.seed, flags.out(), check);
    recurrent_forgets(flags.quick, flags.seed, flags.out(), check);
    fmt::print("\n  total time {:.1f} s\n", seconds_since(start));
  } catch (const std::exception& e) {
    fmt::print("\nlesson 10: stopped by an exception: {}\n", e.what());
    return 1;
  }
  return check.summary("lesson 10");
}
