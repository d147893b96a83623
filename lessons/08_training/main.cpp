// Lesson 08: training on the copy task.
//
// How does the model of lesson 07 learn, and what do the paper's training choices (§5.3, §5.4)
// do? The program plots the warm-up schedule, shows teacher forcing on one example, trains a
// small Transformer to copy its input with Adam, warm-up, dropout and label smoothing, decodes
// greedily with a loop written out and checked against the library, measures what a decoding
// step costs with and without the key/value cache, watches the cross-attention turn into the
// diagonal, draws every attention map of the trained model, trains the same model again with
// other amounts of label smoothing to measure what smoothing changes, writes the main run's
// page (one HTML file to open in a browser), and last trains post-norm and pre-norm models
// with and without warm-up.
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
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "autograd/graph.h"
#include "autograd/kernels/parallel.h"
#include "autograd/ops.h"
#include "autograd/random.h"
#include "autograd/tensor.h"
#include "data/batch.h"
#include "data/batch_source.h"
#include "data/tasks.h"
#include "data/vocab.h"
#include "lessons/lesson.h"
#include "models/decode.h"
#include "models/transformer.h"
#include "nn/attention.h"
#include "nn/optim.h"
#include "training/evaluate.h"
#include "training/loop.h"
#include "training/run_page.h"
#include "training/trainer.h"
#include "viz/heatmap.h"
#include "viz/line_plot.h"
#include "viz/png.h"
#include "viz/run_page.h"

using namespace gf;
using namespace gf::lessons;

namespace {

// Everything a run is made of; --quick shrinks it.
struct Setup {
  bool quick = false;
  TransformerConfig model;
  data::TaskConfig task;
  int64_t steps = 0, batch = 0, warmup = 0, held_out = 0;
  float factor = 1.0f;                // multiplies eq. 3's rate (see section 1)
  std::vector<int64_t> eval_steps;    // when the held-out set is measured and attention kept
  std::vector<float> smoothing_runs;  // label-smoothing values compared in section 7
};

// The copy task and the model that the README describes before section 1.
Setup make_setup(bool quick) {
  Setup s;
  s.quick = quick;
  s.model = {.vocab_size = 11,
             .d_model = 32,
             .d_ff = 64,
             .heads = 2,
             .encoder_layers = 2,
             .decoder_layers = 2,
             .max_len = 64,
             .dropout = 0.1f};
  s.task = {.vocab_size = 11, .min_len = 10, .max_len = 10};
  s.batch = 32;
  s.warmup = 50;
  s.factor = 0.5f;
  s.held_out = 128;
  s.steps = quick ? 250 : 400;
  if (quick) s.task.min_len = s.task.max_len = 6;
  s.smoothing_runs = quick ? std::vector<float>{0.0f, 0.1f} : std::vector<float>{0.0f, 0.1f, 0.3f};
  return s;
}

// The held-out sequences every model is measured on, drawn once (make_held_out).
struct HeldOut {
  std::vector<data::Pair> pairs;
  data::Batch batch;
};

// Token names, for the printed sequences, the axes of the pictures and the run's page (defined
// at the end).
std::string token_name(int32_t id);
std::vector<std::string> names_of(const int32_t* ids, int64_t n);
std::vector<std::string> row_names(const IndexTensor& ids, int64_t b);  // row b of ids [B, L]
std::string joined(const std::vector<std::string>& names);

// ---- 1. The warm-up schedule ----

void warmup_schedule(const std::string& out_dir, Checks& check) {
  banner("1. The warm-up schedule");
  struct Schedule {
    int64_t d_model, warmup;
  };
  const std::vector<Schedule> schedules = {{512, 4000}, {512, 8000}, {1024, 4000}, {256, 2000}};
  const int64_t last_step = 20000;
  // [snippet: eq3]
  // eq. 3: lrate = d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5)
  const auto by_hand = [](int64_t step, int64_t d_model, int64_t warmup) {
    const double s = static_cast<double>(step);
    return std::pow(static_cast<double>(d_model), -0.5) *
           std::min(std::pow(s, -0.5), s * std::pow(static_cast<double>(warmup), -1.5));
  };
  // [/snippet]
  std::vector<viz::Series> curves;
  fmt::print("  {:>8} {:>8} {:>12} {:>12} {:>12} {:>14}\n", "d_model", "warmup", "peak step",
             "peak lrate", "d^-.5 w^-.5", "max rel. diff");
  bool peaks_ok = true, formula_ok = true, shape_ok = true;
  for (const Schedule& p : schedules) {
    int64_t peak_step = 1;
    double worst = 0.0;
    viz::Series curve{.name = fmt::format("{}, {}", p.d_model, p.warmup)};
    for (int64_t step = 1; step <= last_step; ++step) {
      const double lr = nn::noam_lr(step, p.d_model, p.warmup);
      const double hand = by_hand(step, p.d_model, p.warmup);
      worst = std::max(worst, std::abs(lr - hand) / hand);
      if (lr > nn::noam_lr(peak_step, p.d_model, p.warmup)) peak_step = step;
      if (step % 50 == 0 || step == 1) {
        curve.xs.push_back(static_cast<float>(step));
        curve.ys.push_back(static_cast<float>(lr));
      }
    }
    const double peak = nn::noam_lr(peak_step, p.d_model, p.warmup);
    const double expected = 1.0 / std::sqrt(static_cast<double>(p.d_model * p.warmup));
    fmt::print("  {:>8} {:>8} {:>12} {:>12.3e} {:>12.3e} {:>14.1e}\n", p.d_model, p.warmup,
               peak_step, peak, expected, worst);
    peaks_ok = peaks_ok && peak_step == p.warmup && std::abs(peak - expected) / expected < 1e-6;
    formula_ok = formula_ok && worst < 1e-6;
    // Linear below the peak, 1/sqrt(step) above: half the peak at warmup/2 and at 4 warmup.
    const double half_up = nn::noam_lr(p.warmup / 2, p.d_model, p.warmup);
    const double half_down = nn::noam_lr(4 * p.warmup, p.d_model, p.warmup);
    shape_ok = shape_ok && std::abs(half_up / peak - 0.5) < 1e-3 &&
               std::abs(half_down / peak - 0.5) < 1e-3;
    curves.push_back(curve);
  }
  const std::string path = out_dir + "/warmup_schedule.png";
  viz::write_png(viz::line_plot(curves, {.title = "eq. 3; legend: d_model, warmup",
                                         .y_label = "learning rate"}),
                 path);
  fmt::print("\n  wrote {}\n\n", path);
  check(formula_ok,
        "nn::noam_lr equals eq. 3 computed by hand at every step 1..20000 (rel. diff < 1e-6)");
  check(peaks_ok,
        "each schedule peaks exactly at step == warmup, at d_model^-0.5 warmup^-0.5 "
        "(paper: 7.0e-4 at step 4000)");
  check(shape_ok,
        "linear rise, then 1/sqrt(step) decay: half the peak at warmup/2 and again at 4 warmup");
}

// Why warm up: Adam's very first update. With one gradient seen, the bias-corrected moments
// are m = g and v = g^2, so the step is lr * g / |g|: every parameter moves by lr, whatever
// the size (or reliability) of its gradient.
void first_adam_step(const Setup& setup, uint64_t seed, Checks& check) {
  Rng rng(seed);
  Transformer model(setup.model, rng);
  const std::vector<data::Pair> pairs_for_step =
      data::generate(data::Task::Copy, setup.batch, setup.task, rng);
  const data::Batch batch = data::make_batch(pairs_for_step);
  const std::vector<Tensor> params = model.parameters();
  std::vector<std::vector<float>> before;
  for (const Tensor& p : params) before.push_back(p.to_vector());
  // [snippet: first-adam-step]
  nn::Adam adam(params, {.lr = 1e-3f});  // the paper's betas 0.9, 0.98 and eps 1e-9
  const Tensor loss = cross_entropy(model.forward(batch.src, batch.tgt_in), batch.tgt_out,
                                    {.ignore_index = data::kPad});
  model.zero_grad();
  loss.backward();
  adam.step();  // step 1: m_hat = g, v_hat = g^2, so p -= lr * g / (|g| + eps)
  // [/snippet]
  int64_t moved = 0, moved_by_lr = 0;
  float smallest_grad = std::numeric_limits<float>::infinity(), largest_grad = 0.0f;
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor grad = params[i].grad();
    if (!grad.defined()) continue;
    const std::vector<float> after = params[i].to_vector();
    for (size_t j = 0; j < after.size(); ++j) {
      const float g = std::abs(grad.data()[j]);
      if (g < 1e-6f) continue;  // below Adam's eps scale the step is no longer lr
      ++moved;
      smallest_grad = std::min(smallest_grad, g);
      largest_grad = std::max(largest_grad, g);
      const float step_size = std::abs(after[j] - before[i][j]);
      if (std::abs(step_size / 1e-3f - 1.0f) < 0.01f) ++moved_by_lr;
    }
  }
  fmt::print(
      "  Adam's first step with lr 1e-3: {} of the {} parameters with |g| >= 1e-6 (|g| from {:.1e} "
      "to {:.1e}, a factor {:.0e}) moved by lr within 1%\n\n",
      moved_by_lr, moved, smallest_grad, largest_grad,
      static_cast<double>(largest_grad / smallest_grad));
  check(moved > 0 && moved_by_lr == moved,
        "Adam's first update moves every parameter by lr, whatever its gradient: the step "
        "size ignores the gradient's scale until v has averaged many steps");
}

// ---- 2. Teacher forcing ----

