// Sums and dot products over contiguous floats, vectorised without -ffast-math.
//
// A plain `for (...) s += x[i]` cannot be vectorised: float addition is not associative,
// and the compiler must keep the written order. Sixteen independent partial sums fix the
// order in a way that the compiler can map onto SIMD lanes, so the result is still the
// same on every run. (It differs from the left-to-right sum in the last bits.)
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

namespace gf::kernels {

inline constexpr int kPartialSums = 16;

inline float sum(const float* x, int64_t n) {
  float partial[kPartialSums] = {};
  int64_t i = 0;
  for (; i + kPartialSums <= n; i += kPartialSums)
    for (int l = 0; l < kPartialSums; ++l) partial[l] += x[i + l];
  float total = 0.0f;
  for (int l = 0; l < kPartialSums; ++l) total += partial[l];
  for (; i < n; ++i) total += x[i];
  return total;
}

inline float dot(const float* x, const float* y, int64_t n) {
  float partial[kPartialSums] = {};
  int64_t i = 0;
  for (; i + kPartialSums <= n; i += kPartialSums)
    for (int l = 0; l < kPartialSums; ++l) partial[l] += x[i + l] * y[i + l];
  float total = 0.0f;
  for (int l = 0; l < kPartialSums; ++l) total += partial[l];
  for (; i < n; ++i) total += x[i] * y[i];
  return total;
}

inline float max(const float* x, int64_t n) {  // n >= 1
  float m = x[0];
  for (int64_t i = 1; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
}

// One row of softmax: y_i = exp(x_i - m) / sum_j exp(x_j - m) with m = max_j x_j, so that no
// exponent is positive and nothing overflows. A row that is all -inf (every key masked) gives
// zeros rather than 0/0 = NaN. y may be x (in place). Shared by ops/softmax.cpp and the fused
// attention, so the two give the same bits.
inline void softmax_row(const float* x, float* y, int64_t n) {
  const float m = n > 0 ? max(x, n) : 0.0f;
  if (m == -std::numeric_limits<float>::infinity()) {
    for (int64_t i = 0; i < n; ++i) y[i] = 0.0f;
    return;
  }
  for (int64_t i = 0; i < n; ++i) y[i] = std::exp(x[i] - m);
  const float inv = 1.0f / sum(y, n);
  for (int64_t i = 0; i < n; ++i) y[i] *= inv;
}

}  // namespace gf::kernels
