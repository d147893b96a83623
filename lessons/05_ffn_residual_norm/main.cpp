// Lesson 05: the position-wise feed-forward network, residual connections, LayerNorm versus
// BatchNorm.
//
// Around each attention layer the Transformer puts three plainer pieces: a two-layer MLP
// applied to every position on its own, a residual connection x + Sublayer(x), and a
// LayerNorm. Three sections ask what each one does: the FFN computed token by token and
// checked against nn::PositionwiseFeedForward, then a small encoder trained on the reverse
// task with and without its FFN blocks at about the same parameter count; gradient norms at
// each layer's input through a deep tanh stack, plain, residual, post-norm and pre-norm, and
// the projected shortcut a residual needs when a sub-layer changes the width; and LayerNorm
// against BatchNorm on padded batches of sequences of very different lengths, in training and
// in eval mode, and what BatchNorm's batch statistics carry past the look-ahead mask.
// README.md is the text that walks through this file. Every claim is checked; a failed check
// makes the program exit with 1.
//
// main(), at the end, is the table of contents: it calls the sections in the order of
// README.md, and they are defined above it in the same order.
//
// Shape legend: B batch, T sequence length, D d_model, F d_ff.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <exception>
#include <functional>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "autograd/errors.h"
#include "autograd/graph.h"
#include "autograd/ops.h"
#include "autograd/random.h"
#include "autograd/tensor.h"
#include "data/batch.h"
#include "data/batch_source.h"
#include "data/tasks.h"
#include "data/vocab.h"
#include "lessons/lesson.h"
#include "nn/attention.h"
#include "nn/batch_norm.h"
#include "nn/feed_forward.h"
#include "nn/layers.h"
#include "nn/module.h"
#include "nn/optim.h"
#include "viz/heatmap.h"
#include "viz/line_plot.h"
#include "viz/png.h"

using namespace gf;
using namespace gf::lessons;

namespace {

constexpr float kAblationRate = 2e-3f;   // Adam's learning rate in the FFN ablation
constexpr int64_t kFinalLossSteps = 50;  // the ablation's final loss: the mean of these last steps

// ---- 1. The position-wise FFN ----

// 2 D F + F + D: W1 [D, F], b1 [F], W2 [F, D], b2 [D].
int64_t ffn_parameters(int64_t d, int64_t f) {
  return d * f + f + f * d + d;
}

// What the FFN's parameter count comes to, here and in the paper's base model.
struct FfnShare {
  bool counts_agree = false;  // the module's count is 2 D F + F + D, 2,099,712 for the paper's
  double of_layer = 0;        // the FFN's share of an encoder layer's parameters
};

FfnShare print_parameter_counts(const nn::PositionwiseFeedForward& ffn, int64_t d_model,
                                int64_t d_ff) {
  fmt::print("  parameters: W1 D x F + b1 F + W2 F x D + b2 D = 2 D F + F + D\n");
  fmt::print("    this lesson  D = {:>3}, F = {:>4}: {:>9}\n", d_model, d_ff,
             ffn.parameter_count());
  // The paper's encoder layer (§3.1): attention (W^Q, W^K, W^V, W^O with biases, each
  // D x D + D), the FFN, and two LayerNorms (gain and bias, 2 D each).
  const int64_t attention = 4 * (512 * 512 + 512), feed = ffn_parameters(512, 2048),
                norms = 2 * 2 * 512;
  const int64_t layer = attention + feed + norms;
  const double ffn_share = static_cast<double>(feed) / static_cast<double>(layer);
  fmt::print("    the paper    D = 512, F = 2048: {:>9}  (per layer; attention has {})\n", feed,
             attention);
  fmt::print("  the paper's encoder layer: {} attention + {} FFN + {} two LayerNorms = {}\n",
             attention, feed, norms, layer);
  fmt::print("    the FFN's share: {:.1f}%\n\n", 100.0 * ffn_share);
  return {.counts_agree = ffn.parameter_count() == ffn_parameters(d_model, d_ff) && feed == 2099712,
          .of_layer = ffn_share};
}

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

  fmt::print("  x [{}, {}, {}], d_model = {}, d_ff = 4 d_model = {}\n\n", b, t_len, d_model,
             d_model, d_ff);
  fmt::print("  {:<52} {:>9}\n", "compared with the loops over positions", "max diff");
  fmt::print("  {:<52} {:>9.1e}\n", "PositionwiseFeedForward on [B, T, D]",
             max_abs_diff(y, by_hand));
  fmt::print("  {:<52} {:>9.1e}\n\n", "the module on each position alone, [1, 1, D]", alone_diff);
  fmt::print("  one token changed -> {} of {} output rows changed\n\n", rows_changed, b * t_len);
  const FfnShare share = print_parameter_counts(ffn, d_model, d_ff);
  check(max_abs_diff(y, by_hand) <= 1e-5f,
        "the module equals one MLP applied position by position");
  check(alone_diff <= 1e-5f, "a position's output is the same with or without the others");
  check(rows_changed == 1, "changing one token changes exactly one output row");
  check(share.counts_agree,
        "2 D F + F + D parameters: 2,099,712 in the paper's base model, twice attention's");
  check(share.of_layer > 0.66 && share.of_layer < 0.67,
        fmt::format("the FFN holds {:.1f}% of an encoder layer's parameters: two thirds",
                    100.0 * share.of_layer));
}

// ---- 1b. What the FFN adds: the same encoder with and without it ----

// Which sub-layer a block of the encoder holds; every block is LayerNorm(x + Sublayer(x)), the
// paper's post-norm arrangement (§3.1).
enum class Block { attention, feed_forward };

