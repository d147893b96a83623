// Lesson 01: tensors and reverse-mode autodiff.
//
// How does a program find the derivative of a loss with respect to every one of its
// parameters, exactly, for the price of about two evaluations of the loss? Six steps answer it:
// tensors, the chain rule by hand, the same numbers from backward(), why reverse mode,
// gradient checking, and a small network trained with plain gradient descent. README.md is
// the text that walks through this file. Every claim is checked; a failed check makes the
// program exit with 1.
//
// main(), at the end, is the table of contents: it calls the sections in the order of
// README.md, and they are defined above it in the same order.
//
// Shape legend: N points, H hidden units.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <functional>
#include <numbers>
#include <string>
#include <vector>

#include "autograd/errors.h"
#include "autograd/gradcheck.h"
#include "autograd/graph.h"
#include "autograd/ops.h"
#include "autograd/random.h"
#include "autograd/tensor.h"
#include "lessons/lesson.h"
#include "viz/line_plot.h"
#include "viz/png.h"
#include "viz/regions.h"

using namespace gf;
using namespace gf::lessons;

namespace {

// ---- 1. Tensors, shapes and broadcasting ----

void tensors(Checks& check) {
  banner("1. Tensors, shapes and broadcasting");
  // [snippet: tensors]
  Tensor x = Tensor::from({2, 3}, {1, 2, 3, 4, 5, 6});  // [2, 3]: 2 rows of 3, row-major
  Tensor bias = Tensor::from({3}, {10, 20, 30});        // [3]
  Tensor y = x + bias;            // [2, 3] + [3] -> [2, 3]: bias is added to every row
  Tensor flat = reshape(x, {6});  // [6]: a new shape over the same numbers
  flat.data()[0] = 100.0f;        // so this write shows through x as well
  // [/snippet]
  std::string message;
  try {
    x + Tensor::ones({2});  // trailing dimensions 3 and 2: no way to line them up
  } catch (const ShapeError& error) {
    message = error.what();
  }
  fmt::print("  x + bias       = {}\n", to_string(y, 0));
  fmt::print("  x, after write = {}\n", to_string(x, 0));
  fmt::print("  x + ones([2])  throws ShapeError: {}\n\n", message);
  check(y.shape() == Shape{2, 3}, "[2, 3] + [3] broadcasts to [2, 3]");
  check(y.at({1, 2}) == 36.0f, "(x + bias)[1, 2] = x[1, 2] + bias[2] = 6 + 30 = 36");
  check(x.at({0, 0}) == 100.0f, "reshape shares storage: the write through flat changed x[0, 0]");
  check(message.find("[2, 3]") != std::string::npos && message.find("[2]") != std::string::npos,
        "a shape mismatch throws ShapeError naming both shapes");
}

// ---- 2. The chain rule by hand ----

// The values and gradients of f = (a b + c) tanh(a), computed by hand in section 2.
struct HandResult {
  float f, grad_a, grad_b, grad_c;
};

HandResult chain_rule_by_hand() {
  banner("2. The chain rule by hand");
  // [snippet: chain-rule-by-hand]
  // Forward: every intermediate value, in order.
  const float a = 0.5f, b = -1.5f, c = 2.0f;
  const float d = a * b;         // d = a b
  const float e = d + c;         // e = d + c
  const float t = std::tanh(a);  // t = tanh(a)
  const float f = e * t;         // f = e t
  // Backward: start from df/df = 1 and walk back, multiplying by each local derivative.
  const float grad_f = 1.0f;
  const float grad_e = grad_f * t;              // f = e t:    df/de = t
  const float grad_t = grad_f * e;              //             df/dt = e
  const float grad_d = grad_e * 1.0f;           // e = d + c:  de/dd = 1
  const float grad_c = grad_e * 1.0f;           //             de/dc = 1
  const float grad_b = grad_d * a;              // d = a b:    dd/db = a
  const float grad_a = grad_d * b               // a reaches f along two paths: through d,
                       + grad_t * (1 - t * t);  // and through t, as tanh'(a) = 1 - tanh(a)^2
  // [/snippet]
  fmt::print("  {:<5} {:<10} {:>10} {:>10}\n", "node", "is", "value", "df/dnode");
  const auto row = [](const char* node, const char* is, float value, float grad) {
    fmt::print("  {:<5} {:<10} {:>10.6f} {:>10.6f}\n", node, is, value, grad);
  };
  row("f", "e * t", f, grad_f);
  row("t", "tanh(a)", t, grad_t);
  row("e", "d + c", e, grad_e);
  row("d", "a * b", d, grad_d);
  row("c", "leaf", c, grad_c);
  row("b", "leaf", b, grad_b);
  row("a", "leaf", a, grad_a);
  return {f, grad_a, grad_b, grad_c};
}

// ---- 3. The same numbers from backward() ----

// Whether x and y agree to a relative tolerance rtol (and 1e-12 absolute, for zeros).
bool close(double x, double y, double rtol) {
  return std::abs(x - y) <= rtol * std::max(std::abs(x), std::abs(y)) + 1e-12;
}

void same_numbers_from_backward(const HandResult& hand, Checks& check) {
  banner("3. The same numbers from backward()");
  // [snippet: tape]
  Tensor a = Tensor::scalar(0.5f).set_requires_grad();  // leaves we want gradients for
  Tensor b = Tensor::scalar(-1.5f).set_requires_grad();
  Tensor c = Tensor::scalar(2.0f).set_requires_grad();
  Tensor d = a * b;  // each op computes its value and records a node on the tape:
  Tensor e = d + c;  // its name, its inputs, and how to send a gradient back to them
  Tensor t = tanh(a);
  Tensor f = e * t;
  // [/snippet]
  const int64_t nodes = count_nodes(f);
  fmt::print("  the tape ending at f: {} nodes, ops {{{}}}\n\n", nodes,
             fmt::join(recorded_ops(f), ", "));
  fmt::print("  {:<5} {:<10} {:>10}\n", "node", "op_name()", "value");
  for (const auto& [name, node] : {std::pair{"f", f}, {"t", t}, {"e", e}, {"d", d}, {"a", a}})
    fmt::print("  {:<5} {:<10} {:>10.6f}\n", name, node.is_leaf() ? "(leaf)" : node.op_name(),
               node.item());

  f.backward();
  fmt::print("\n  {:<5} {:>12} {:>12} {:>10}\n", "leaf", "backward()", "by hand", "rel. diff");
  std::vector<float> got, by_hand = {hand.grad_a, hand.grad_b, hand.grad_c};
  for (const Tensor& leaf : {a, b, c}) got.push_back(leaf.grad().item());
  for (size_t i = 0; i < got.size(); ++i)
    fmt::print("  {:<5} {:>12.7f} {:>12.7f} {:>10.1e}\n", "abc"[i], got[i], by_hand[i],
               std::abs(got[i] - by_hand[i]) / std::abs(by_hand[i]));
  fmt::print("\n");
  check(nodes == 4, "f = (a b + c) tanh(a) recorded 4 nodes: mul, add, tanh, mul");
  for (size_t i = 0; i < got.size(); ++i)
    check(close(got[i], by_hand[i], 1e-6),
          fmt::format("backward()'s df/d{} equals the hand-computed one", "abc"[i]));
  check(f.item() == hand.f, "the forward values agree too");

  // Gradients add up in grad() until zero_grad(): a second forward and backward doubles them.
  Tensor f2 = (a * b + c) * tanh(a);
  f2.backward();
  check(close(a.grad().item(), 2 * hand.grad_a, 1e-6),
        "a second backward() adds to a.grad() (so training calls zero_grad() each step)");
  bool released = false;
  try {
    f2.backward();
  } catch (const std::logic_error&) {
    released = true;
  }
  check(released, "the tape is freed by backward(): a second f2.backward() throws");
}

// ---- 4. Why reverse mode ----

void why_reverse_mode(bool quick, uint64_t seed, Checks& check) {
  banner("4. Why reverse mode");
  Rng rng(seed);
  const int64_t n = quick ? 16 : 32;  // w is [n, n]: n^2 parameters
  const Tensor x = Tensor::randn({64, n}, rng);
  const Tensor target = Tensor::randn({64, n}, rng, 0.5f);
  Tensor w = Tensor::randn({n, n}, rng, 1.0f / std::sqrt(static_cast<float>(n)));
  w.set_requires_grad();
  const auto loss_of = [&](const Tensor& weights) {
    return mean(pow(tanh(matmul(x, weights)) - target, 2.0f));  // a scalar, shape []
  };

  // Reverse mode: one forward and one backward pass give every dL/dw_k. A pass is short and
  // the machine may be busy, so each time below is the fastest of several runs.
  const double reverse_seconds = fastest_of(20, [&] {
    w.zero_grad();
    loss_of(w).backward();
  });
  const Tensor analytic = w.grad();
  const double forward_seconds = fastest_of(20, [&] {
    NoGrad no_grad;
    loss_of(w);
  });

  // [snippet: finite-differences]
  // Finite differences: nudge one parameter at a time, two forward passes per parameter.
  std::vector<float> numeric(static_cast<size_t>(w.numel()));
  const float h = 1e-2f;
  const auto start = std::chrono::steady_clock::now();
  {
    NoGrad no_grad;  // only values are needed here: record no tape
    float* p = w.data();
    for (int64_t k = 0; k < w.numel(); ++k) {
      const float saved = p[k];
      p[k] = saved + h;
      const float up = loss_of(w).item();
      p[k] = saved - h;
      const float down = loss_of(w).item();
      p[k] = saved;
      numeric[static_cast<size_t>(k)] = (up - down) / (2 * h);
    }
  }
  // [/snippet]
  const double numeric_seconds = seconds_since(start);

  double max_diff = 0.0, max_grad = 0.0;
  for (int64_t k = 0; k < w.numel(); ++k) {
    max_diff = std::max(max_diff, static_cast<double>(std::abs(numeric[static_cast<size_t>(k)] -
                                                               analytic.data()[k])));
    max_grad = std::max(max_grad, static_cast<double>(std::abs(analytic.data()[k])));
  }
  const double ratio = numeric_seconds / reverse_seconds;
  fmt::print("  loss = mean((tanh(x w) - target)^2), x {}, w {}: {} parameters\n\n", x.shape(),
             w.shape(), w.numel());
  fmt::print("  {:<20} {:<22} {:>12}\n", "all of dL/dw by", "passes", "time");
  fmt::print("  {:<20} {:<22} {:>9.3f} ms\n", "backward()", "1 forward + 1 backward",
             1e3 * reverse_seconds);
  fmt::print("  {:<20} {:<22} {:>9.3f} ms\n\n", "finite differences",
             fmt::format("{} forward", 2 * w.numel()), 1e3 * numeric_seconds);
  fmt::print("  backward() is {:.0f}x faster, and costs as much as {:.1f} forward passes\n", ratio,
             reverse_seconds / forward_seconds);
  fmt::print("  largest |numeric - backward()| = {:.1e}, largest |dL/dw| = {:.1e}\n\n", max_diff,
             max_grad);
  check(max_diff <= 1e-2 * max_grad, "finite differences agree with backward() within 1%");
  check(ratio > 10.0,
        fmt::format("backward() is at least 10x faster for {} parameters", w.numel()));
}

// ---- 5. Gradient checking ----

// [snippet: buggy-softmax]
// softmax with a classic slip in its backward. The right rule is
//   dL/dx_i = y_i (g_i - sum_j g_j y_j)
// and this one forgets the leading y_i.
Tensor buggy_softmax(const Tensor& x) {
  Tensor y = softmax(x.detach());  // the right forward, with our own backward recorded below
  record(y, "buggy_softmax", {x}, [probs = y.detach()](const Tensor& grad_y) {
    return Grads{grad_y - sum(grad_y * probs, -1, /*keepdim=*/true)};
  });
  return y;
}
// [/snippet]

void gradient_checking(uint64_t seed, Checks& check) {
  banner("5. Gradient checking");
  Rng rng(seed + 5);
  const auto inputs = [&](std::vector<Shape> shapes) {
    Tensors xs;
    for (const Shape& s : shapes) xs.push_back(Tensor::uniform(s, rng, -2.0f, 2.0f));
    return xs;
  };
  const IndexTensor classes = IndexTensor::from({4}, {0, 2, 1, 2});
  struct Case {
    const char* name;
    std::function<Tensor(const Tensors&)> f;
    Tensors xs;
  };
  const std::vector<Case> cases = {
      {"(a * b + c) * tanh(a)", [](const Tensors& v) { return (v[0] * v[1] + v[2]) * tanh(v[0]); },
       inputs({{5}, {5}, {5}})},
      {"[2, 3] * [3]", [](const Tensors& v) { return v[0] * v[1]; }, inputs({{2, 3}, {3}})},
      {"matmul [3, 4] @ [4, 5]", [](const Tensors& v) { return matmul(v[0], v[1]); },
       inputs({{3, 4}, {4, 5}})},
      {"tanh(x w + b)", [](const Tensors& v) { return tanh(matmul(v[0], v[1]) + v[2]); },
       inputs({{4, 2}, {2, 3}, {3}})},
      {"softmax [3, 5]", [](const Tensors& v) { return softmax(v[0]); }, inputs({{3, 5}})},
      {"cross_entropy [4, 3]", [&](const Tensors& v) { return cross_entropy(v[0], classes); },
       inputs({{4, 3}})},
  };
  fmt::print("  {:<24} {:>8} {:>14}  {}\n", "function", "elements", "max abs error", "result");
  bool all_ok = true;
  for (const Case& c : cases) {
    const GradcheckResult r = gradcheck(c.f, c.xs);
    fmt::print("  {:<24} {:>8} {:>14.1e}  {}\n", c.name, r.checked, r.max_abs_error,
               r.ok ? "pass" : "FAIL");
    all_ok = all_ok && r.ok;
  }
  check(all_ok, "every library op above passes gradcheck");

  const Tensor x = inputs({{3, 5}})[0];
  // [snippet: weighted-check]
  const GradcheckResult fooled =  // L = sum(y): every row of y sums to 1, so dL/dx = 0
      gradcheck([](const Tensors& v) { return sum(buggy_softmax(v[0])); }, {x});
  const GradcheckResult caught =  // L = sum(r * y) with a random r: the bug shows
      gradcheck([](const Tensors& v) { return buggy_softmax(v[0]); }, {x});
  // [/snippet]
  fmt::print("\n  buggy_softmax checked through sum(y):      {}\n", fooled.ok ? "pass" : "FAIL");
  fmt::print("  buggy_softmax checked through sum(r * y):  {}\n", caught.ok ? "pass" : "FAIL");
  fmt::print("  its report:\n");
  for (size_t begin = 0, end; (end = caught.report.find('\n', begin)) != std::string::npos;
       begin = end + 1)
    fmt::print("    {}\n", caught.report.substr(begin, end - begin));
  check(fooled.ok, "a check through a plain sum misses the bug (its true gradient is zero)");
  check(!caught.ok && caught.report.find("input 0 [3, 5]") != std::string::npos,
        "gradcheck's random weighting catches it and reports where");
}

// ---- 6. Training a small network by hand ----

// Two interleaved spirals: the arms of class 0 and class 1 wind out from the centre, half a
// turn apart, so no straight line (and no simple curve) separates them.
struct Dataset {
  Tensor points;       // [N, 2]
  IndexTensor labels;  // [N], 0 or 1
};

Dataset two_spirals(int64_t per_class, float turns, Rng& rng) {
  std::vector<float> xy;
  std::vector<int32_t> labels;
  for (int32_t label = 0; label < 2; ++label) {
    for (int64_t i = 0; i < per_class; ++i) {
      const float s = (static_cast<float>(i) + 0.5f) / static_cast<float>(per_class);  // 0..1
      const float radius = 0.15f + 0.85f * s;
      const float angle = 2.0f * std::numbers::pi_v<float> * turns * s +
                          std::numbers::pi_v<float> * static_cast<float>(label);
      xy.push_back(radius * std::cos(angle) + 0.03f * rng.normal());
      xy.push_back(radius * std::sin(angle) + 0.03f * rng.normal());
      labels.push_back(label);
    }
  }
  return {Tensor::from({2 * per_class, 2}, xy), IndexTensor::from({2 * per_class}, labels)};
}

// A small multilayer perceptron: 2 inputs, two hidden layers of H tanh units, 2 class scores.
struct Mlp {
  // Weights are [in, out], so a layer is x w + b. (The library's Linear layer will store
  // [out, in] and compute x W^T + b, as PyTorch does; by hand, this way is shorter.)
  Tensor w1, b1, w2, b2, w3, b3;  // [2, H] [H]  [H, H] [H]  [H, 2] [2]