void teacher_forcing(const Setup& setup, uint64_t seed, const data::Pair& example, Checks& check) {
  banner("2. Teacher forcing");
  // [snippet: one-batch]
  const data::Batch batch = data::make_batch(std::vector<data::Pair>{example});
  // src    [1, S]: c1 .. cn </s>          what the encoder reads
  // tgt_in [1, T]: <s> c1 .. cn           the decoder's input: the target shifted right
  // tgt_out[1, T]: c1 .. cn </s>          what each decoder position must predict
  // [/snippet]
  fmt::print("  src     {}: {}\n", batch.src.shape(), joined(row_names(batch.src, 0)));
  fmt::print("  tgt_in  {}: {}\n", batch.tgt_in.shape(), joined(row_names(batch.tgt_in, 0)));
  fmt::print("  tgt_out {}: {}\n\n", batch.tgt_out.shape(), joined(row_names(batch.tgt_out, 0)));
  const int64_t t_len = batch.tgt_in.shape()[1];
  bool shifted =
      batch.tgt_in.data()[0] == data::kBos && batch.tgt_out.data()[t_len - 1] == data::kEos;
  for (int64_t t = 1; t < t_len; ++t)
    shifted = shifted && batch.tgt_in.data()[t] == batch.tgt_out.data()[t - 1];
  check(shifted,
        "tgt_in starts with <s> and is tgt_out shifted right by one; tgt_out ends "
        "with </s>");

  // One forward pass scores all T positions; because of the look-ahead mask (lesson 03) each
  // position's logits are what T separate passes on the growing prefixes would give.
  Rng rng(seed);
  Transformer model(setup.model, rng);
  model.eval();
  NoGrad no_grad;
  const Tensor all_at_once = model.forward(batch.src, batch.tgt_in);  // [1, T, V]
  float worst = 0.0f;
  for (int64_t t = 1; t <= t_len; ++t) {
    const std::vector<int32_t> prefix(batch.tgt_in.data(), batch.tgt_in.data() + t);
    const Tensor logits = model.forward(batch.src, IndexTensor::from({1, t}, prefix));
    worst =
        std::max(worst, max_abs_diff(slice(all_at_once, 1, t - 1, t), slice(logits, 1, t - 1, t)));
  }
  fmt::print(
      "  logits {} from one pass vs {} passes on prefixes <s>, <s> c1, ...: max diff "
      "{:.1e}\n\n",
      all_at_once.shape(), t_len, static_cast<double>(worst));
  check(worst <= 1e-5f, fmt::format("one teacher-forced pass gives, at every one of the {} "
                                    "positions, the logits of a pass on that prefix alone",
                                    t_len));
}

// ---- 3. Training ----

// What the held-out set says about a model at one step.
struct Eval {
  int64_t step = 0;
  double loss = 0.0;             // unsmoothed cross-entropy, teacher forced, nats per token
  double uniform_loss = 0.0;     // cross-entropy against the uniform target: -(1/V) sum_k log p_k
  double p_correct = 0.0;        // mean probability given to the correct token
  double forced_accuracy = 0.0;  // teacher forced: argmax == target, per token
  double forced_exact = 0.0;     // teacher forced: every token of the row right
  double free_accuracy = 0.0;    // free running (greedy): generated token == target
  double exact = 0.0;            // free running: the whole sequence right
  std::vector<double> diagonal;  // per decoder layer, the cross-attention diagonal mass
  std::vector<Tensor> cross;     // per decoder layer, cross-attention of held-out row 0
  viz::AttentionMaps maps;       // every attention map of held-out pair 0: the page's snapshots
  double seconds = 0.0;          // what this evaluation took, which the page's speeds leave out
};

struct Run {
  float smoothing = 0.0f;
  std::vector<float> losses, rates;  // per training step
  std::vector<Eval> evals;
  double seconds = 0.0;
};

// The paper's eps = 0.1 run, the main model of sections 3 to 6 and 8.
const Run& main_run_of(const std::vector<Run>& runs) {
  return *std::find_if(runs.begin(), runs.end(), [](const Run& r) { return r.smoothing == 0.1f; });
}

// A run's evaluations as curves, for the pictures of sections 3, 5 and 7 (defined at the end).
std::vector<float> column(const std::vector<Eval>& evals, double Eval::*field);
std::vector<float> eval_steps_of(const Run& run);

// Measures the model on the held-out set (below).
Eval evaluate(Transformer& model, const HeldOut& held_out, int64_t step);

// Trains a fresh model from seed: the same seed gives the same weights, dropout masks and
// batches, so runs that differ only in label smoothing see the same data in the same order.
Run train(const Setup& setup, float smoothing, uint64_t seed, const HeldOut& held_out,
          std::unique_ptr<Transformer>& model_out) {
  const auto start = std::chrono::steady_clock::now();
  Rng rng(seed);
  auto model = std::make_unique<Transformer>(setup.model, rng);
  Run run;
  run.smoothing = smoothing;
  size_t next_eval = 0;
  if (setup.eval_steps.front() == 0) {
    run.evals.push_back(evaluate(*model, held_out, 0));
    ++next_eval;
  }

  // [snippet: training-loop]
  // Fresh copy pairs every step, padded into src, tgt_in, tgt_out [B, T], from their own stream.
  data::BatchSource batches =
      data::BatchSource::generated(data::Task::Copy, setup.task, setup.batch, Rng(rng.next_u64()));
  // Adam with beta1 0.9, beta2 0.98, eps 1e-9, at the rate of eq. 3 (§5.3).
  training::Trainer trainer(nn::Optimizer(model->named_parameters(), nn::AdamConfig{}),
                            training::noam(setup.model.d_model, setup.warmup, setup.factor));
  model->train();  // dropout on (§5.4)
  training::run(
      trainer, [&] { return batches.next(); },
      [&](const data::Batch& batch) {
        // Teacher forcing: the decoder reads the true previous tokens, all T positions at once.
        return training::teacher_forced_loss(*model, batch, smoothing);
      },
      setup.steps,
      {.after_step =
           [&](const training::StepRecord& r) {
             run.losses.push_back(r.result.loss);
             run.rates.push_back(r.result.lr);
           },
       .evaluate =
           [&](int64_t step) {
             if (next_eval < setup.eval_steps.size() && setup.eval_steps[next_eval] == step) {
               run.evals.push_back(evaluate(*model, held_out, step));
               ++next_eval;
             }
           }});
  // [/snippet]
  model->eval();
  run.seconds = seconds_since(start);
  model_out = std::move(model);
  return run;
}

// Free running: every held-out row decoded greedily, compared with its target (below).
void free_running(Transformer& model, const HeldOut& held_out, int64_t tokens, Eval& e);

// Measures the model on the held-out set, in eval mode (no dropout), then restores training.
Eval evaluate(Transformer& model, const HeldOut& held_out, int64_t step) {
  const auto start = std::chrono::steady_clock::now();
  model.eval();
  NoGrad no_grad;
  Eval e;
  e.step = step;
  const data::Batch& b = held_out.batch;
  const int64_t rows = b.tgt_out.shape()[0], t_len = b.tgt_out.shape()[1];
  const int64_t vocab = model.config.vocab_size, heads = model.config.heads;

  model.record_attention(true);
  const Tensor log_probs = log_softmax(model.forward(b.src, b.tgt_in));  // [B, T, V]
  const std::vector<Tensor> cross = model.attention(AttentionKind::Cross);
  model.record_attention(false);

  int64_t tokens = 0, forced_right = 0, rows_right = 0;
  for (int64_t r = 0; r < rows; ++r) {
    bool row_right = true;
    for (int64_t t = 0; t < t_len; ++t) {
      const int32_t target = b.tgt_out.data()[r * t_len + t];
      if (target == data::kPad) continue;
      const float* lp = log_probs.data() + (r * t_len + t) * vocab;
      const int64_t best = std::max_element(lp, lp + vocab) - lp;
      ++tokens;
      e.loss -= lp[target];
      for (int64_t k = 0; k < vocab; ++k) e.uniform_loss -= lp[k] / static_cast<double>(vocab);
      e.p_correct += std::exp(static_cast<double>(lp[target]));
      forced_right += best == target;
      row_right = row_right && best == target;
    }
    rows_right += row_right;
  }
  e.loss /= static_cast<double>(tokens);
  e.uniform_loss /= static_cast<double>(tokens);
  e.p_correct /= static_cast<double>(tokens);
  e.forced_accuracy = static_cast<double>(forced_right) / static_cast<double>(tokens);
  e.forced_exact = static_cast<double>(rows_right) / static_cast<double>(rows);

  // Diagonal mass: query t of tgt_in must output tgt_out[t] = src[t] (the copy task), so its
  // aligned key is source position t. The mass is attention[t, t], averaged over heads, over
  // the non-pad target positions and over the held-out rows.
  for (const Tensor& p : cross) {
    const int64_t s_len = p.dim(3);
    double mass = 0.0;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t t = 0; t < std::min(t_len, s_len); ++t)
          if (b.tgt_out.data()[r * t_len + t] != data::kPad)
            mass += p.data()[((r * heads + h) * t_len + t) * s_len + t];
    e.diagonal.push_back(mass / static_cast<double>(tokens * heads));
    // Row 0's map, heads averaged: [T, S].
    std::vector<float> avg(static_cast<size_t>(t_len * s_len), 0.0f);
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < t_len * s_len; ++i)
        avg[static_cast<size_t>(i)] += p.data()[h * t_len * s_len + i] / static_cast<float>(heads);
    e.cross.push_back(Tensor::from({t_len, s_len}, avg));
  }
  // Every layer and head of all three kinds, kept so that the run's page (section 8) can show
  // held-out pair 0's attention as it stood at each evaluation.
  const data::Pair& first = held_out.pairs.front();
  e.maps = training::attention_maps(model, first.src, first.tgt, token_name);

  free_running(model, held_out, tokens, e);
  model.train();
  e.seconds = seconds_since(start);
  return e;
}