// An encoder of the paper's kind: embeddings scaled by sqrt(D) (§3.4), sinusoidal positions
// (§3.5), then the blocks in order, each LayerNorm(x + Sublayer(x)) (§3.1), and a Linear that
// reads each position's output token. No dropout, so a seed fixes the whole run.
class SmallEncoder : public nn::Module {
 public:
  SmallEncoder(const std::vector<Block>& blocks, int64_t vocab, int64_t d_model, int64_t d_ff,
               int64_t heads, Rng& rng)
      : blocks_(blocks),
        embed_(vocab, d_model, rng),
        positions_(64, d_model),
        readout_(d_model, vocab, rng) {
    register_module("embed", embed_);
    for (size_t i = 0; i < blocks.size(); ++i) {
      if (blocks[i] == Block::attention) {
        attention_.push_back(std::make_unique<nn::MultiHeadAttention>(
            nn::AttentionConfig{.d_model = d_model, .heads = heads}, rng));
        register_module(fmt::format("blocks.{}.self_attn", i), *attention_.back());
      } else {
        ffn_.push_back(std::make_unique<nn::PositionwiseFeedForward>(d_model, d_ff, rng));
        register_module(fmt::format("blocks.{}.ffn", i), *ffn_.back());
      }
      norms_.push_back(std::make_unique<nn::LayerNorm>(d_model));
      register_module(fmt::format("blocks.{}.norm", i), *norms_.back());
    }
    register_module("readout", readout_);
  }

  // [snippet: ablation-forward]
  // src [B, S] -> logits [B, S, V]: at every position, a guess of that position's output token.
  Tensor forward(const IndexTensor& src) {
    const int64_t d_model = embed_.weight.shape()[1];
    Tensor h = embed_.forward(src) * std::sqrt(static_cast<float>(d_model)) +
               positions_.rows(0, src.shape()[1]);
    const Tensor padding = nn::padding_mask(src, data::kPad);  // no token attends to padding
    size_t next_attention = 0, next_ffn = 0;
    for (size_t i = 0; i < blocks_.size(); ++i) {
      const Tensor sub = blocks_[i] == Block::attention
                             ? attention_[next_attention++]->forward(h, h, padding)
                             : ffn_[next_ffn++]->forward(h);
      h = norms_[i]->forward(h + sub);
    }
    return readout_.forward(h);
  }
  // [/snippet]

 private:
  std::vector<Block> blocks_;
  nn::Embedding embed_;
  nn::PositionalEncoding positions_;
  std::vector<std::unique_ptr<nn::MultiHeadAttention>> attention_;
  std::vector<std::unique_ptr<nn::PositionwiseFeedForward>> ffn_;
  std::vector<std::unique_ptr<nn::LayerNorm>> norms_;
  nn::Linear readout_;
};

// What one training run ends with, measured on held-out sequences.
struct AblationRun {
  int64_t parameters = 0;
  double final_loss = 0;  // mean training loss of the last kFinalLossSteps steps
  double token_accuracy = 0, exact = 0;
};

// Trains one encoder from seed on fresh reverse pairs and scores it on the held-out pairs.
AblationRun train_encoder(const std::vector<Block>& blocks, int64_t d_model,
                          const data::TaskConfig& task, int64_t steps, uint64_t seed,
                          const data::Batch& held_out) {
  const int64_t d_ff = 4 * 32, heads = 2, batch = 32;  // 4 x the narrow d_model (§3.3)
  Rng rng(seed);
  SmallEncoder model(blocks, task.vocab_size, d_model, d_ff, heads, rng);
  data::BatchSource batches =
      data::BatchSource::generated(data::Task::Reverse, task, batch, Rng(rng.next_u64()));
  nn::Optimizer adam(model.named_parameters(), nn::AdamConfig{});
  AblationRun run{.parameters = model.parameter_count()};
  const int64_t tail = std::min(kFinalLossSteps, steps);
  for (int64_t step = 1; step <= steps; ++step) {
    const data::Batch b = batches.next();
    adam.zero_grad();
    const Tensor loss =
        cross_entropy(model.forward(b.src), b.tgt_out, {.ignore_index = data::kPad});
    loss.backward();
    adam.step(kAblationRate);
    if (step > steps - tail) run.final_loss += loss.item() / static_cast<double>(tail);
  }
  NoGrad no_grad;
  const Tensor logits = model.forward(held_out.src);  // [B, S, V]
  const int64_t rows = held_out.src.shape()[0], len = held_out.src.shape()[1];
  const int64_t vocab = task.vocab_size;
  int64_t right_tokens = 0, tokens = 0, right_rows = 0;
  for (int64_t r = 0; r < rows; ++r) {
    bool all_right = true;
    for (int64_t t = 0; t < len; ++t) {
      const int32_t want = held_out.tgt_out.data()[r * len + t];
      if (want == data::kPad) continue;
      const float* row = logits.data() + (r * len + t) * vocab;
      const int32_t guess = static_cast<int32_t>(std::max_element(row, row + vocab) - row);
      right_tokens += guess == want ? 1 : 0;
      ++tokens;
      all_right = all_right && guess == want;
    }
    right_rows += all_right ? 1 : 0;
  }
  run.token_accuracy = static_cast<double>(right_tokens) / static_cast<double>(tokens);
  run.exact = static_cast<double>(right_rows) / static_cast<double>(rows);
  return run;
}

// The three encoders the ablation trains, and what each run gave, per seed.
struct Variant {
  const char* name;
  std::vector<Block> blocks;
  int64_t d_model;
  std::vector<AblationRun> runs{};  // one per seed
};

