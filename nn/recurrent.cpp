#include "nn/recurrent.h"

#include <fmt/format.h>

#include <stdexcept>

#include "autograd/errors.h"
#include "autograd/graph.h"
#include "autograd/ops.h"
#include "nn/init.h"

namespace gf::nn {

namespace {

void require_positive(const char* layer, const char* what, int64_t value) {
  if (value <= 0)
    throw std::invalid_argument(fmt::format("{}: {} must be positive, got {}", layer, what, value));
}

// `gates` blocks of Xavier uniform [H, fan_in] stacked into [gates * H, fan_in]: each gate's
// matrix maps fan_in inputs to H outputs, so each gets the scale of its own shape.
Tensor stacked_xavier(int64_t gates, int64_t hidden, int64_t fan_in, Rng& rng) {
  NoGrad no_grad;
  std::vector<Tensor> blocks;
  for (int64_t g = 0; g < gates; ++g) blocks.push_back(init::xavier_uniform({hidden, fan_in}, rng));
  return gates == 1 ? blocks[0] : concat(blocks, 0);
}

// x [B, D] and h [B, H] for a cell of width D -> H.
void check_step_shapes(const char* op, const Tensor& x, const Tensor& h, int64_t input_size,
                       int64_t hidden_size) {
  const Shape& xs = x.shape();
  const Shape& hs = h.shape();
  if (xs.size() != 2 || hs.size() != 2 || xs[1] != input_size || hs[1] != hidden_size ||
      xs[0] != hs[0])
    throw ShapeError(fmt::format("{}: expects x [B, {}] and h [B, {}], got x {} and h {}", op,
                                 input_size, hidden_size, xs, hs));
}

// Checks x [B, T, D], h [B, H] (zeros when undefined) and lengths for a cell; returns h.
template <typename Cell>
Tensor check_sequence(const char* op, const Cell& cell, const Tensor& x, Tensor h,
                      const std::vector<int64_t>& lengths) {
  const Shape& xs = x.shape();
  if (xs.size() != 3 || xs[2] != cell.input_size || xs[1] < 1)
    throw ShapeError(
        fmt::format("{}: expects x [B, T, {}] with T >= 1, got {}", op, cell.input_size, xs));
  const int64_t batch = xs[0], length = xs[1];
  if (!h.defined()) h = Tensor::zeros({batch, cell.hidden_size});
  if (!(h.shape() == Shape{batch, cell.hidden_size}))
    throw ShapeError(fmt::format("{}: the initial state must be [{}, {}] for x {}, got {}", op,
                                 batch, cell.hidden_size, xs, h.shape()));
  if (!lengths.empty() && static_cast<int64_t>(lengths.size()) != batch)
    throw std::invalid_argument(
        fmt::format("{}: {} lengths given for a batch of {}", op, lengths.size(), batch));
  for (const int64_t len : lengths)
    if (len < 1 || len > length)
      throw std::invalid_argument(
          fmt::format("{}: length {} is outside [1, {}] for x {}", op, len, length, xs));
  return h;
}

// The loop over time shared by RNN and GRU (Table 1's O(n) sequential operations): position t
// cannot start before position t-1 has produced its state.
template <typename Cell>
RecurrentOutput run_over_time(const char* op, const Cell& cell, const Tensor& x, Tensor h,
                              const std::vector<int64_t>& lengths) {
  h = check_sequence(op, cell, x, h, lengths);
  const int64_t batch = x.shape()[0], length = x.shape()[1];
  // Every W_ih x_t + b_ih at once: one [B*T, D] x [D, G*H] GEMM, parallel across time.
  const Tensor projected = cell.project_input(x);  // [B, T, G*H]
  const int64_t width = projected.shape()[2];
  std::vector<Tensor> outputs;
  outputs.reserve(static_cast<size_t>(length));
  for (int64_t t = 0; t < length; ++t) {
    const Tensor x_t = reshape(slice(projected, 1, t, t + 1), {batch, width});
    Tensor h_next = cell.step(x_t, h);
    if (!lengths.empty()) {  // rows whose sequence has ended keep their state
      std::vector<float> running(static_cast<size_t>(batch));
      for (size_t b = 0; b < running.size(); ++b) running[b] = t < lengths[b] ? 1.0f : 0.0f;
      h_next = where(Tensor::from({batch, 1}, running), h_next, h);
    }
    h = h_next;
    outputs.push_back(reshape(h, {batch, 1, cell.hidden_size}));
  }
  return {.outputs = length == 1 ? outputs[0] : concat(outputs, 1), .final_state = h};
}

}  // namespace

// ---- Elman RNN --------------------------------------------------------------------------

RNNCell::RNNCell(int64_t input_size_, int64_t hidden_size_, Rng& rng)
    : input_size(input_size_), hidden_size(hidden_size_) {
  require_positive("RNNCell", "input_size", input_size);
  require_positive("RNNCell", "hidden_size", hidden_size);
  weight_ih = register_parameter("weight_ih", stacked_xavier(1, hidden_size, input_size, rng));
  weight_hh = register_parameter("weight_hh", stacked_xavier(1, hidden_size, hidden_size, rng));
  bias_ih = register_parameter("bias_ih", Tensor::zeros({hidden_size}));
  bias_hh = register_parameter("bias_hh", Tensor::zeros({hidden_size}));
}

Tensor RNNCell::project_input(const Tensor& x) const {
  return linear(x, weight_ih, bias_ih);
}

Tensor RNNCell::step(const Tensor& projected_x, const Tensor& h) const {
  check_step_shapes("RNNCell.step", projected_x, h, hidden_size, hidden_size);
  return tanh(projected_x + linear(h, weight_hh, bias_hh));
}

Tensor RNNCell::forward(const Tensor& x, const Tensor& h) const {
  check_step_shapes("RNNCell", x, h, input_size, hidden_size);
  return step(project_input(x), h);
}

RNN::RNN(int64_t input_size, int64_t hidden_size, Rng& rng) : cell(input_size, hidden_size, rng) {
  register_module("cell", cell);
}

RecurrentOutput RNN::forward(const Tensor& x, const Tensor& h0,
                             const std::vector<int64_t>& lengths) const {
  return run_over_time("RNN", cell, x, h0, lengths);
}

// ---- GRU --------------------------------------------------------------------------------

GRUCell::GRUCell(int64_t input_size_, int64_t hidden_size_, Rng& rng)
    : input_size(input_size_), hidden_size(hidden_size_) {
  require_positive("GRUCell", "input_size", input_size);
  require_positive("GRUCell", "hidden_size", hidden_size);
  weight_ih = register_parameter("weight_ih", stacked_xavier(3, hidden_size, input_size, rng));
  weight_hh = register_parameter("weight_hh", stacked_xavier(3, hidden_size, hidden_size, rng));
  bias_ih = register_parameter("bias_ih", Tensor::zeros({3 * hidden_size}));
  bias_hh = register_parameter("bias_hh", Tensor::zeros({3 * hidden_size}));
}

Tensor GRUCell::project_input(const Tensor& x) const {
  return linear(x, weight_ih, bias_ih);
}

Tensor GRUCell::step(const Tensor& projected_x, const Tensor& h) const {
  const int64_t hs = hidden_size;
  check_step_shapes("GRUCell.step", projected_x, h, 3 * hs, hs);
  // One [B, H] x [H, 3H] GEMM for all three gates; the blocks are r, z, n.
  const Tensor projected_h = linear(h, weight_hh, bias_hh);  // [B, 3H]
  const Tensor r = sigmoid(slice(projected_x, 1, 0, hs) + slice(projected_h, 1, 0, hs));
  const Tensor z = sigmoid(slice(projected_x, 1, hs, 2 * hs) + slice(projected_h, 1, hs, 2 * hs));
  // The reset gate scales only the recurrent half of the candidate (PyTorch's and cuDNN's
  // form; Cho et al. apply r to h before the product, which gives a slightly different model).
  const Tensor n =
      tanh(slice(projected_x, 1, 2 * hs, 3 * hs) + r * slice(projected_h, 1, 2 * hs, 3 * hs));
  // z near 1 keeps the old state: the path that lets a GRU carry information further than an
  // Elman RNN, whose state is squashed through tanh at every step.
  return n + z * (h - n);  // = (1 - z) * n + z * h
}

Tensor GRUCell::forward(const Tensor& x, const Tensor& h) const {
  check_step_shapes("GRUCell", x, h, input_size, hidden_size);
  return step(project_input(x), h);
}

GRU::GRU(int64_t input_size, int64_t hidden_size, Rng& rng) : cell(input_size, hidden_size, rng) {
  register_module("cell", cell);
}

// The same loop as forward_step_by_step, as one op: gru() in autograd/ops/recurrent.cpp.
RecurrentOutput GRU::forward(const Tensor& x, const Tensor& h0,
                             const std::vector<int64_t>& lengths) const {
  const Tensor h = check_sequence("GRU", cell, x, h0, lengths);
  const int64_t batch = x.shape()[0], length = x.shape()[1];
  const Tensor outputs = gru(cell.project_input(x), h, cell.weight_hh, cell.bias_hh, lengths);
  // A row that ended early has kept its state since, so the last output is its final state.
  return {.outputs = outputs,
          .final_state = reshape(slice(outputs, 1, length - 1, length), {batch, cell.hidden_size})};
}

RecurrentOutput GRU::forward_step_by_step(const Tensor& x, const Tensor& h0,
                                          const std::vector<int64_t>& lengths) const {
  return run_over_time("GRU", cell, x, h0, lengths);
}

}  // namespace gf::nn