// The model reads its own outputs, all rows decoded greedily as one batch. The generated
// sequence (with the </s> that stopped it) is compared with tgt_out position by position.
void free_running(Transformer& model, const HeldOut& held_out, int64_t tokens, Eval& e) {
  const int64_t rows = std::ssize(held_out.pairs);
  std::vector<std::vector<int32_t>> sources;
  for (const data::Pair& p : held_out.pairs) sources.push_back(p.src);
  const std::vector<TokenIds> outputs =
      training::decode_corpus(model, sources, {.batch = rows, .by_length = false});
  int64_t free_right = 0, exact = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const std::vector<int32_t>& tgt = held_out.pairs[static_cast<size_t>(r)].tgt;  // <s> .. </s>
    TokenIds generated = outputs[static_cast<size_t>(r)];
    generated.push_back(data::kEos);
    for (size_t t = 0; t + 1 < tgt.size(); ++t)
      free_right += t < generated.size() && generated[t] == tgt[t + 1];
    exact += generated == TokenIds(tgt.begin() + 1, tgt.end());
  }
  e.free_accuracy = static_cast<double>(free_right) / static_cast<double>(tokens);
  e.exact = static_cast<double>(exact) / static_cast<double>(rows);
}

void print_evals(const Run& run) {
  fmt::print("  {:>5} {:>8} {:>9} {:>10} {:>10} {:>10} {:>8}\n", "step", "loss", "p(right)",
             "forced acc", "free acc", "forced ex", "exact");
  for (const Eval& e : run.evals)
    fmt::print("  {:>5} {:>8.4f} {:>9.4f} {:>10.4f} {:>10.4f} {:>10.4f} {:>8.4f}\n", e.step, e.loss,
               e.p_correct, e.forced_accuracy, e.free_accuracy, e.forced_exact, e.exact);
}

// Section 3's two pictures: the loss curve beside the learning rate, and teacher forced
// against free running.
void draw_training(const Setup& setup, const Run& run, const std::string& out_dir) {
  const viz::Image loss_plot = viz::line_plot({{.name = "training loss", .ys = run.losses}},
                                              {.title = "training loss (eps_ls 0.1, log scale)",
                                               .y_label = "loss",
                                               .log_y = true,
                                               .width = 520,
                                               .height = 360});
  const viz::Image lr_plot =
      viz::line_plot({{.name = "learning rate", .ys = run.rates, .colour = viz::Rgb{200, 80, 40}}},
                     {.title = fmt::format("lr: d_model {}, warmup {}, x{}", setup.model.d_model,
                                           setup.warmup, setup.factor),
                      .y_label = "learning rate",
                      .width = 520,
                      .height = 360});
  const std::string loss_path = out_dir + "/loss_and_lr.png";
  viz::write_png(viz::grid({loss_plot, lr_plot}, 2), loss_path);

  // Teacher forced against free running.
  const std::vector<float> xs = eval_steps_of(run);
  const std::string bias_path = out_dir + "/forced_vs_free.png";
  viz::write_png(
      viz::line_plot(
          {{.name = "forced tokens", .xs = xs, .ys = column(run.evals, &Eval::forced_accuracy)},
           {.name = "free tokens", .xs = xs, .ys = column(run.evals, &Eval::free_accuracy)},
           {.name = "exact (greedy)", .xs = xs, .ys = column(run.evals, &Eval::exact)}},
          {.title = "held-out accuracy", .y_label = "accuracy"}),
      bias_path);
  fmt::print("\n  wrote {}\n  wrote {}\n\n", loss_path, bias_path);
}

void training_the_copy_model(const Setup& setup, const Run& run, Transformer& model,
                             const HeldOut& held_out, const std::string& out_dir, Checks& check) {
  banner("3. Training the copy model");
  fmt::print(
      "  {} parameters, {} steps of {} sequences, warmup {}, label smoothing {}, "
      "dropout {}: {:.1f} s\n\n",
      model.parameter_count(), setup.steps, setup.batch, setup.warmup, run.smoothing,
      setup.model.dropout, run.seconds);
  print_evals(run);
  const Eval& last = run.evals.back();

  draw_training(setup, run, out_dir);

  double widest_gap = 0.0;
  int64_t widest_at = 0;
  bool identity = true;
  for (const Eval& e : run.evals) {
    if (e.forced_accuracy - e.free_accuracy > widest_gap) {
      widest_gap = e.forced_accuracy - e.free_accuracy;
      widest_at = e.step;
    }
    identity = identity && std::abs(e.forced_exact - e.exact) <= 0.02;
  }
  const double first_loss = run.losses.front(), final_loss = run.losses.back();
  check(final_loss < 0.5 * first_loss,
        fmt::format("the training loss falls from {:.3f} to {:.3f}", first_loss, final_loss));
  check(widest_gap >= 0.05,
        fmt::format("free running lags: at step {} teacher-forced token accuracy is {:.2f} "
                    "above free-running, scored position by position",
                    widest_at, widest_gap));
  const double final_gap = last.forced_accuracy - last.free_accuracy;
  check(final_gap <= (setup.quick ? 0.05 : 0.02) && final_gap < widest_gap / 2,
        fmt::format("they converge: at step {} the gap is {:.3f}", last.step, final_gap));
  check(identity,
        "a row is greedily decoded exactly iff its teacher-forced argmaxes are all "
        "right (within 2% at every eval)");
  const double needed = setup.quick ? 0.5 : 0.95;
  check(last.exact >= needed,
        fmt::format(
            "held-out greedy exact match {:.3f} >= {} ({} of {} sequences)", last.exact, needed,
            static_cast<int64_t>(std::lround(last.exact * static_cast<double>(setup.held_out))),
            setup.held_out));

  // Dropout (§5.4) is on in training mode and off in eval mode, where the model is measured.
  NoGrad no_grad;
  const data::Batch& b = held_out.batch;
  model.train();
  const Tensor train_a = model.forward(b.src, b.tgt_in), train_b = model.forward(b.src, b.tgt_in);
  model.eval();
  const Tensor eval_a = model.forward(b.src, b.tgt_in), eval_b = model.forward(b.src, b.tgt_in);
  const float train_diff = max_abs_diff(train_a, train_b);
  const float eval_diff = max_abs_diff(eval_a, eval_b);
  check(train_diff > 0.0f && eval_diff == 0.0f,
        fmt::format("dropout: two passes differ in train mode (max diff {:.2f}), agree in eval "
                    "mode (max diff {})",
                    static_cast<double>(train_diff), static_cast<double>(eval_diff)));
}

// ---- 4. Greedy decoding by hand ----

// [snippet: greedy]
std::vector<TokenIds> greedy_by_hand(Transformer& model, const IndexTensor& src, int64_t steps) {
  NoGrad no_grad;
  const TransformerConfig& c = model.config;
  const int64_t rows = src.shape()[0];
  const Tensor src_mask = nn::padding_mask(src, c.pad_id);
  const Tensor memory = model.encode(src, src_mask);  // the encoder runs once

  std::vector<int32_t> prefix(static_cast<size_t>(rows), c.bos_id);  // [B, t], row-major
  std::vector<TokenIds> output(static_cast<size_t>(rows));
  std::vector<bool> done(static_cast<size_t>(rows), false);
  for (int64_t t = 1; t <= steps; ++t) {
    // Decode the whole prefix <s> y1 .. y(t-1) and keep the last position's logits.
    const IndexTensor tgt_in = IndexTensor::from({rows, t}, prefix);
    const Tensor y = model.decode(tgt_in, memory, src_mask, nn::look_ahead_mask(t));
    const Tensor logits = model.generate(slice(y, 1, t - 1, t));  // [B, 1, V]
    std::vector<int32_t> longer;
    for (int64_t b = 0; b < rows; ++b) {
      const float* row = logits.data() + b * c.vocab_size;
      const auto next = static_cast<int32_t>(std::max_element(row, row + c.vocab_size) - row);
      const auto i = static_cast<size_t>(b);
      if (!done[i] && next == c.eos_id) done[i] = true;
      if (!done[i]) output[i].push_back(next);
      longer.insert(longer.end(), prefix.begin() + (b * t), prefix.begin() + (b + 1) * t);
      longer.push_back(next);  // finished rows keep going so the batch stays [B, t + 1]
    }
    prefix = longer;
    if (std::all_of(done.begin(), done.end(), [](bool d) { return d; })) break;
  }
  return output;
}
// [/snippet]

void greedy_decoding(Transformer& model, const HeldOut& held_out, Checks& check) {
  banner("4. Greedy decoding by hand");
  model.eval();
  const IndexTensor& src = held_out.batch.src;
  const int64_t steps = std::min(src.shape()[1] + 50, model.config.max_len);  // as the library
  const std::vector<TokenIds> by_hand = greedy_by_hand(model, src, steps);
  const std::vector<TokenIds> library = greedy_decode(model, src);
  const std::vector<TokenIds> library_no_cache = greedy_decode(model, src, {.use_cache = false});
  for (int64_t r = 0; r < 3; ++r) {
    const auto i = static_cast<size_t>(r);
    fmt::print("  src {}  ->  {}\n", joined(row_names(src, r)),
               joined(names_of(by_hand[i].data(), static_cast<int64_t>(by_hand[i].size()))));
  }
  int64_t same = 0;
  for (size_t i = 0; i < by_hand.size(); ++i)
    same += by_hand[i] == library[i] && by_hand[i] == library_no_cache[i];
  fmt::print(
      "\n  {} of {} held-out rows: the hand-written loop, greedy_decode and greedy_decode "
      "without the cache agree\n\n",
      same, by_hand.size());
  check(same == static_cast<int64_t>(by_hand.size()),
        "the loop written out gives the same tokens as greedy_decode (with and without its "
        "key/value cache) on every held-out row");
}

