// Recurrent layers, the baseline the paper argues against (Vaswani et al. 2017, §4, Table 1):
// a recurrent layer reads a sequence one position at a time, so it needs n dependent steps
// (no parallelism across time) and a signal from position 0 reaches position n-1 only
// through all n of them.
//
//   Elman RNN:  h_t = tanh(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh)
//   GRU (Cho et al. 2014, arXiv:1406.1078), in PyTorch's form, gates in the order r, z, n:
//     r_t = sigmoid(W_ir x_t + b_ir + W_hr h_{t-1} + b_hr)          reset gate
//     z_t = sigmoid(W_iz x_t + b_iz + W_hz h_{t-1} + b_hz)          update gate
//     n_t = tanh(W_in x_t + b_in + r_t * (W_hn h_{t-1} + b_hn))     candidate state
//     h_t = (1 - z_t) * n_t + z_t * h_{t-1}
//
// The cells and the RNN are composites of existing ops (linear, sigmoid, tanh, mul, slice,
// concat, where): no backward of their own. The GRU layer runs its loop as one op, gru()
// (autograd/ops/recurrent.cpp), whose backward sums W_hh's gradient over time in one GEMM;
// GRU::forward_step_by_step is the same layer as those composites, a test checks the two
// agree. The parameter names are PyTorch's (weight_ih, weight_hh, bias_ih, bias_hh), with the
// three GRU gates stacked in rows [r; z; n].
//
// Shape legend: B batch, T sequence length, D input width, H hidden width (state size).
#pragma once

#include <cstdint>
#include <vector>

#include "autograd/random.h"
#include "autograd/tensor.h"
#include "nn/module.h"

namespace gf::nn {

// One Elman step. weight_ih [H, D], weight_hh [H, H] (Xavier uniform), biases [H] (zeros).
class RNNCell : public Module {
 public:
  RNNCell(int64_t input_size, int64_t hidden_size, Rng& rng);
  // x [B, D], h [B, H] -> the next state [B, H]. Throws ShapeError naming the shapes.
  Tensor forward(const Tensor& x, const Tensor& h) const;

  // The two halves of a step, split so that a layer can project every x_t in one GEMM:
  // project_input: x [..., D] -> W_ih x + b_ih [..., H]; step: that [B, H] and h [B, H] -> h'.
  Tensor project_input(const Tensor& x) const;
  Tensor step(const Tensor& projected_x, const Tensor& h) const;

  int64_t input_size, hidden_size;
  Tensor weight_ih, weight_hh, bias_ih, bias_hh;
};

// One GRU step. weight_ih [3H, D], weight_hh [3H, H] (each gate's block Xavier uniform on its
// own [H, D] or [H, H]), biases [3H] (zeros).
class GRUCell : public Module {
 public:
  GRUCell(int64_t input_size, int64_t hidden_size, Rng& rng);
  // x [B, D], h [B, H] -> the next state [B, H]. Throws ShapeError naming the shapes.
  Tensor forward(const Tensor& x, const Tensor& h) const;

  // As for RNNCell: project_input gives [..., 3H]; step takes its [B, 3H] slice for one t.
  Tensor project_input(const Tensor& x) const;
  Tensor step(const Tensor& projected_x, const Tensor& h) const;

  int64_t input_size, hidden_size;
  Tensor weight_ih, weight_hh, bias_ih, bias_hh;
};

struct RecurrentOutput {
  Tensor outputs;      // [B, T, H]: the state after each position
  Tensor final_state;  // [B, H]: the state after each row's last real position
};

// A cell run over a sequence: x [B, T, D] -> outputs [B, T, H] and the final state, as the
// explicit loop over t = 0 .. T-1 that Table 1 counts as O(n) sequential operations. The
// input projections of all T positions are one GEMM up front (they do not depend on h); only
// the h-dependent half runs inside the loop. h0 [B, H] defaults to zeros. lengths (one per
// row, in [1, T]) handles right-padded batches: after its last real position a row keeps its
// state, so final_state is the state at position lengths[b] - 1. Throws ShapeError for a
// wrong x or h0, std::invalid_argument for a wrong lengths.
class RNN : public Module {
 public:
  RNN(int64_t input_size, int64_t hidden_size, Rng& rng);
  RecurrentOutput forward(const Tensor& x, const Tensor& h0 = {},
                          const std::vector<int64_t>& lengths = {}) const;

  RNNCell cell;
};

// As RNN, with the loop over time one op on the tape (gru() in ops.h); forward_step_by_step
// records each cell step's ops instead, the tape whose depth grows with T (lesson 10 measures
// it), and gives the same numbers up to rounding.
class GRU : public Module {
 public:
  GRU(int64_t input_size, int64_t hidden_size, Rng& rng);
  RecurrentOutput forward(const Tensor& x, const Tensor& h0 = {},
                          const std::vector<int64_t>& lengths = {}) const;
  RecurrentOutput forward_step_by_step(const Tensor& x, const Tensor& h0 = {},
                                       const std::vector<int64_t>& lengths = {}) const;

  GRUCell cell;
};

}  // namespace gf::nn