// Whether variant a beat variant b in every seed, on the field.
bool better_in_every_seed(const Variant& a, const Variant& b, double AblationRun::*field) {
  bool always = true;
  for (size_t i = 0; i < a.runs.size(); ++i) always = always && a.runs[i].*field > b.runs[i].*field;
  return always;
}

// The claims about the ablation; ffn_ablation() prints the runs they rest on.
void check_ablation(const std::vector<Variant>& variants, uint64_t seeds, Checks& check) {
  const Variant &with_ffn = variants[0], &wide = variants[1], &narrow = variants[2];
  const int64_t p_ffn = with_ffn.runs[0].parameters, p_wide = wide.runs[0].parameters;
  const int64_t ffn_block = ffn_parameters(32, 4 * 32), norm = 2 * 32;
  fmt::print("  the two FFN blocks: 2 x ({} FFN + {} LayerNorm) = {} parameters\n\n", ffn_block,
             norm, 2 * (ffn_block + norm));
  check(p_ffn - narrow.runs[0].parameters == 2 * (ffn_block + norm),
        fmt::format("removing them leaves {} - {} = {}: nothing else differs at D = 32", p_ffn,
                    2 * (ffn_block + norm), narrow.runs[0].parameters));
  check(
      p_wide >= p_ffn && p_wide <= p_ffn + p_ffn / 20,
      fmt::format("without the FFN, D = 56 gives {} parameters: {:.1f}% more than the {} "
                  "with it, within 5%",
                  p_wide, 100.0 * static_cast<double>(p_wide - p_ffn) / static_cast<double>(p_ffn),
                  p_ffn));
  check(better_in_every_seed(with_ffn, wide, &AblationRun::exact) &&
            better_in_every_seed(with_ffn, wide, &AblationRun::token_accuracy),
        fmt::format("with the FFN the encoder beats the wider one without it in {} of {} "
                    "seeds, in exact match and token accuracy",
                    seeds, seeds));
  check(better_in_every_seed(with_ffn, narrow, &AblationRun::exact),
        fmt::format("and beats the same encoder without the FFN at D = 32 in {} of {} seeds", seeds,
                    seeds));
}

// The FFN's contribution measured, not counted: the same encoder trained with its FFN blocks and
// without them, at (almost) the same number of parameters, on the library's reverse task.
void ffn_ablation(bool quick, uint64_t seed, Checks& check) {
  const data::TaskConfig task{.vocab_size = 11, .min_len = 3, .max_len = 8};
  const int64_t steps = 600, held_out_rows = 256;
  const uint64_t seeds = quick ? 1 : 3;
  const Block att = Block::attention, ffn = Block::feed_forward;
  // [snippet: ablation-variants]
  // With the FFN: attention and FFN blocks in turn, as in the paper's encoder layer (§3.1), with
  // d_ff = 4 d_model = 128. Without it: the FFN blocks removed and d_model widened from 32 to
  // 56, which makes up their parameters (3.4% more); and, for reference, not widened.
  std::vector<Variant> variants = {
      {.name = "attention + FFN, D = 32", .blocks = {att, ffn, att, ffn}, .d_model = 32},
      {.name = "attention only, D = 56", .blocks = {att, att}, .d_model = 56},
      {.name = "attention only, D = 32", .blocks = {att, att}, .d_model = 32}};
  // [/snippet]
  Rng held_out_rng(seed ^ 0x5eedf00dULL);  // not a training stream: never trained on
  const data::Batch held_out =
      data::make_batch(data::generate(data::Task::Reverse, held_out_rows, task, held_out_rng));
  fmt::print(
      "\n  the library's reverse task: src = {} to {} of {} symbols and </s>, target = the "
      "symbols\n  reversed and </s>, every position predicted at once\n",
      task.min_len, task.max_len, task.vocab_size - data::kNumSpecial);
  fmt::print(
      "  {} steps of 32 fresh pairs, Adam at {} (constant), no dropout; scored on {} held-out "
      "pairs;\n  final loss: the mean training loss of the last {} steps\n\n",
      steps, kAblationRate, held_out_rows, kFinalLossSteps);
  fmt::print("  {:<24} {:>6} {:>10} {:>5} {:>11} {:>10} {:>6}\n", "encoder", "blocks", "parameters",
             "seed", "final loss", "token acc", "exact");
  for (Variant& v : variants)
    for (uint64_t s = seed; s < seed + seeds; ++s) {
      v.runs.push_back(train_encoder(v.blocks, v.d_model, task, steps, s, held_out));
      const AblationRun& r = v.runs.back();
      fmt::print("  {:<24} {:>6} {:>10} {:>5} {:>11.4f} {:>10.4f} {:>6.3f}\n", v.name,
                 v.blocks.size(), r.parameters, s, r.final_loss, r.token_accuracy, r.exact);
    }
  fmt::print("\n");
  check_ablation(variants, seeds, check);
}

// ---- 2. Residual connections ----

// The Euclidean norm of all of t's elements.
float norm_of(const Tensor& t) {
  double s = 0.0;
  for (int64_t i = 0; i < t.numel(); ++i) s += static_cast<double>(t.data()[i]) * t.data()[i];
  return static_cast<float>(std::sqrt(s));
}

// [snippet: residual-stack]
// Four ways to stack L sub-layers f_i(h) = tanh(h W_i^T + b_i):
enum class Stack {
  plain,      // h_{i+1} = f_i(h_i)
  residual,   // h_{i+1} = h_i + f_i(h_i)            (He et al. 2016)
  post_norm,  // h_{i+1} = LN(h_i + f_i(h_i))        (the paper, §3.1)
  pre_norm,   // h_{i+1} = h_i + f_i(LN(h_i))        (most later models)
};