// What one greedy step costs against the prefix length t (the tokens the decoder has read,
// the new one included), with the key/value cache and without it. Costs depend only on
// shapes, so an untrained model of the lesson's shape serves, with a positional table long
// enough for t up to kLongestPrefix.
constexpr int64_t kLongestPrefix = 256;
constexpr int64_t kRows = 8;  // decoded together, the first 8 held-out sources

// Multiply-adds per row of one step, from the weights' shapes: the self-attention over the
// t cached keys (the scores q.k and the weighted sum of values, D each per key and layer),
// and the rest: the new token's projections, the cross-attention over the S source
// positions, the feed-forward layers and the generator.
struct MultiplyAdds {
  int64_t attention = 0, rest = 0;
};

// Per row and position, every projection a decoder layer applies to one token.
int64_t projections_per_token(const DecoderLayer& layer) {
  const auto& self = layer.self_attn;
  const auto& cross = *layer.cross_attn;
  return self.q.weight.numel() + self.k.weight.numel() + self.v.weight.numel() +
         self.o.weight.numel() + cross.q.weight.numel() + cross.o.weight.numel() +
         layer.ffn.linear1.weight.numel() + layer.ffn.linear2.weight.numel();
}

// With the cache: only the new token passes through the layers; its query meets t keys.
MultiplyAdds cached_step(const Transformer& model, int64_t t, int64_t src_len) {
  const int64_t d = model.config.d_model;
  MultiplyAdds m{.rest = model.config.vocab_size * d};  // the generator, for the new token
  for (const auto& layer : model.decoder.layers) {
    m.attention += 2 * t * d;
    m.rest += projections_per_token(*layer) + 2 * src_len * d;
  }
  return m;
}

// Without it: all t positions pass through the layers again, every query meets t keys (the
// look-ahead mask blanks half the scores after computing them), and the source's keys and
// values are projected again.
MultiplyAdds uncached_step(const Transformer& model, int64_t t, int64_t src_len) {
  const int64_t d = model.config.d_model;
  MultiplyAdds m{.rest = model.config.vocab_size * d};  // the generator, last position only
  for (const auto& layer : model.decoder.layers) {
    m.attention += 2 * t * t * d;
    m.rest += t * (projections_per_token(*layer) + 2 * src_len * d) +
              src_len * (layer->cross_attn->k.weight.numel() + layer->cross_attn->v.weight.numel());
  }
  return m;
}

struct StepTimes {
  int64_t t = 0;
  double cached = 0.0, attention = 0.0, uncached = 0.0;  // seconds per step, fastest of several
  double rest() const { return cached - attention; }
};

// Times one cached step at prefix length t: the cache is filled as t - 1 earlier steps would
// have left it (random keys and values: the cost does not depend on them), and the step
// appends the new token's. The attention part is the same work done alone, layer by layer:
// append the new key and value to the cache, then multi_head_attention of the one query
// over the t keys. Last, the step without the cache, which decodes all t positions again.
StepTimes time_step(Transformer& model, const IndexTensor& src, int64_t t) {
  NoGrad no_grad;
  const TransformerConfig& c = model.config;
  const int64_t rows = src.shape()[0], d = c.d_model;
  const Tensor src_mask = nn::padding_mask(src, c.pad_id);
  const Tensor memory = model.encode(src, src_mask);
  Rng rng(static_cast<uint64_t>(t));
  std::vector<DecoderLayerCache> filled;
  for (const auto& layer : model.decoder.layers) {
    DecoderLayerCache one;
    one.self_attn = {Tensor::randn({rows, t - 1, d}, rng), Tensor::randn({rows, t - 1, d}, rng)};
    one.cross_attn = {layer->cross_attn->k.forward(memory), layer->cross_attn->v.forward(memory)};
    filled.push_back(one);
  }
  const int32_t letter = data::kNumSpecial;  // "a": any token costs the same
  const IndexTensor newest =
      IndexTensor::from({rows, 1}, std::vector<int32_t>(static_cast<size_t>(rows), letter));
  const int reps = 50;  // a step takes well under a millisecond
  StepTimes times{.t = t};
  times.cached = fastest_of(reps, [&] {
    std::vector<DecoderLayerCache> cache = filled;  // the state before this step, every time
    model.generate(model.decode(newest, memory, src_mask, {}, &cache, t - 1));
  });
  const Tensor query = Tensor::randn({rows, 1, d}, rng), new_key = Tensor::randn({rows, 1, d}, rng);
  const float scale = 1.0f / std::sqrt(static_cast<float>(d / c.heads));
  times.attention = fastest_of(reps, [&] {
    for (const DecoderLayerCache& layer : filled) {
      const Tensor keys = concat({layer.self_attn.k, new_key}, 1);
      const Tensor values = concat({layer.self_attn.v, new_key}, 1);
      multi_head_attention(query, keys, values, {}, c.heads, scale);
    }
  });
  const IndexTensor prefix =
      IndexTensor::from({rows, t}, std::vector<int32_t>(static_cast<size_t>(rows * t), letter));
  times.uncached = fastest_of(3, [&] {
    const Tensor y = model.decode(prefix, memory, src_mask, nn::look_ahead_mask(t));
    model.generate(slice(y, 1, t - 1, t));
  });
  return times;
}

// Left: the cached step and its two parts against t, on linear axes, where growing in
// proportion to t is a straight line and not growing is a flat one. Right: the step with and
// without the cache, on a log axis.
void draw_step_costs(const std::vector<StepTimes>& times, const std::string& out_dir) {
  std::vector<float> ts, attention, rest, step, uncached;
  for (const StepTimes& s : times) {
    ts.push_back(static_cast<float>(s.t));
    attention.push_back(static_cast<float>(1e3 * s.attention));
    rest.push_back(static_cast<float>(1e3 * s.rest()));
    step.push_back(static_cast<float>(1e3 * s.cached));
    uncached.push_back(static_cast<float>(1e3 * s.uncached));
  }
  const int w = 520, h = 380;
  const std::string path = out_dir + "/decoding_step_cost.png";
  viz::write_png(
      viz::grid(
          {viz::line_plot({{.name = "whole step", .xs = ts, .ys = step},
                           {.name = "self-attention over the cache", .xs = ts, .ys = attention},
                           {.name = "the rest", .xs = ts, .ys = rest}},
                          {.title = "with the key/value cache",
                           .x_label = "prefix length t",
                           .y_label = "ms per step",
                           .width = w,
                           .height = h}),
           viz::line_plot({{.name = "without the cache", .xs = ts, .ys = uncached},
                           {.name = "with the cache", .xs = ts, .ys = step}},
                          {.title = "the whole step (log scale)",
                           .x_label = "prefix length t",
                           .y_label = "ms per step",
                           .log_y = true,
                           .width = w,
                           .height = h})},
          2, fmt::format("one greedy decoding step, {} rows, against the prefix length", kRows)),
      path);
  fmt::print("\n  wrote {}\n\n", path);
}

void check_step_costs(const std::vector<StepTimes>& times, Checks& check) {
  const StepTimes &first = times.front(), &last = times.back();
  // The multiply-adds of the table are counted from the weights' shapes, so how they grow
  // with t is arithmetic, not a finding to check; the times are measured, and checked here.
  const auto ratio = static_cast<double>(last.t) / static_cast<double>(first.t);
  check.timing(last.attention > 0.25 * ratio * first.attention,
               fmt::format("time with the cache: the self-attention part grows with t, {:.3f} ms "
                           "at t = {} to {:.3f} ms at t = {} ({:.0f}x for {:.0f}x the keys)",
                           1e3 * first.attention, first.t, 1e3 * last.attention, last.t,
                           last.attention / first.attention, ratio));
  check.timing(last.rest() < 1.5 * first.rest() + 0.1 * last.attention,
               fmt::format("time with the cache: the rest stays flat, {:.3f} ms at t = {} and "
                           "{:.3f} ms at t = {}",
                           1e3 * first.rest(), first.t, 1e3 * last.rest(), last.t));
  check.timing(
      last.uncached / first.uncached > 2 * last.cached / first.cached &&
          last.uncached > 5 * last.cached,
      fmt::format("time without the cache grows faster: from t = {} to {} the step takes {:.1f}x "
                  "longer without the cache, {:.1f}x with it; at t = {} it is {:.0f}x the cached "
                  "step",
                  first.t, last.t, last.uncached / first.uncached, last.cached / first.cached,
                  last.t, last.uncached / last.cached));
}

