// Index arithmetic for NumPy broadcasting over contiguous row-major arrays.
//
// An operand of shape [3, 1] seen from an output of shape [2, 3, 4] is read with strides
// [0, 1, 0]: a dimension it lacks or has as 1 is repeated, i.e. stride 0. Adjacent output
// dimensions that every operand walks contiguously are merged ("coalesced"), so that
// [64, 10, 512] + [512] becomes 640 rows of 512: the inner loop is long and the compiler
// vectorises it. No allocation; everything is on the stack.
#pragma once

#include <array>
#include <cstdint>

#include "autograd/tensor.h"

namespace gf::kernels {

template <int N>  // N operands; operand 0 is usually the output
struct BroadcastPlan {
  int rank = 0;                                 // after coalescing (0: a single element)
  std::array<int64_t, Shape::kMaxRank> size{};  // loop extents
  std::array<std::array<int64_t, Shape::kMaxRank>, N> stride{};  // per operand, in elements
};

// Plans a loop over `out` in which operand k is read with shape `operands[k]`; each operand
// must broadcast to out (checked by the caller, which knows the op's name).
template <int N>
BroadcastPlan<N> plan_broadcast(const Shape& out, const std::array<Shape, N>& operands) {
  const int rank = out.rank();
  BroadcastPlan<N> full;
  for (int k = 0; k < N; ++k) {
    const Shape& s = operands[static_cast<size_t>(k)];
    int64_t contiguous = 1;
    for (int d = rank - 1; d >= 0; --d) {
      const int dk = d - (rank - s.rank());
      const bool repeated = dk < 0 || (s[dk] == 1 && out[d] != 1);
      full.stride[static_cast<size_t>(k)][static_cast<size_t>(d)] = repeated ? 0 : contiguous;
      if (dk >= 0) contiguous *= s[dk];
    }
  }
  // Drop size-1 dimensions, then merge each dimension into the one before it when every
  // operand's stride says the two are one contiguous run.
  BroadcastPlan<N> p;
  for (int d = 0; d < rank; ++d) {
    if (out[d] == 1) continue;
    const auto i = static_cast<size_t>(d);
    if (p.rank > 0) {
      const auto last = static_cast<size_t>(p.rank - 1);
      bool mergeable = true;
      for (size_t k = 0; k < N; ++k)
        mergeable = mergeable && p.stride[k][last] == full.stride[k][i] * out[d];
      if (mergeable) {
        p.size[last] *= out[d];
        for (size_t k = 0; k < N; ++k) p.stride[k][last] = full.stride[k][i];
        continue;
      }
    }
    const auto j = static_cast<size_t>(p.rank++);
    p.size[j] = out[d];
    for (size_t k = 0; k < N; ++k) p.stride[k][j] = full.stride[k][i];
  }
  return p;
}

// Calls row(offsets, n, inner_strides) for every innermost run of the plan: operand k's
// elements are at offsets[k] + i * inner_strides[k] for i in [0, n).
template <int N, typename RowFn>
void for_each_row(const BroadcastPlan<N>& p, RowFn&& row) {
  std::array<int64_t, N> offsets{};
  std::array<int64_t, N> inner{};
  if (p.rank == 0) {
    row(offsets, int64_t{1}, inner);
    return;
  }
  const auto last = static_cast<size_t>(p.rank - 1);
  for (size_t k = 0; k < N; ++k) inner[k] = p.stride[k][last];
  int64_t rows = 1;
  for (size_t d = 0; d < last; ++d) rows *= p.size[d];
  std::array<int64_t, Shape::kMaxRank> index{};
  for (int64_t r = 0; r < rows; ++r) {
    row(offsets, p.size[last], inner);
    // Odometer increment over the outer dimensions, updating offsets incrementally.
    for (size_t d = last; d-- > 0;) {
      for (size_t k = 0; k < N; ++k) offsets[k] += p.stride[k][d];
      if (++index[d] < p.size[d]) break;
      for (size_t k = 0; k < N; ++k) offsets[k] -= p.stride[k][d] * p.size[d];
      index[d] = 0;
    }
  }
}

}  // namespace gf::kernels
