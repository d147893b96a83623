// Every differentiable op: the table of contents of the autodiff library.
//
// Each op checks its arguments first (throwing ShapeError or IndexError with the op's name and
// the shapes), computes its output, and records on the tape how to send gradients back
// (graph.h). Its forward and backward sit side by side in one function in ops/*.cpp, with
// the derivative written out in a comment. Element-wise ops broadcast as NumPy does; their
// backward sums the gradient back to each input's shape (sum_to).
//
// Shape legend: [..., D] means any leading dimensions, then D.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "autograd/tensor.h"

namespace gf {

class Rng;

// ---- Element-wise, broadcasting (ops/elementwise.cpp) ---------------------------------

// The shape both a and b broadcast to (NumPy rules: align trailing dimensions; each pair
// must be equal or one of them 1). Throws ShapeError naming op: "add: cannot broadcast ...".
Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b);

// Sums g over the dimensions that broadcasting added or stretched, giving shape `shape`.
// This is how the gradient of a broadcast input is formed. Differentiable.
Tensor sum_to(const Tensor& g, const Shape& shape);
// Repeats x along the dimensions where it broadcasts to shape (the inverse of sum_to).
Tensor expand(const Tensor& x, const Shape& shape);

Tensor add(const Tensor& a, const Tensor& b);  // a + b
Tensor sub(const Tensor& a, const Tensor& b);  // a - b
Tensor mul(const Tensor& a, const Tensor& b);  // a * b
Tensor div(const Tensor& a, const Tensor& b);  // a / b
Tensor neg(const Tensor& x);                   // -x

// Scalar forms: no broadcast machinery, no tensor made for the scalar.
Tensor add_scalar(const Tensor& x, float s);  // x + s
Tensor mul_scalar(const Tensor& x, float s);  // x * s

Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);  // natural logarithm; -inf at 0, NaN below
Tensor sqrt(const Tensor& x);
Tensor pow(const Tensor& x, float p);  // x^p
Tensor relu(const Tensor& x);          // max(x, 0); gradient 0 at x = 0
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);  // 1 / (1 + exp(-x))

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& x);
Tensor operator+(const Tensor& x, float s);
Tensor operator+(float s, const Tensor& x);
Tensor operator-(const Tensor& x, float s);
Tensor operator-(float s, const Tensor& x);
Tensor operator*(const Tensor& x, float s);
Tensor operator*(float s, const Tensor& x);
Tensor operator/(const Tensor& x, float s);
Tensor operator/(float s, const Tensor& x);

// ---- Reductions (ops/reduce.cpp) ------------------------------------------------------

Tensor sum(const Tensor& x);   // all elements, shape []
Tensor mean(const Tensor& x);  // all elements, shape []
// Over one axis (negative counts from the end). keepdim keeps it as size 1, which makes
// the result broadcast back against x: x - mean(x, -1, true).
Tensor sum(const Tensor& x, int axis, bool keepdim = false);
Tensor mean(const Tensor& x, int axis, bool keepdim = false);
// The gradient flows to the first position of the maximum only.
Tensor max(const Tensor& x, int axis, bool keepdim = false);

// ---- Matrix product (ops/matmul.cpp) --------------------------------------------------

// a [..., M, K] @ b [..., K, N] -> [..., M, N]. Both ranks >= 2; the batch dimensions
// (all but the last two) broadcast, so [B, T, D] @ [D, E] is one product per batch row.
// Throws ShapeError when the inner dimensions differ or the batch dimensions do not broadcast.
Tensor matmul(const Tensor& a, const Tensor& b);

// A fully connected layer, fused: y = x W^T + b. x [..., I], weight [O, I] (PyTorch's layout),
// bias [O] or undefined for none. One GEMM that reads W transposed in place, so neither the
// forward nor the backward ever copies W. (The composite matmul(x, transpose(w, 0, 1)) + b
// gives the same numbers; a test checks it.)
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = {});

// ---- Shapes (ops/shape.cpp) -----------------------------------------------------------

// Same numbers, new shape; one dimension may be -1 (inferred). Shares storage.
Tensor reshape(const Tensor& x, const Shape& shape);
// Reorders the dimensions: result dimension i is x's dimension dims[i]. Copies.
Tensor permute(const Tensor& x, const std::vector<int>& dims);
// Swaps two dimensions (negative counts from the end). Copies.
Tensor transpose(const Tensor& x, int dim0, int dim1);
// Elements start .. end-1 along axis. Copies.
Tensor slice(const Tensor& x, int axis, int64_t start, int64_t end);
// Joins tensors along axis; all other dimensions must agree.
Tensor concat(const std::vector<Tensor>& xs, int axis);