void cost_of_a_step(const Setup& setup, const HeldOut& held_out, const std::string& out_dir,
                    Checks& check) {
  fmt::print("\n");
  TransformerConfig shape = setup.model;
  shape.max_len = kLongestPrefix;
  Rng rng(1);
  Transformer model(shape, rng);
  model.eval();
  const int64_t rows = kRows, src_len = held_out.batch.src.shape()[1];
  const std::vector<int32_t> first_rows(held_out.batch.src.data(),
                                        held_out.batch.src.data() + rows * src_len);
  const IndexTensor src = IndexTensor::from({rows, src_len}, first_rows);
  std::vector<int64_t> prefixes = {16, 32, 64};
  if (!setup.quick) prefixes.insert(prefixes.end(), {128, kLongestPrefix});

  fmt::print("  one greedy step for {} rows with {} source tokens, against the prefix length t\n\n",
             rows, src_len);
  fmt::print("  {:>5}   {:<36}   {}\n", "", "multiply-adds per row",
             "time per step (fastest of several)");
  fmt::print("  {:>5}   {:>10} {:>10} {:>12}   {:>10} {:>9} {:>9} {:>10}\n", "t", "attention",
             "rest", "no cache", "attention", "rest", "step", "no cache");
  std::vector<StepTimes> times;
  for (int64_t t : prefixes) {
    times.push_back(time_step(model, src, t));
    const StepTimes& s = times.back();
    const MultiplyAdds with = cached_step(model, t, src_len);
    const MultiplyAdds without = uncached_step(model, t, src_len);
    fmt::print("  {:>5}   {:>10} {:>10} {:>12}   {:>7.3f} ms {:>6.3f} ms {:>6.3f} ms {:>10}\n", t,
               with.attention, with.rest, without.attention + without.rest, 1e3 * s.attention,
               1e3 * s.rest(), 1e3 * s.cached, fmt::format("{:.3f} ms", 1e3 * s.uncached));
  }
  if (setup.quick)  // a picture of times differs from run to run; the tests compare pictures
    fmt::print("\n  (--quick: the picture of these times is drawn in the full run)\n\n");
  else
    draw_step_costs(times, out_dir);
  check_step_costs(times, check);
}

// ---- 5. The alignment emerges ----

void alignment_emerges(bool quick, const Run& run, const HeldOut& held_out,
                       const std::string& out_dir, size_t& chosen_layer, Checks& check) {
  banner("5. The alignment emerges");
  const Eval& last = run.evals.back();
  chosen_layer = static_cast<size_t>(std::max_element(last.diagonal.begin(), last.diagonal.end()) -
                                     last.diagonal.begin());
  fmt::print("  {:>5}", "step");
  for (size_t l = 0; l < last.diagonal.size(); ++l)
    fmt::print("  {:>14}", fmt::format("layer {}", l + 1));
  fmt::print("\n");
  for (const Eval& e : run.evals) {
    fmt::print("  {:>5}", e.step);
    for (double d : e.diagonal) fmt::print("  {:>14.3f}", d);
    fmt::print("\n");
  }
  fmt::print(
      "\n  chosen for the pictures: decoder layer {}, the one with the highest final "
      "diagonal mass\n",
      chosen_layer + 1);

  const std::vector<std::string> rows = row_names(held_out.batch.tgt_in, 0);
  const std::vector<std::string> cols = row_names(held_out.batch.src, 0);
  std::vector<viz::Image> panels;
  for (const Eval& e : run.evals)
    panels.push_back(viz::heatmap(e.cross[chosen_layer], {.title = fmt::format("step {}", e.step),
                                                          .row_labels = rows,
                                                          .col_labels = cols,
                                                          .row_axis = "tgt_in",
                                                          .col_axis = "src",
                                                          .cell_size = 12,
                                                          .colour_bar = false}));
  const std::string grid_path = out_dir + "/cross_attention_steps.png";
  viz::write_png(viz::grid(panels, 6,
                           fmt::format("cross-attention through training (decoder layer {}, "
                                       "heads averaged, one held-out sequence)",
                                       chosen_layer + 1)),
                 grid_path);

  std::vector<viz::Series> curves;
  const std::vector<float> xs = eval_steps_of(run);
  for (size_t l = 0; l < last.diagonal.size(); ++l) {
    std::vector<float> ys;
    for (const Eval& e : run.evals) ys.push_back(static_cast<float>(e.diagonal[l]));
    curves.push_back({.name = fmt::format("decoder layer {}", l + 1), .xs = xs, .ys = ys});
  }
  const double uniform = 1.0 / static_cast<double>(held_out.batch.src.shape()[1]);
  curves.push_back({.name = "uniform, 1/S",
                    .xs = {xs.front(), xs.back()},
                    .ys = {static_cast<float>(uniform), static_cast<float>(uniform)},
                    .colour = viz::Rgb{150, 150, 150}});
  const std::string curve_path = out_dir + "/diagonal_mass.png";
  viz::write_png(viz::line_plot(curves, {.title = "weight on the aligned source token",
                                         .y_label = "diagonal mass"}),
                 curve_path);
  fmt::print("\n  wrote {}\n  wrote {}\n\n", grid_path, curve_path);

  const double start = run.evals.front().diagonal[chosen_layer];
  const double end = last.diagonal[chosen_layer];
  const double needed = quick ? 0.4 : 0.6;
  check(std::abs(start - uniform) < 0.1,
        fmt::format("untrained, the diagonal mass {:.3f} is near uniform attention's 1/S = "
                    "{:.3f}",
                    start, uniform));
  check(end >= needed, fmt::format("trained, decoder layer {} puts {:.3f} (>= {}) of its "
                                   "cross-attention on the aligned source token",
                                   chosen_layer + 1, end, needed));
}

// ---- 6. Attention after training ----

// One grid per kind of attention: a panel per (layer, head), tokens on both axes.
void attention_after_training(Transformer& model, const HeldOut& held_out,
                              const std::string& out_dir, size_t chosen_layer, Checks& check) {
  banner("6. Attention after training");
  NoGrad no_grad;
  model.eval();
  const IndexTensor src = IndexTensor::from(
      {1, held_out.batch.src.shape()[1]},
      std::vector<int32_t>(held_out.batch.src.data(),
                           held_out.batch.src.data() + held_out.batch.src.shape()[1]));
  const IndexTensor tgt_in = IndexTensor::from(
      {1, held_out.batch.tgt_in.shape()[1]},
      std::vector<int32_t>(held_out.batch.tgt_in.data(),
                           held_out.batch.tgt_in.data() + held_out.batch.tgt_in.shape()[1]));
  model.record_attention(true);
  model.forward(src, tgt_in);
  model.record_attention(false);
  const std::vector<std::string> s_names = row_names(src, 0), t_names = row_names(tgt_in, 0);
  const int64_t heads = model.config.heads;

  struct Kind {
    AttentionKind kind;
    const char* file;
    const char* title;
    std::vector<std::string> rows, cols;
  };
  const std::vector<Kind> kinds = {{AttentionKind::EncoderSelf, "encoder_self_attention.png",
                                    "encoder self-attention", s_names, s_names},
                                   {AttentionKind::DecoderSelf, "decoder_self_attention.png",
                                    "decoder self-attention (masked)", t_names, t_names},
                                   {AttentionKind::Cross, "cross_attention.png",
                                    "encoder-decoder (cross) attention", t_names, s_names}};
  for (const Kind& k : kinds) {
    const viz::Image grid = viz::attention_grid(
        model.attention(k.kind),
        {.row_labels = k.rows,
         .col_labels = k.cols,
         .row_axis = k.kind == AttentionKind::EncoderSelf ? "query (src)" : "query (tgt_in)",
         .col_axis = k.kind == AttentionKind::DecoderSelf ? "key (tgt_in)" : "key (src)",
         .value_label = "weight",
         .cell_size = 16},
        fmt::format("{} after training: rows = layers, columns = heads", k.title));
    const std::string path = out_dir + "/" + k.file;
    viz::write_png(grid, path);
    fmt::print("  wrote {}\n", path);
  }

  // Each head's diagonal mass in the chosen layer: do the heads share the work?
  const Tensor cross = model.attention(AttentionKind::Cross)[chosen_layer];
  const int64_t t_len = cross.dim(2), s_len = cross.dim(3);
  double best_head = 0.0;
  fmt::print("\n  decoder layer {}, this sequence, weight on the aligned source token:",
             chosen_layer + 1);
  for (int64_t h = 0; h < heads; ++h) {
    double mass = 0.0;
    for (int64_t t = 0; t < t_len; ++t) mass += cross.data()[(h * t_len + t) * s_len + t];
    mass /= static_cast<double>(t_len);
    best_head = std::max(best_head, mass);
    fmt::print(" head {} {:.3f}", h + 1, mass);
  }
  fmt::print("\n\n");
  check(best_head >= 0.5, fmt::format("in decoder layer {} at least one head is mostly "
                                      "diagonal ({:.3f}) on the drawn sequence",
                                      chosen_layer + 1, best_head));
}

// ---- 7. Label smoothing ----

// Loss, p(right) and exact match against step for each run, with the optimum p* (below).
void draw_smoothing_curves(const std::vector<Run>& runs,
                           const std::function<double(double)>& best_p_right,
                           const std::string& out_dir);

// The smoothed loss of section 7's table, mine, is the library's: cross_entropy with
// label_smoothing 0.1, on the trained eps 0.1 model in eval mode.
void check_against_library(Transformer& main_model, const HeldOut& held_out, double mine,
                           Checks& check) {
  NoGrad no_grad;
  main_model.eval();
  const data::Batch& b = held_out.batch;
  const double library = cross_entropy(main_model.forward(b.src, b.tgt_in), b.tgt_out,
                                       {.ignore_index = data::kPad, .label_smoothing = 0.1f})
                             .item();
  check(std::abs(library - mine) < 1e-4,
        fmt::format("(1 - eps) loss + eps uniform loss = {:.4f} is the library's smoothed "
                    "cross_entropy, {:.4f}",
                    mine, library));
}