// One layer of the stack. `norm` is a LayerNorm with gain 1 and bias 0, as at initialisation.
// With `identity_only`, f's value still enters the sum but no gradient flows back through f:
// what reaches h_i then came down the identity path alone.
Tensor stack_layer(Stack stack, const nn::Linear& linear, const nn::LayerNorm& norm,
                   const Tensor& h, bool identity_only) {
  const auto f = [&](const Tensor& in) {
    const Tensor y = tanh(linear.forward(in));
    return identity_only ? y.detach() : y;
  };
  switch (stack) {
    case Stack::plain:
      return f(h);
    case Stack::residual:
      return h + f(h);
    case Stack::post_norm:
      return norm.forward(h + f(h));
    case Stack::pre_norm:
      return h + f(norm.forward(h));
  }
  throw std::logic_error("stack_layer: unknown Stack");
}

// |dL/dh_i| at the input h_i of every layer. probe_i is a zero tensor added to h_i: it changes
// nothing, but it is a leaf, so after backward() its grad() is dL/dh_i.
std::vector<float> input_gradient_norms(Stack stack,
                                        const std::vector<std::unique_ptr<nn::Linear>>& layers,
                                        const Tensor& x, const Tensor& target,
                                        bool identity_only = false) {
  const nn::LayerNorm norm(x.shape().back());
  std::vector<Tensor> probes;
  Tensor h = x;
  for (const auto& layer : layers) {
    Tensor probe = Tensor::zeros(h.shape());
    probe.set_requires_grad();
    probes.push_back(probe);
    h = stack_layer(stack, *layer, norm, h + probe, identity_only);  // h_{i+1} from h_i
  }
  const Tensor loss = mean(pow(h - target, 2.0f));
  loss.backward();
  std::vector<float> norms;
  for (const Tensor& p : probes) norms.push_back(norm_of(p.grad()));
  return norms;
}
// [/snippet]

// The gradient norms of the four stacks, bottom layer first, for one set of weights.
struct StackGradients {
  std::vector<float> plain, residual, post_norm, pre_norm;
  // Down the identity path alone (no gradient through any f_i); plain has none.
  std::vector<float> residual_identity, post_norm_identity, pre_norm_identity;
};

StackGradients all_stacks(const std::vector<std::unique_ptr<nn::Linear>>& layers, const Tensor& x,
                          const Tensor& target) {
  return {.plain = input_gradient_norms(Stack::plain, layers, x, target),
          .residual = input_gradient_norms(Stack::residual, layers, x, target),
          .post_norm = input_gradient_norms(Stack::post_norm, layers, x, target),
          .pre_norm = input_gradient_norms(Stack::pre_norm, layers, x, target),
          .residual_identity = input_gradient_norms(Stack::residual, layers, x, target, true),
          .post_norm_identity = input_gradient_norms(Stack::post_norm, layers, x, target, true),
          .pre_norm_identity = input_gradient_norms(Stack::pre_norm, layers, x, target, true)};
}

// The bottom layer's gradient as a fraction of the top layer's.
float bottom_over_top(const std::vector<float>& v) {
  return v.front() / v.back();
}

// One line per stack, in the same colour in both panels of the picture.
struct Curve {
  const char* name;
  const std::vector<float>* gradients;  // bottom layer first
  viz::Rgb colour;
};

// One panel: gradient norms against the layer, log scale.
viz::Image gradient_panel(const std::vector<Curve>& curves, const std::string& title) {
  std::vector<viz::Series> series;
  for (const Curve& c : curves) {
    viz::Series s{.name = c.name, .colour = c.colour};
    for (size_t i = 0; i < c.gradients->size(); ++i) {
      s.xs.push_back(static_cast<float>(i + 1));
      s.ys.push_back((*c.gradients)[i]);
    }
    series.push_back(std::move(s));
  }
  return viz::line_plot(series, {.title = title,
                                 .x_label = "layer (1 = bottom, nearest the input)",
                                 .y_label = "|dL/dh_i|",
                                 .log_y = true,
                                 .width = 600,
                                 .height = 420});
}

// Left: the full gradient of the four stacks; right: what the identity path alone brings.
void draw_gradients(const StackGradients& g, float gain, int64_t depth, const std::string& path) {
  const viz::Rgb blue{40, 100, 190}, orange{230, 120, 30}, green{45, 160, 80}, red{210, 55, 60};
  const viz::Image full = gradient_panel({{"plain f(x)", &g.plain, blue},
                                          {"residual x + f(x)", &g.residual, orange},
                                          {"post-norm LN(x + f(x))", &g.post_norm, green},
                                          {"pre-norm x + f(LN(x))", &g.pre_norm, red}},
                                         "the whole gradient");
  const viz::Image identity =
      gradient_panel({{"residual x + f(x)", &g.residual_identity, orange},
                      {"post-norm LN(x + f(x))", &g.post_norm_identity, green},
                      {"pre-norm x + f(LN(x))", &g.pre_norm_identity, red}},
                     "down the identity path alone");
  viz::write_png(viz::grid({full, identity}, 2,
                           fmt::format("gradient at each layer's input, {} layers, weights = {} x "
                                       "Xavier",
                                       depth, gain)),
                 path);
}