// ---- Indexing and masking (ops/index.cpp) ---------------------------------------------

// Row lookup: weight [V, D], ids [...] -> [..., D]. Throws IndexError for an id outside [0, V).
// The gradient adds each output row back into the row of weight it came from.
Tensor embedding(const Tensor& weight, const IndexTensor& ids);

// x where mask is 0, value where mask is non-zero. mask (no gradient) broadcasts to x's shape.
// With value = -inf before a softmax, masked positions get probability 0 (§3.2.3).
Tensor masked_fill(const Tensor& x, const Tensor& mask, float value);

// a where condition is non-zero, b elsewhere; all three broadcast together.
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b);

// Inverted dropout (Srivastava et al. 2014; §5.4 of the paper): each element is zeroed with
// probability p and the survivors are scaled by 1/(1-p), so the expected value is unchanged
// and nothing needs rescaling at inference. p in [0, 1); p = 0 returns x itself.
Tensor dropout(const Tensor& x, float p, Rng& rng);

// ---- Fused ops (ops/softmax.cpp, ops/layer_norm.cpp, ops/cross_entropy.cpp, ops/attention.cpp,
// ops/recurrent.cpp)
// Written as one kernel each, for speed and numerical stability; each is gradient-checked
// and compared against the same function composed from the ops above.

// softmax over the last axis: y_i = exp(x_i - max_j x_j) / sum_j exp(x_j - max_j x_j).
// Rows of -inf (fully masked) give 0, not NaN.
Tensor softmax(const Tensor& x);
// log(softmax(x)) over the last axis, without forming softmax: x_i - logsumexp(x).
Tensor log_softmax(const Tensor& x);

// Layer normalisation over the last axis (Ba et al. 2016), as PyTorch computes it:
// (x - mean) / sqrt(biased variance + eps) * weight + bias. x [..., D], weight and bias [D].
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps = 1e-5f);

struct CrossEntropyOptions {
  // Targets equal to this add no loss (padding). Unset by default, so every target must be a
  // class: a sentinel such as -1 for "none" would silently ignore a target of -1.
  std::optional<int32_t> ignore_index = std::nullopt;
  float label_smoothing = 0.0f;  // epsilon_ls of §5.4; the target puts (1-eps) + eps/V on the
                                 // true class and eps/V on every other class, as PyTorch does
};
// Mean cross-entropy between softmax(logits) and the (smoothed) targets, over the positions
// whose target is not ignored; 0 when all are. logits [..., V], targets [...] with ids in
// [0, V). Returns shape []. Throws ShapeError, and IndexError naming the first target (value
// and position) that is neither a class nor the ignore index.
Tensor cross_entropy(const Tensor& logits, const IndexTensor& targets,
                     const CrossEntropyOptions& options = {});

// Multi-head attention (§3.2.1-3.2.2) for every head at once (ops/attention.cpp):
//   head_h = softmax(Q_h K_h^T * scale, -inf where mask is non-zero) V_h
// where Q_h, K_h, V_h are columns [hK, (h+1)K) of q [B, T, D], k [B, S, D], v [B, S, Dv]
// (K = D / heads; k and v may have batch 1, shared by every row). Returns [B, T, Dv] with head
// h in its columns, i.e. Concat(head_1, ..., head_h), ready for W^O. The heads are read and
// written in place: nothing is split, transposed or copied. mask (no gradient) broadcasts to
// [B, H, T, S]. *probs, if given, receives a copy of the weights [B, H, T, S] (no gradient):
// backward reads the op's own, which editing a heatmap must not reach. Fully masked rows give
// zero weights. Throws ShapeError.
Tensor multi_head_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                            int64_t heads, float scale, Tensor* probs = nullptr);

// A GRU layer's loop over time (ops/recurrent.cpp; the equations in nn/recurrent.h): the
// state after each step, [B, T, H], from the input projections W_ih x_t + b_ih of every step
// [B, T, 3H] (gates r, z, n), the first state h0 [B, H], weight_hh [3H, H] and bias_hh [3H].
// lengths (empty, or one per row in [1, T]): after its last real step a row keeps its state.
// One tape node for all T steps, so W_hh's gradient is one GEMM (nn::GRU::forward_step_by_step
// is the same layer composed from the ops above, a node per op and step). Throws ShapeError,
// and std::invalid_argument for wrong lengths.
Tensor gru(const Tensor& projected_x, const Tensor& h0, const Tensor& weight_hh,
           const Tensor& bias_hh, const std::vector<int64_t>& lengths = {});

}  // namespace gf