void label_smoothing(const Setup& setup, const std::vector<Run>& runs, Transformer& main_model,
                     const HeldOut& held_out, const std::string& out_dir, Checks& check) {
  banner("7. Label smoothing");
  const double V = static_cast<double>(setup.model.vocab_size);
  // [snippet: smoothing-optimum]
  // The smoothed target q (autograd/ops.h): (1 - eps) + eps/V on the right token, eps/V on
  // each of the others. The smoothed loss -sum_k q_k log p_k is lowest when the model predicts
  // p = q, so the best it can do is p(right) = 1 - eps + eps/V ...
  const auto best_p_right = [V](double eps) {
    return 1.0 - eps + eps / V;
  };
  // ... and the lowest smoothed loss is the entropy of q, -sum_k q_k log q_k: the floor.
  const auto smoothed_floor = [V, best_p_right](double eps) {
    if (eps == 0.0) return 0.0;
    const double off = eps / V;  // q_k of each of the V - 1 wrong tokens
    return -best_p_right(eps) * std::log(best_p_right(eps)) - (V - 1) * off * std::log(off);
  };
  // The smoothed loss, from the two cross-entropies the evaluation keeps: the one-hot part
  // weighs 1 - eps, the uniform part eps (q is that mixture).
  const auto smoothed_loss = [](const Eval& e, double eps) {
    return (1.0 - eps) * e.loss + eps * e.uniform_loss;
  };
  // [/snippet]
  fmt::print("  {:>5} {:>9} {:>11} {:>9} {:>9} {:>10} {:>10} {:>11} {:>10} {:>8}\n", "eps",
             "p(right)", "optimum p*", "loss", "-log p*", "smoothed", "floor H(q)", "perplexity",
             "token acc", "exact");
  for (const Run& r : runs) {
    const Eval& e = r.evals.back();
    const double p_star = best_p_right(r.smoothing);
    fmt::print(
        "  {:>5.2f} {:>9.4f} {:>11.4f} {:>9.4f} {:>9.4f} {:>10.4f} {:>10.4f} {:>11.4f} {:>10.4f} "
        "{:>8.4f}\n",
        r.smoothing, e.p_correct, p_star, e.loss, 0.0 - std::log(p_star),
        smoothed_loss(e, r.smoothing), smoothed_floor(r.smoothing), std::exp(e.loss),
        e.forced_accuracy, e.exact);
  }

  draw_smoothing_curves(runs, best_p_right, out_dir);

  const Eval& plain = runs[0].evals.back();
  for (const Run& r : runs) {
    if (r.smoothing == 0.0f) continue;
    const Eval& e = r.evals.back();
    const double p_star = best_p_right(r.smoothing);
    check(e.p_correct <= p_star + 0.03,
          fmt::format("eps {}: confidence capped, mean p(right) {:.4f} <= p* + 0.03 = {:.4f}",
                      r.smoothing, e.p_correct, p_star + 0.03));
    const double floor = smoothed_floor(r.smoothing);
    check(
        smoothed_loss(e, r.smoothing) > floor,
        fmt::format("eps {}: held-out smoothed loss {:.4f} above its floor, the entropy of q, "
                    "{:.4f} (the unsmoothed loss {:.4f} has no such floor: -log p* = {:.4f} is "
                    "only its value at the optimum)",
                    r.smoothing, smoothed_loss(e, r.smoothing), floor, e.loss, -std::log(p_star)));
    if (setup.quick) continue;
    check(e.p_correct >= p_star - 0.03,
          fmt::format("eps {}: trained to the cap, mean p(right) {:.4f} within 0.03 of p* = "
                      "{:.4f}",
                      r.smoothing, e.p_correct, p_star));
    check(e.loss > plain.loss,
          fmt::format("eps {}: held-out loss {:.4f} above eps 0's {:.4f} (perplexity {:.3f} vs "
                      "{:.3f})",
                      r.smoothing, e.loss, plain.loss, std::exp(e.loss), std::exp(plain.loss)));
    check(e.exact >= plain.exact - 0.05 && e.forced_accuracy >= plain.forced_accuracy - 0.01,
          fmt::format("eps {}: accuracy as good (not lower by more than noise): exact match "
                      "{:.3f} vs eps 0's {:.3f}, token accuracy {:.4f} vs {:.4f}",
                      r.smoothing, e.exact, plain.exact, e.forced_accuracy, plain.forced_accuracy));
  }
  if (setup.quick) {
    fmt::print(
        "  (--quick: two short runs on shorter sequences; the comparisons with eps 0 are "
        "checked in the full run)\n");
  } else {
    check(plain.p_correct > best_p_right(0.1) + 0.03,
          fmt::format("eps 0: nothing caps the confidence, mean p(right) {:.4f}", plain.p_correct));
  }

  check_against_library(main_model, held_out, smoothed_loss(main_run_of(runs).evals.back(), 0.1),
                        check);
}

void draw_smoothing_curves(const std::vector<Run>& runs,
                           const std::function<double(double)>& best_p_right,
                           const std::string& out_dir) {
  const std::vector<float> xs = eval_steps_of(runs.front());
  std::vector<viz::Series> loss_curves, p_curves, exact_curves;
  const std::vector<viz::Rgb> colours = {{31, 119, 180}, {214, 39, 40}, {44, 160, 44}};
  for (size_t i = 0; i < runs.size(); ++i) {
    const std::string name = fmt::format("eps {}", runs[i].smoothing);
    const viz::Rgb colour = colours[i % colours.size()];
    loss_curves.push_back(
        {.name = name, .xs = xs, .ys = column(runs[i].evals, &Eval::loss), .colour = colour});
    p_curves.push_back(
        {.name = name, .xs = xs, .ys = column(runs[i].evals, &Eval::p_correct), .colour = colour});
    exact_curves.push_back(
        {.name = name, .xs = xs, .ys = column(runs[i].evals, &Eval::exact), .colour = colour});
    if (runs[i].smoothing > 0.0f) {
      const auto p_star = static_cast<float>(best_p_right(runs[i].smoothing));
      p_curves.push_back({.name = fmt::format("p*, eps {}", runs[i].smoothing),
                          .xs = {xs.front(), xs.back()},
                          .ys = {p_star, p_star},
                          .colour = viz::Rgb{static_cast<uint8_t>(colour.r / 2 + 110),
                                             static_cast<uint8_t>(colour.g / 2 + 110),
                                             static_cast<uint8_t>(colour.b / 2 + 110)}});
    }
  }
  const int w = 480, h = 360;
  const std::string path = out_dir + "/label_smoothing.png";
  viz::write_png(
      viz::grid(
          {viz::line_plot(loss_curves, {.title = "held-out loss (unsmoothed)",
                                        .y_label = "nats per token",
                                        .log_y = true,
                                        .width = w,
                                        .height = h}),
           viz::line_plot(
               p_curves,
               {.title = "mean p(right token)", .y_label = "p(right)", .width = w, .height = h}),
           viz::line_plot(
               exact_curves,
               {.title = "greedy exact match", .y_label = "exact match", .width = w, .height = h})},
          3, "the same model, data and dropout masks, trained with different eps_ls"),
      path);
  fmt::print("\n  wrote {}\n\n", path);
}

// ---- 8. The run's page ----

// The main run as one HTML page that opens offline (viz/run_page.h): its settings, curves and
// timings, greedy decodes of held-out sequences, the attention of three of them, and the
// evaluations' maps of held-out pair 0 as snapshots, which show the diagonal forming.
viz::RunPage copy_run_page(const Setup& setup, uint64_t seed, const Run& run, Transformer& model,
                           const HeldOut& held_out) {
  const auto steps = std::ssize(run.losses);
  training::RunPageHeader header{
      .title = "lesson 08: the copy task",
      .subtitle = fmt::format("{} steps of {} sequences, label smoothing {}", steps, setup.batch,
                              run.smoothing),
      .settings = {{"optimizer", "Adam, beta1 0.9, beta2 0.98, eps 1e-9"},
                   {"learning rate",
                    fmt::format("eq. 3 x {}, {} warm-up steps", setup.factor, setup.warmup)},
                   {"batch", fmt::format("{} sequences", setup.batch)},
                   {"label smoothing", fmt::format("{}", run.smoothing)},
                   {"dropout", fmt::format("{}", setup.model.dropout)},
                   {"seed", fmt::format("{}", seed)}}};
  const int64_t letters = setup.task.max_len;  // every sequence has as many (min_len == max_len)
  header.data = {{"task", "copy: the target is the source"},
                 {"a sequence", fmt::format("{} of the letters a..g, then </s>", letters)},
                 {"training sequences", fmt::format("fresh ones, {} a step", setup.batch)},
                 {"held-out sequences", fmt::format("{}, never trained on", setup.held_out)}};

  // The evaluations are the dev metric's points and the snapshots; their time is checking.
  training::PageHistory history{
      .metric = fmt::format("% exact, greedy, {} held-out sequences", setup.held_out)};
  for (const Eval& e : run.evals) {
    history.metric_steps.push_back(static_cast<double>(e.step));
    history.metric_values.push_back(100 * e.exact);
    history.snapshots.push_back({.step = e.step, .maps = e.maps});
    history.checking_seconds += e.seconds;
  }
  history.training_seconds = run.seconds - history.checking_seconds;
  history.sequences = steps * setup.batch;
  history.target_tokens = history.sequences * (letters + 1);  // the letters and </s>
  viz::RunPage page = training::run_page(header, model, run.losses, run.rates, history);
  for (const data::Pair& p : std::span(held_out.pairs).first(3))
    page.data_examples.emplace_back(joined(names_of(p.src.data(), std::ssize(p.src))),
                                    joined(names_of(p.tgt.data(), std::ssize(p.tgt))));
  page.samples = training::sequence_samples(model, std::span(held_out.pairs).first(8), token_name);
  page.sample_metric = "exact (1: every token right)";
  for (size_t i = 0; i < 3; ++i) {
    const data::Pair& p = held_out.pairs[i];
    page.attention.push_back({.label = fmt::format("held-out sequence {}", i),
                              .maps = training::attention_maps(model, p.src, p.tgt, token_name)});
  }
  return page;
}