// The claims about the four stacks; residual_connections() prints the numbers they rest on.
void check_gradients(const StackGradients& half, const StackGradients& xavier, Checks& check) {
  const auto level = [](float r) {  // how far from level: max(r, 1 / r)
    return std::max(r, 1.0f / r);
  };
  const float plain = bottom_over_top(half.plain), residual = bottom_over_top(half.residual);
  check(plain < 1e-6f, fmt::format("without residuals the bottom layer gets {:.1e} of the "
                                   "top layer's gradient",
                                   plain));
  check(residual > 0.1f && residual < 10.0f,
        fmt::format("with residuals it gets {:.2f} of it: within a factor of 10", residual));
  bool never_below = true;  // d h_{i+1} / d h_i = I + J_i: the identity carries the gradient
  for (const float g : half.residual) never_below = never_below && g >= 0.5f * half.residual.back();
  check(never_below, "with residuals no layer gets less than half the top layer's gradient");
  check(bottom_over_top(xavier.plain) < 0.5f && bottom_over_top(xavier.residual) > 1.0f,
        "at Xavier's scale the plain gradient still shrinks and the residual one grows");
  // x + f(x) and x + f(LN(x)): with no gradient through f, dL/dh_i = dL/dh_{i+1} exactly.
  bool unchanged = true;
  for (const auto* v : {&half.residual_identity, &half.pre_norm_identity})
    for (const float g : *v) unchanged = unchanged && g == v->back();
  check(unchanged,
        "x + f(x) and x + f(LN(x)): the identity path alone brings every layer the same "
        "gradient, bit for bit");
  const float post_identity = bottom_over_top(half.post_norm_identity);
  check(post_identity < 0.5f,
        fmt::format("LN(x + f(x)): through the LayerNorms the identity path alone brings the "
                    "bottom layer {:.2f} of the top layer's gradient",
                    post_identity));
  bool norms_level = true, post_flattest = true;
  for (const StackGradients* g : {&half, &xavier}) {
    const float post = bottom_over_top(g->post_norm), pre = bottom_over_top(g->pre_norm);
    norms_level = norms_level && level(post) < 10.0f && level(pre) < 10.0f;
    post_flattest = post_flattest && level(post) < level(pre) &&
                    level(pre) < level(bottom_over_top(g->residual));
  }
  check(norms_level, "post-norm and pre-norm: bottom / top within a factor of 10 at both scales");
  // Only this toy's input gradients dL/dh_i at initialisation; Xiong et al. (2020) measure the
  // weights' gradients of a real Transformer, and there post-norm is the less level one.
  check(post_flattest,
        fmt::format("in this tanh stack, bottom / top is nearest 1 for post-norm ({:.2f}, "
                    "{:.2f}), then pre-norm ({:.2f}, {:.2f}), then x + f(x)",
                    bottom_over_top(half.post_norm), bottom_over_top(xavier.post_norm),
                    bottom_over_top(half.pre_norm), bottom_over_top(xavier.pre_norm)));
}

void residual_connections(bool quick, Rng& rng, const std::string& out_dir, Checks& check) {
  banner("2. Residual connections");
  const int64_t depth = quick ? 24 : 32, width = 32, batch = 16;
  const Tensor x = Tensor::randn({batch, width}, rng);
  const Tensor target = Tensor::randn({batch, width}, rng);
  // The same layers at two scales: Xavier's weights (gain 1), and the same weights halved.
  std::vector<std::unique_ptr<nn::Linear>> layers;
  for (int64_t i = 0; i < depth; ++i)
    layers.push_back(std::make_unique<nn::Linear>(width, width, rng));
  const StackGradients xavier = all_stacks(layers, x, target);
  const float gain = 0.5f;
  for (const auto& layer : layers)
    for (int64_t i = 0; i < layer->weight.numel(); ++i) layer->weight.data()[i] *= gain;
  const StackGradients half = all_stacks(layers, x, target);

  fmt::print("  {} layers of tanh(Linear({}, {})), batch {}, loss = mean (h_L - target)^2\n", depth,
             width, width, batch);
  fmt::print("  |dL/dh_i| at the input of layer i, weights = {} x Xavier\n\n", gain);
  fmt::print("  {:>6} {:>13} {:>13} {:>13} {:>13} {:>15}\n", "layer", "plain", "residual",
             "post-norm", "pre-norm", "post-norm,");
  fmt::print("  {:>6} {:>13} {:>13} {:>13} {:>13} {:>15}\n", "", "f(x)", "x + f(x)", "LN(x + f(x))",
             "x + f(LN(x))", "identity only");
  for (int64_t i = depth - 1; i >= 0; --i)
    if (i % (depth / 8) == 0 || i == depth - 1) {
      const auto at = static_cast<size_t>(i);
      fmt::print("  {:>6} {:>13.3e} {:>13.3e} {:>13.3e} {:>13.3e} {:>15.3e}\n", i + 1,
                 half.plain[at], half.residual[at], half.post_norm[at], half.pre_norm[at],
                 half.post_norm_identity[at]);
    }
  fmt::print("\n  {:<17} {:>11} {:>13} {:>13} {:>13}\n", "bottom / top", "plain", "residual",
             "post-norm", "pre-norm");
  for (const auto& [name, g] : {std::pair{fmt::format("{} x Xavier", gain), &half},
                                std::pair{std::string("Xavier (gain 1)"), &xavier}})
    fmt::print("  {:<17} {:>11.1e} {:>13.2f} {:>13.2f} {:>13.2f}\n", name,
               bottom_over_top(g->plain), bottom_over_top(g->residual),
               bottom_over_top(g->post_norm), bottom_over_top(g->pre_norm));
  fmt::print("  identity path alone,\n  {:<17} {:>11} {:>13.2f} {:>13.2f} {:>13.2f}\n",
             fmt::format("{} x Xavier", gain), "-", bottom_over_top(half.residual_identity),
             bottom_over_top(half.post_norm_identity), bottom_over_top(half.pre_norm_identity));
  fmt::print("\n");

  const std::string path = out_dir + "/gradients.png";
  draw_gradients(half, gain, depth, path);
  fmt::print("  wrote {}\n\n", path);
  check_gradients(half, xavier, check);
}