  Mlp(int64_t hidden, Rng& rng) {
    // Weights ~ N(0, 1/fan_in): each unit's input sum starts with variance about 1, where
    // tanh is neither flat (saturated, gradient ~0) nor linear.
    w1 = Tensor::randn({2, hidden}, rng, 1.0f / std::sqrt(2.0f));
    w2 = Tensor::randn({hidden, hidden}, rng, 1.0f / std::sqrt(static_cast<float>(hidden)));
    w3 = Tensor::randn({hidden, 2}, rng, 1.0f / std::sqrt(static_cast<float>(hidden)));
    b1 = Tensor::zeros({hidden});
    b2 = Tensor::zeros({hidden});
    b3 = Tensor::zeros({2});
    for (Tensor& p : parameters()) p.set_requires_grad();
  }
  // Copies of the handles: they share the numbers and the gradients with the members.
  std::vector<Tensor> parameters() const { return {w1, b1, w2, b2, w3, b3}; }

  // [snippet: mlp]
  Tensor operator()(const Tensor& x) const {  // x [N, 2]
    Tensor h1 = tanh(matmul(x, w1) + b1);     // [N, H]
    Tensor h2 = tanh(matmul(h1, w2) + b2);    // [N, H]
    return matmul(h2, w3) + b3;               // [N, 2]: one score per class
  }
  // [/snippet]
};

// The fraction of rows whose highest score is the label's.
float accuracy(const Tensor& logits, const IndexTensor& labels) {
  int64_t right = 0;
  for (int64_t i = 0; i < labels.numel(); ++i) {
    const int32_t guess = logits.data()[2 * i + 1] > logits.data()[2 * i] ? 1 : 0;
    right += guess == labels.data()[i] ? 1 : 0;
  }
  return static_cast<float>(right) / static_cast<float>(labels.numel());
}

// The plane from -1.2 to 1.2 as a picture: each pixel in a light colour for the class the
// model predicts there, and the training points on top as dots in the strong colours.
viz::Image draw_regions(const Mlp& model, const Dataset& data) {
  const viz::RegionsOptions options{.title = "learned regions: class 0 (blue), class 1 (red)"};
  const std::vector<float> centres = viz::region_pixel_centres(options);
  const auto pixels = static_cast<int64_t>(centres.size() / 2);
  NoGrad no_grad;  // inference only: no tape
  const Tensor logits = model(Tensor::from({pixels, 2}, centres));
  std::vector<int32_t> classes;
  for (int64_t i = 0; i < pixels; ++i)
    classes.push_back(logits.data()[2 * i + 1] > logits.data()[2 * i] ? 1 : 0);
  return viz::regions(classes, data.points, data.labels, options);
}

void train_a_small_network(bool quick, uint64_t seed, const std::string& dir, Checks& check) {
  banner("6. Training a small network by hand");
  Rng rng(seed);
  const Dataset data = two_spirals(quick ? 100 : 150, quick ? 1.5f : 2.0f, rng);
  const Tensor& points = data.points;
  const IndexTensor& labels = data.labels;
  Mlp model(24, rng);
  const int steps = quick ? 3000 : 8000, print_every = steps / 10;
  const float lr = 1.0f;
  std::vector<Tensor> params = model.parameters();
  int64_t count = 0;
  for (const Tensor& p : params) count += p.numel();
  fmt::print("  {} points, {} parameters, {} steps of gradient descent with lr {}\n\n",
             points.dim(0), count, steps, lr);
  fmt::print("  {:>6} {:>10} {:>10}\n", "step", "loss", "accuracy");

  std::vector<float> losses;
  float last_accuracy = 0.0f;
  const auto start = std::chrono::steady_clock::now();
  // [snippet: gradient-descent]
  for (int step = 0; step <= steps; ++step) {
    const Tensor logits = model(points);  // forward, recording the tape
    const Tensor loss = cross_entropy(logits, labels);
    loss.backward();            // dL/dp into p.grad() for every parameter
    for (Tensor& p : params) {  // p <- p - lr dL/dp
      float* value = p.data();
      const float* grad = p.grad().data();
      for (int64_t i = 0; i < p.numel(); ++i) value[i] -= lr * grad[i];
      p.zero_grad();  // or the next backward() would add to it
    }
    losses.push_back(loss.item());
    last_accuracy = accuracy(logits, labels);
    if (step % print_every == 0)
      fmt::print("  {:>6} {:>10.4f} {:>9.1f}%\n", step, losses.back(), 100 * last_accuracy);
  }
  // [/snippet]
  const double seconds = seconds_since(start);
  fmt::print("\n  {} steps took {:.2f} s ({:.3f} ms per step)\n", steps, seconds,
             1e3 * seconds / (steps + 1));
  fmt::print("\n");
  save_png(viz::line_plot({{.name = "cross-entropy loss", .ys = losses}},
                          {.title = "training loss, plain gradient descent (lr 1)",
                           .x_label = "step",
                           .y_label = "loss (log scale)",
                           .log_y = true}),
           dir + "/loss.png");
  save_png(draw_regions(model, data), dir + "/regions.png");
  const float loss_goal = quick ? 0.2f : 0.05f, accuracy_goal = quick ? 0.9f : 0.99f;
  check(losses.back() < losses.front() / 3, "the loss fell to less than a third of its start");
  check(losses.back() < loss_goal, fmt::format("the final loss is below {}", loss_goal));
  check(last_accuracy >= accuracy_goal,
        fmt::format("at least {:.0f}% of the points are classified right", 100 * accuracy_goal));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Lesson 01: tensors and reverse-mode autodiff"};
  LessonFlags flags(app, "01_autodiff", "a smaller run, in a second or two",
                    "seed for the random data and initial weights");
  CLI11_PARSE(app, argc, argv);

  Checks check;
  try {
    tensors(check);
    const HandResult hand = chain_rule_by_hand();
    same_numbers_from_backward(hand, check);
    why_reverse_mode(flags.quick, flags.seed, check);
    gradient_checking(flags.seed, check);
    std::filesystem::create_directories(flags.out());
    train_a_small_network(flags.quick, flags.seed, flags.out(), check);
  } catch (const std::exception& e) {
    fmt::print("\nlesson 01: stopped by an exception: {}\n", e.what());
    return 1;
  }
  return check.summary("lesson 01");
}