// The head of any decoder layer whose cross-attention puts the most weight on the diagonal:
// row t of a map predicts tgt_out[t] = src[t], so its aligned key is source position t.
struct MostDiagonal {
  double mass = 0.0;  // the weight on the diagonal, averaged over the rows
  size_t layer = 0, head = 0;
};

MostDiagonal most_diagonal(const viz::AttentionMaps& maps) {
  const size_t rows = maps.target_next.size(), cols = maps.source_tokens.size();
  MostDiagonal best;
  for (size_t l = 0; l < maps.cross.size(); ++l)
    for (size_t h = 0; h < maps.cross[l].size(); ++h) {
      double mass = 0.0;
      for (size_t t = 0; t < std::min(rows, cols); ++t) mass += maps.cross[l][h][t * cols + t];
      mass /= static_cast<double>(rows);
      if (mass > best.mass) best = {.mass = mass, .layer = l, .head = h};
    }
  return best;
}

void the_runs_page(const Setup& setup, uint64_t seed, const Run& run, Transformer& model,
                   const HeldOut& held_out, const std::string& out_dir, Checks& check) {
  banner("8. The run's page");
  const viz::RunPage page = copy_run_page(setup, seed, run, model, held_out);
  const std::string path = out_dir + "/run.html";
  viz::write_run_page(page, path);
  const bool written = std::filesystem::exists(path) && std::filesystem::file_size(path) > 0;
  // No size in kB: the page records how long the run took, so its size varies between runs.
  fmt::print("  wrote {}: open it in a browser\n\n", path);
  check(written, fmt::format("the run's page is written to {}", path));

  bool same_steps = page.snapshots.size() == run.evals.size();
  for (size_t i = 0; same_steps && i < run.evals.size(); ++i)
    same_steps = page.snapshots[i].step == run.evals[i].step;
  check(
      same_steps && page.snapshots.back().step == std::ssize(run.losses),
      fmt::format("it holds {} attention snapshots of held-out sequence 0, one per evaluation, "
                  "from step {} to step {}",
                  page.snapshots.size(), page.snapshots.front().step, page.snapshots.back().step));

  const MostDiagonal before = most_diagonal(page.snapshots.front().maps);
  const MostDiagonal after = most_diagonal(page.snapshots.back().maps);
  const double uniform =
      1.0 / static_cast<double>(page.snapshots.front().maps.source_tokens.size());
  check(
      before.mass < 2 * uniform && after.mass > 0.5,
      fmt::format("the slider shows the diagonal forming: at step 0 no cross-attention head puts "
                  "more than {:.3f} on it (uniform: {:.3f}); at step {} decoder layer {}, head {} "
                  "puts {:.3f}",
                  before.mass, uniform, page.snapshots.back().step, after.layer + 1, after.head + 1,
                  after.mass));

  int64_t exact = 0;
  bool scores_right = page.samples.size() == 8;
  for (const viz::Sample& s : page.samples) {
    scores_right = scores_right && s.score == (s.output == s.reference ? 1.0 : 0.0);
    exact += s.score == 1.0;
  }
  check(scores_right, fmt::format("its 8 decodes of held-out sequences are scored 1 exactly when "
                                  "the output is the reference ({} of 8)",
                                  exact));
}

// ---- 9. Warm-up, post-norm and pre-norm ----

// One training run of the lesson's model with the LayerNorm after each sub-layer (post-norm,
// the paper's) or before it (pre-norm), with the warm-up of eq. 3 or without it.
struct NormRun {
  bool pre_norm = false, warm_up = true;
  uint64_t seed = 0;
  std::vector<float> losses{};  // per training step
  double final_loss = 0.0;      // the mean training loss of the last 20 steps
  double exact = 0.0;           // held-out greedy exact match at the end
  std::string non_finite{};     // what training::NonFiniteError reported, if it stopped the run
};

// [snippet: no-warm-up]
// Without warm-up: eq. 3 with its linear rise cut off, so the rate starts at the peak and then
// decays as with warm-up.
training::Schedule without_warm_up(const Setup& setup) {
  const training::Schedule noam = training::noam(setup.model.d_model, setup.warmup, setup.factor);
  return [noam, warmup = setup.warmup](int64_t step) {
    return noam(std::max(step, warmup));
  };
}
// [/snippet]

NormRun train_norm_variant(const Setup& setup, bool pre_norm, bool warm_up, uint64_t seed,
                           int64_t steps, const HeldOut& held_out) {
  NormRun run{.pre_norm = pre_norm, .warm_up = warm_up, .seed = seed};
  TransformerConfig config = setup.model;
  config.norm_first = pre_norm;
  Rng rng(seed);
  Transformer model(config, rng);
  data::BatchSource batches =
      data::BatchSource::generated(data::Task::Copy, setup.task, setup.batch, Rng(rng.next_u64()));
  training::Trainer trainer(
      nn::Optimizer(model.named_parameters(), nn::AdamConfig{}),
      warm_up ? training::noam(setup.model.d_model, setup.warmup, setup.factor)
              : without_warm_up(setup),
      {.check_finite = true});  // a loss, gradient or weight that is not finite stops the run
  model.train();
  try {
    training::run(
        trainer, [&] { return batches.next(); },
        [&](const data::Batch& batch) { return training::teacher_forced_loss(model, batch, 0.1f); },
        steps, {.after_step = [&](const training::StepRecord& r) {
          run.losses.push_back(r.result.loss);
        }});
  } catch (const training::NonFiniteError& e) {
    run.non_finite = fmt::format("step {}: {}", e.step, e.problem);
    return run;
  }
  const auto last = std::min<std::ptrdiff_t>(20, std::ssize(run.losses));
  for (auto it = run.losses.end() - last; it != run.losses.end(); ++it) run.final_loss += *it;
  run.final_loss /= static_cast<double>(last);
  run.exact = training::exact_match(model, held_out.pairs);
  return run;
}

std::string norm_name(bool pre_norm) {
  return pre_norm ? "pre-norm" : "post-norm";
}

std::string schedule_name(bool warm_up) {
  return warm_up ? "warm-up" : "no warm-up";
}

// The smoothed loss of a model that ignores its input and predicts how often each symbol
// occurs in a target: each letter in letters/(letters + 1) / 7 of the positions, </s> in
// 1/(letters + 1). Its best prediction is the mixture of the smoothed targets.
double frequencies_only_loss(const Setup& setup, double eps) {
  const double V = static_cast<double>(setup.model.vocab_size);
  const double letters = static_cast<double>(setup.task.max_len);
  const double symbols = V - data::kNumSpecial;
  const double letter = (1 - eps) * letters / (letters + 1) / symbols + eps / V;
  const double eos = (1 - eps) / (letters + 1) + eps / V;
  const double other = eps / V;  // <pad>, <s>, <unk>: never a target
  return -symbols * letter * std::log(letter) - eos * std::log(eos) -
         (V - symbols - 1) * other * std::log(other);
}

// The mean of each 10 consecutive losses: element i covers steps i + 1 .. i + 10.
std::vector<float> mean_of_10(const std::vector<float>& losses) {
  std::vector<float> means;
  for (size_t i = 10; i <= losses.size(); ++i) {
    float sum = 0.0f;
    for (size_t j = i - 10; j < i; ++j) sum += losses[j];
    means.push_back(sum / 10.0f);
  }
  return means;
}

// The first step at which the mean of the last 10 losses is 0.1 below the plateau: where the
// model starts to use its input. 0: never.
int64_t left_plateau_at(const std::vector<float>& losses, double plateau) {
  const std::vector<float> mean = mean_of_10(losses);
  for (size_t i = 0; i < mean.size(); ++i)
    if (mean[i] < plateau - 0.1) return static_cast<int64_t>(i + 10);
  return 0;
}

// Each configuration's training loss, averaged over 10 steps; its seeds share a colour, one
// series with a gap (NaN) between seeds.
void draw_norm_curves(const std::vector<NormRun>& runs, double plateau,
                      const std::string& out_dir) {
  const std::vector<viz::Rgb> colours = {
      {214, 39, 40}, {31, 119, 180}, {255, 127, 14}, {44, 160, 44}};
  std::vector<viz::Series> curves;
  for (bool pre_norm : {false, true})
    for (bool warm_up : {true, false}) {
      viz::Series s{.name = norm_name(pre_norm) + ", " + schedule_name(warm_up),
                    .colour = colours[curves.size()]};
      for (const NormRun& r : runs) {
        if (r.pre_norm != pre_norm || r.warm_up != warm_up) continue;
        const std::vector<float> mean = mean_of_10(r.losses);
        for (size_t i = 0; i < mean.size(); ++i) {
          s.xs.push_back(static_cast<float>(i + 10));
          s.ys.push_back(mean[i]);
        }
        s.xs.push_back(std::numeric_limits<float>::quiet_NaN());
        s.ys.push_back(std::numeric_limits<float>::quiet_NaN());
      }
      curves.push_back(s);
    }
  const auto last = static_cast<float>(runs.front().losses.size());
  curves.push_back({.name = "symbol frequencies only",
                    .xs = {1.0f, last},
                    .ys = {static_cast<float>(plateau), static_cast<float>(plateau)},
                    .colour = viz::Rgb{150, 150, 150}});
  const std::string path = out_dir + "/warmup_and_norm.png";
  viz::write_png(viz::line_plot(curves, {.title = "training loss (mean of 10 steps), 3 seeds each",
                                         .y_label = "smoothed loss",
                                         .width = 760,
                                         .height = 460}),
                 path);
  fmt::print("\n  wrote {}\n\n", path);
}