// x + F(x) needs F(x) as wide as x. A sub-layer that changes the width needs a projected
// shortcut, W_s x + F(x) (He et al. 2016, eq. 2); the Transformer never does, because every
// sub-layer returns d_model numbers per token (§3.1).
void projection_shortcut(Rng& rng, Checks& check) {
  const int64_t batch = 4, d_in = 16, d_out = 32;
  NoGrad no_grad;
  fmt::print("\n  a sub-layer that changes the width: d_in = {}, d_out = {}\n\n", d_in, d_out);
  // [snippet: projection-shortcut]
  // A sub-layer that widens: F(x) = tanh(x W^T + b) maps d_in = 16 numbers to d_out = 32.
  const nn::Linear widen(d_in, d_out, rng);
  const Tensor x = Tensor::randn({batch, d_in}, rng);
  const Tensor fx = tanh(widen.forward(x));  // [B, 32]
  bool refused = false;
  try {
    const Tensor y = x + fx;  // [B, 16] + [B, 32]
    fmt::print("  x + F(x): {}\n", y.shape());
  } catch (const ShapeError& e) {
    refused = true;
    fmt::print("  x + F(x) throws ShapeError: {}\n", e.what());
  }
  // The shortcut projected to d_out. Learnt: W_s is a [32, 16] Linear without bias.
  const nn::Linear shortcut(d_in, d_out, rng, /*with_bias=*/false);
  const Tensor y_learnt = shortcut.forward(x) + fx;  // W_s x + F(x), [B, 32]
  // Fixed: W_s = [I; 0] copies x into the first 16 features and zeros into the other 16.
  const Tensor y_fixed = concat({x, Tensor::zeros({batch, d_out - d_in})}, 1) + fx;
  // [/snippet]
  fmt::print("  W_s x + F(x), W_s learnt [{}, {}]: {}\n", d_out, d_in, y_learnt.shape());
  fmt::print("  W_s x + F(x), W_s = [I; 0] fixed:  {}\n\n", y_fixed.shape());
  check(refused, "x + F(x) with F(x) wider than x is refused with a ShapeError");
  check(y_learnt.shape() == Shape{batch, d_out} && y_fixed.shape() == Shape{batch, d_out},
        fmt::format("with the shortcut projected, W_s x + F(x) is [{}, {}]", batch, d_out));
  check(max_abs_diff(slice(y_fixed, 1, 0, d_in), x + slice(fx, 1, 0, d_in)) == 0.0f,
        "with W_s = [I; 0] the first 16 features are x + F(x)'s, exactly: the identity is kept");
}

// ---- 3. LayerNorm versus BatchNorm ----

constexpr int64_t kD = 8;  // features per token

// A sentence of `length` token vectors [length, D], built as the encoder's input is (§3.4,
// §3.5): a content vector, every feature 1 + noise, plus the sinusoidal encoding of its
// position, PE(t), whose features all stay within [-1, 1].
std::vector<float> sentence(int64_t length, Rng& rng) {
  static const nn::PositionalEncoding positions(256, kD);
  const float* pe = positions.table().data();  // [256, D]
  std::vector<float> v(static_cast<size_t>(length * kD));
  for (int64_t t = 0; t < length; ++t)
    for (int64_t d = 0; d < kD; ++d)
      v[static_cast<size_t>(t * kD + d)] = 1.0f + rng.normal() + pe[t * kD + d];
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
  float ln_largest = 0;                 // largest |LayerNorm output| of a real token
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
  float ln_largest = 0.0f;
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
    for (int64_t c = 0; c < cells; ++c)
      for (int64_t d = 0; d < kD; ++d)
        if (p.mask.data()[c] > 0.0f)
          ln_largest = std::max(ln_largest, std::abs(y_ln.data()[c * kD + d]));
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
          .padding_pulls = padding_pulls,
          .ln_largest = ln_largest};
}

// The probe token's d1 and the batch means of d1, batch after batch.
void draw_drift(const Drift& drift, const std::string& out_dir) {
  const viz::Series &ln = drift.ln, &bnm = drift.bnm, &bnp = drift.bnp;
  const viz::Series &mean_real = drift.mean_real, &mean_all = drift.mean_all;
  const std::string drift_path = out_dir + "/drift.png";
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

// How far a change of one later token reaches back: the largest change of the outputs at the
// probe sentence's earlier positions, and at every real token of the other sentences.
struct Leak {
  float earlier_positions = 0, other_sentences = 0;
};

// The decoder's first sub-layer, Norm(x + MaskedSelfAttention(x)) (§3.1, §3.2.3), on a padded
// batch x, then again with the probe sentence's token at `changed` replaced by another.
Leak future_reaches_back(const Padded& p, const Tensor& other_token, int64_t changed,
                         nn::MultiHeadAttention& attention,
                         const std::function<Tensor(const Tensor&)>& norm) {
  NoGrad no_grad;
  const int64_t t_max = p.x.shape()[1];
  // [snippet: future-leak]
  // The look-ahead mask of lesson 03: position i reads no key j > i.
  const Tensor look_ahead = nn::look_ahead_mask(t_max);
  const auto sublayer = [&](const Tensor& x) {
    return norm(x + attention.forward(x, x, look_ahead));
  };
  Tensor x_changed = p.x.clone();  // the same batch, the probe's (row 0's) token replaced
  std::copy(other_token.data(), other_token.data() + kD, x_changed.data() + changed * kD);
  const Tensor before = sublayer(p.x), after = sublayer(x_changed);
  // [/snippet]
  Leak leak;
  for (int64_t c = 0; c < p.mask.numel(); ++c) {
    if (p.mask.data()[c] == 0.0f || c == changed) continue;  // padding, and the token itself
    const bool earlier = c < changed;                        // sentence 0, t < changed
    float& worst = earlier ? leak.earlier_positions : leak.other_sentences;
    if (!earlier && c < t_max) continue;  // sentence 0 after the change: none here
    for (int64_t d = 0; d < kD; ++d)
      worst = std::max(worst, std::abs(after.data()[c * kD + d] - before.data()[c * kD + d]));
  }
  return leak;
}

// BatchNorm's statistics mix every position of the batch, so in training mode a later token
// moves the earlier positions' outputs, past the look-ahead mask; LayerNorm's never leave the
// token. bn_masked is already in eval mode.
void the_future_through_the_statistics(const std::vector<float>& probe_sentence, Rng& rng,
                                       nn::LayerNorm& layer_norm, nn::BatchNorm& bn_masked,
                                       Checks& check) {
  const int64_t changed = 4;  // the probe sentence's last token
  const Padded p = pad({probe_sentence, sentence(12, rng), sentence(7, rng), sentence(20, rng)});
  const std::vector<float> another = sentence(changed + 1, rng);  // its token `changed` replaces
  const Tensor other_token =
      Tensor::from({kD}, std::vector<float>(another.begin() + changed * kD, another.end()));
  nn::MultiHeadAttention attention({.d_model = kD, .heads = 2}, rng);
  nn::BatchNorm bn_training(kD);  // a fresh one in training mode: the batch's own statistics
  const std::vector<std::pair<const char*, std::function<Tensor(const Tensor&)>>> norms = {
      {"none: x + attention",
       [](const Tensor& h) {
         return h;
       }},
      {"LayerNorm",
       [&](const Tensor& h) {
         return layer_norm.forward(h);
       }},
      {"BatchNorm, training mode",
       [&](const Tensor& h) {
         return bn_training.forward(h, p.mask);
       }},
      {"BatchNorm, eval mode", [&](const Tensor& h) {
         return bn_masked.forward(h, p.mask);
       }}};
  fmt::print(
      "  a batch of 4 sentences ({} tokens: the probe, 12, 7, 20); sentence 1's token at "
      "t = {} is replaced,\n  then Norm(x + MaskedSelfAttention(x)) again; the largest "
      "change of an output:\n\n",
      probe_sentence.size() / kD, changed);
  fmt::print("    {:<26} {:>17} {:>17}\n", "Norm", fmt::format("sentence 1, t < {}", changed),
             "other sentences");
  std::vector<Leak> leaks;
  for (const auto& [name, norm] : norms) {
    leaks.push_back(future_reaches_back(p, other_token, changed, attention, norm));
    fmt::print("    {:<26} {:>17.2e} {:>17.2e}\n", name, leaks.back().earlier_positions,
               leaks.back().other_sentences);
  }
  fmt::print("\n");
  const auto untouched = [](const Leak& l) {
    return l.earlier_positions == 0.0f && l.other_sentences == 0.0f;
  };
  check(untouched(leaks[0]), "without a norm the look-ahead mask holds: no earlier output moves");
  check(untouched(leaks[1]),
        "with LayerNorm no earlier position and no other sentence moves, bit for bit");
  check(leaks[2].earlier_positions > 1e-3f && leaks[2].other_sentences > 1e-3f,
        fmt::format("with BatchNorm in training mode the later token moves the earlier positions "
                    "by up to {:.3f}, and the other sentences by up to {:.3f}",
                    leaks[2].earlier_positions, leaks[2].other_sentences));
  check(untouched(leaks[3]),
        "in eval mode (running statistics) BatchNorm lets nothing through, bit for bit");
}

// A batch of one token, the smallest there is: what BatchNorm makes of it in either mode.
struct OneToken {
  Tensor train, eval;              // [1, 1, D] outputs in training and in eval mode
  bool eval_same_in_batch = true;  // in eval mode the token gets the same numbers in a batch
};

OneToken one_token(const std::vector<float>& probe_sentence, int64_t probe_t, Rng& rng,
                   nn::BatchNorm& bn_masked) {
  NoGrad no_grad;
  const auto first = probe_sentence.begin() + probe_t * kD;
  const Tensor token = Tensor::from({1, 1, kD}, std::vector<float>(first, first + kD));
  // [snippet: one-token]
  // Training mode uses the batch's statistics: here the token's own, so x - mean = 0. The
  // running statistics play no part, so a fresh BatchNorm gives what bn_masked would.
  nn::BatchNorm in_training(kD);
  const Tensor y_train = in_training.forward(token);
  // Eval mode (bn_masked.eval() was called after the 40 batches) uses the running
  // statistics gathered in training: one token is enough.
  const Tensor y_eval = bn_masked.forward(token);
  // [/snippet]
  const Padded p = pad({probe_sentence, sentence(17, rng), sentence(33, rng)});
  const Tensor in_batch = bn_masked.forward(p.x, p.mask);
  bool same = true;
  for (int64_t d = 0; d < kD; ++d)
    same = same && in_batch.at({0, probe_t, d}) == y_eval.at({0, 0, d});
  return {.train = y_train, .eval = y_eval, .eval_same_in_batch = same};
}

// The spread (max - min) of a series' values.
float spread(const viz::Series& s) {
  const auto [lo, hi] = std::minmax_element(s.ys.begin(), s.ys.end());
  return *hi - *lo;
}

// The claims about training mode, where every batch brings its own statistics.
void check_training_mode(const Drift& drift, const nn::BatchNorm& bn_masked,
                         const nn::BatchNorm& bn_plain, int64_t batches, Checks& check) {
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
  const float bound = std::sqrt(static_cast<float>(kD - 1));
  check(drift.ln_largest <= bound,
        fmt::format("LayerNorm (gamma = 1, beta = 0) stays within sqrt(D - 1) = {:.2f}", bound));
}

// Eval mode: a batch of one token, and what training mode gave the same token.
void one_token_in_both_modes(const std::vector<float>& probe_sentence, int64_t probe_t,
                             const Drift& drift, Rng& rng, nn::BatchNorm& bn_masked,
                             Checks& check) {
  const OneToken one = one_token(probe_sentence, probe_t, rng, bn_masked);
  const auto row = [](const Tensor& y) {
    std::string s;
    for (int64_t d = 0; d < kD; ++d) s += fmt::format(" {:7.4f}", y.data()[d]);
    return s;
  };
  const auto [lo, hi] = std::minmax_element(drift.bnm.ys.begin(), drift.bnm.ys.end());
  const float eval_d1 = one.eval.data()[0];
  const float farthest = std::max(std::abs(*hi - eval_d1), std::abs(*lo - eval_d1));
  bool train_zero = true;
  for (int64_t d = 0; d < kD; ++d) train_zero = train_zero && one.train.data()[d] == 0.0f;
  std::string header;
  for (int64_t d = 0; d < kD; ++d) header += fmt::format(" {:>7}", fmt::format("d{}", d + 1));
  fmt::print("  the probe token alone, a batch of one token [1, 1, {}], through BatchNorm:\n", kD);
  fmt::print("    {:<34}{}\n", "", header);
  fmt::print("    {:<34}{}\n", "training mode (its own statistics)", row(one.train));
  fmt::print("    {:<34}{}\n", "eval mode (running statistics)", row(one.eval));
  fmt::print("  the same token's d1 in training mode, over the {} batches: {:.4f} .. {:.4f}\n\n",
             drift.bnm.ys.size(), *lo, *hi);
  check(train_zero, fmt::format("in training mode BatchNorm turns a lone token into {} zeros", kD));
  check(one.eval_same_in_batch && std::isfinite(eval_d1),
        fmt::format("in eval mode it gives the lone token d1 = {:.4f}, bit for bit as inside a "
                    "batch",
                    eval_d1));
  check(farthest > 0.2f,
        fmt::format("training and eval mode differ: the same token's d1 was up to {:.2f} "
                    "away from it in training",
                    farthest));
}

void layer_norm_vs_batch_norm(bool quick, Rng& rng, const std::string& out_dir, Checks& check) {
  banner("3. LayerNorm versus BatchNorm");
  const std::string slices_path = out_dir + "/slices.png";
  draw_slices(slices_path);
  fmt::print("  wrote {}\n\n", slices_path);

  const int64_t batches = quick ? 12 : 40, batch = 4, probe_t = 2;
  const std::vector<float> probe_sentence = sentence(5, rng);  // the same sentence every batch
  nn::LayerNorm layer_norm(kD);
  nn::BatchNorm bn_masked(kD), bn_plain(kD);
  const Drift drift = norms_on_batches(probe_sentence, batches, batch, probe_t, rng, layer_norm,
                                       bn_masked, bn_plain);
  fmt::print("  ...\n\n  probe token, feature d1, spread (max - min) over {} batches:\n", batches);
  fmt::print("    LayerNorm {:.4f}, BatchNorm masked {:.4f}, BatchNorm padding counted {:.4f}\n",
             spread(drift.ln), spread(drift.bnm), spread(drift.bnp));
  const auto [mean_lo, mean_hi] =
      std::minmax_element(drift.mean_real.ys.begin(), drift.mean_real.ys.end());
  fmt::print("  d1's batch mean over real tokens: {:.3f} .. {:.3f}\n", *mean_lo, *mean_hi);
  fmt::print(
      "  BatchNorm's running statistics of d1 after {} batches:\n"
      "    masked: mean {:.3f}, var {:.3f}; padding counted: mean {:.3f}, var {:.3f}\n",
      batches, bn_masked.running_mean.at({0}), bn_masked.running_var.at({0}),
      bn_plain.running_mean.at({0}), bn_plain.running_var.at({0}));
  fmt::print("  largest |LayerNorm output| of a real token: {:.2f}\n\n", drift.ln_largest);
  draw_drift(drift, out_dir);
  check_training_mode(drift, bn_masked, bn_plain, batches, check);
  fmt::print("\n");

  bn_masked.eval();  // from here on bn_masked uses its running statistics
  the_future_through_the_statistics(probe_sentence, rng, layer_norm, bn_masked, check);
  fmt::print("\n");
  one_token_in_both_modes(probe_sentence, probe_t, drift, rng, bn_masked, check);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Lesson 05: feed-forward, residual connections, LayerNorm versus BatchNorm"};
  LessonFlags flags(app, "05_ffn_residual_norm", "a smaller run, in about two seconds",
                    "seed for the random inputs, weights and data");
  CLI11_PARSE(app, argc, argv);

  Checks check;
  try {
    Rng rng(flags.seed);
    feed_forward(rng, check);
    ffn_ablation(flags.quick, flags.seed, check);
    residual_connections(flags.quick, rng, flags.out(), check);
    projection_shortcut(rng, check);
    layer_norm_vs_batch_norm(flags.quick, rng, flags.out(), check);
  } catch (const std::exception& e) {
    fmt::print("\nlesson 05: stopped by an exception: {}\n", e.what());
    return 1;
  }
  return check.summary("lesson 05");
}