void warm_up_and_layer_norm(const Setup& setup, const HeldOut& held_out, const std::string& out_dir,
                            Checks& check) {
  banner("9. Warm-up, post-norm and pre-norm");
  const int64_t steps = setup.quick ? 20 : setup.steps;
  const std::vector<uint64_t> seeds =
      setup.quick ? std::vector<uint64_t>{1} : std::vector<uint64_t>{1, 2, 3};
  const auto start = std::chrono::steady_clock::now();
  const double plateau = frequencies_only_loss(setup, 0.1);
  fmt::print(
      "  A model that ignores its input and predicts how often each symbol occurs has a smoothed "
      "loss of {:.3f}.\n\n",
      plateau);
  std::vector<NormRun> runs;
  fmt::print("  {:<10} {:<11} {:>5} {:>15} {:>11} {:>8}  {}\n", "layer norm", "schedule", "seed",
             fmt::format("below {:.2f} at", plateau - 0.1), "final loss", "exact", "not finite");
  for (bool pre_norm : {false, true})
    for (bool warm_up : {true, false})
      for (uint64_t seed : seeds) {
        runs.push_back(train_norm_variant(setup, pre_norm, warm_up, seed, steps, held_out));
        const NormRun& r = runs.back();
        const int64_t left = left_plateau_at(r.losses, plateau);
        fmt::print("  {:<10} {:<11} {:>5} {:>15} {:>11.3f} {:>8.3f}  {}\n", norm_name(pre_norm),
                   schedule_name(warm_up), seed, left > 0 ? fmt::format("step {}", left) : "never",
                   r.final_loss, r.exact, r.non_finite.empty() ? "-" : r.non_finite);
      }
  fmt::print("\n  {} runs of {} steps: {:.1f} s\n", runs.size(), steps, seconds_since(start));
  draw_norm_curves(runs, plateau, out_dir);

  const auto all_of = [&](bool pre_norm, bool warm_up,
                          const std::function<bool(const NormRun&)>& ok) {
    return std::all_of(runs.begin(), runs.end(), [&](const NormRun& r) {
      return r.pre_norm != pre_norm || r.warm_up != warm_up || ok(r);
    });
  };
  check(
      std::all_of(runs.begin(), runs.end(), [](const NormRun& r) { return r.non_finite.empty(); }),
      "no run met a loss, gradient or weight that is not finite (training::NonFiniteError)");
  if (setup.quick) {
    fmt::print("  (--quick: {} steps only; the comparison is checked in the full run)\n", steps);
    return;
  }
  check(all_of(false, true, [](const NormRun& r) { return r.exact >= 0.9; }),
        "post-norm with warm-up trains: exact match >= 0.9 in every seed");
  int64_t latest_with = 0, earliest_without = steps + 1;
  for (const NormRun& r : runs) {
    if (r.pre_norm) continue;
    const int64_t left = left_plateau_at(r.losses, plateau);
    if (r.warm_up)
      latest_with = std::max(latest_with, left > 0 ? left : steps + 1);
    else
      earliest_without = std::min(earliest_without, left > 0 ? left : steps + 1);
  }
  check(earliest_without > latest_with,
        fmt::format("post-norm without warm-up stays longer on the plateau {:.3f}: it leaves it "
                    "at step {} at the earliest, with warm-up by step {} in every seed",
                    plateau, earliest_without, latest_with));
  check(
      all_of(false, false, [](const NormRun& r) { return r.exact <= 0.05 && r.final_loss > 1.2; }),
      "post-norm without warm-up stalls: exact match <= 0.05 and final loss > 1.2 in every "
      "seed");
  check(all_of(true, true, [](const NormRun& r) { return r.exact >= 0.8; }) &&
            all_of(true, false, [](const NormRun& r) { return r.exact >= 0.8; }),
        "pre-norm trains with and without warm-up: exact match >= 0.8 in every seed");
}

// ---- Plumbing ----

// Every 25 steps, every 50 after step 300, and the last step.
std::vector<int64_t> eval_schedule(int64_t steps) {
  std::vector<int64_t> at;
  for (int64_t step = 0; step <= steps; step += step < 300 ? 25 : 50) at.push_back(step);
  if (at.back() != steps) at.push_back(steps);
  return at;
}

HeldOut make_held_out(const Setup& setup, uint64_t seed) {
  Rng rng(seed ^ 0x5eedf00dULL);  // not the training stream: these sequences are never trained on
  HeldOut h;
  h.pairs = data::generate(data::Task::Copy, setup.held_out, setup.task, rng);
  h.batch = data::make_batch(h.pairs);
  return h;
}

// Token names: the specials, then the content symbols 4..10 as the letters a..g.
std::string token_name(int32_t id) {
  static const char* const specials[] = {"<pad>", "<s>", "</s>", "<unk>"};
  if (id < data::kNumSpecial) return specials[id];
  return std::string(1, static_cast<char>('a' + (id - data::kNumSpecial)));
}

std::vector<std::string> names_of(const int32_t* ids, int64_t n) {
  std::vector<std::string> names;
  for (int64_t i = 0; i < n; ++i) names.push_back(token_name(ids[i]));
  return names;
}

// Row b of ids [B, L] as token names.
std::vector<std::string> row_names(const IndexTensor& ids, int64_t b) {
  const int64_t len = ids.shape()[1];
  return names_of(ids.data() + b * len, len);
}

std::string joined(const std::vector<std::string>& names) {
  return fmt::format("{}", fmt::join(names, " "));
}

std::vector<float> column(const std::vector<Eval>& evals, double Eval::*field) {
  std::vector<float> ys;
  for (const Eval& e : evals) ys.push_back(static_cast<float>(e.*field));
  return ys;
}

std::vector<float> eval_steps_of(const Run& run) {
  std::vector<float> xs;
  for (const Eval& e : run.evals) xs.push_back(static_cast<float>(e.step));
  return xs;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Lesson 08: training on the copy task"};
  LessonFlags flags(app, "08_training", "fewer steps and fewer runs, a few seconds",
                    "seed for the weights, dropout and data");
  int64_t steps = 0, warmup = 0, batch = 0, length = 0;
  int threads = 1;
  float factor = 0.0f;
  app.add_option("--steps", steps, "training steps (0: 400, or 250 with --quick)");
  app.add_option("--warmup", warmup, "warm-up steps of eq. 3 (0: the lesson's 50)");
  app.add_option("--factor", factor, "factor on eq. 3's rate (0: the lesson's 0.5)");
  app.add_option("--batch", batch, "sequences per training step (0: the lesson's 32)");
  app.add_option("--length", length,
                 "content tokens per sequence (0: the lesson's 10, or 6 with --quick)");
  app.add_option("--threads", threads,
                 "threads; the model is so small that one is fastest (0: one per core)")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  if (threads > 0) gf::kernels::set_num_threads(threads);  // the results do not depend on it
  Checks check;
  check.timings_checked = timings_checkable(flags.quick);
  const auto start = std::chrono::steady_clock::now();
  try {
    Setup setup = make_setup(flags.quick);
    if (steps > 0) setup.steps = steps;
    if (warmup > 0) setup.warmup = warmup;
    if (factor > 0.0f) setup.factor = factor;
    if (batch > 0) setup.batch = batch;
    setup.eval_steps = eval_schedule(setup.steps);
    if (length > 0) setup.task.min_len = setup.task.max_len = length;
    const HeldOut held_out = make_held_out(setup, flags.seed);
    warmup_schedule(flags.out(), check);
    first_adam_step(setup, flags.seed, check);
    teacher_forcing(setup, flags.seed, held_out.pairs.front(), check);

    // The paper's eps = 0.1 run is the main model; the others differ only in eps.
    std::vector<Run> runs;
    std::unique_ptr<Transformer> main_model;
    for (float eps : setup.smoothing_runs) {
      std::unique_ptr<Transformer> model;
      runs.push_back(train(setup, eps, flags.seed, held_out, model));
      if (eps == 0.1f) main_model = std::move(model);
    }
    const Run& main_run = main_run_of(runs);
    training_the_copy_model(setup, main_run, *main_model, held_out, flags.out(), check);
    greedy_decoding(*main_model, held_out, check);
    cost_of_a_step(setup, held_out, flags.out(), check);
    size_t chosen_layer = 0;
    alignment_emerges(setup.quick, main_run, held_out, flags.out(), chosen_layer, check);
    attention_after_training(*main_model, held_out, flags.out(), chosen_layer, check);
    label_smoothing(setup, runs, *main_model, held_out, flags.out(), check);
    the_runs_page(setup, flags.seed, main_run, *main_model, held_out, flags.out(), check);
    warm_up_and_layer_norm(setup, held_out, flags.out(), check);
  } catch (const std::exception& e) {
    fmt::print("\nlesson 08: stopped by an exception: {}\n", e.what());
    return 1;
  }
  fmt::print("\n  total time {:.1f} s\n", seconds_since(start));
  return check.summary("lesson 08");
}
