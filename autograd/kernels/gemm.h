// Matrix multiplication kernels: plain float pointers, no tensors, no graph.
//
//   C[M, N] = op(A) op(B)          (or C += op(A) op(B) when accumulate is true)
//
// All matrices are contiguous and row-major. op(A) is [M, K]: A is stored as [M, K], or as
// [K, M] when trans_a is set (then op(A) = A^T). Likewise op(B) is [K, N]: B is stored as
// [K, N], or as [N, K] when trans_b is set. The transposed forms serve matmul's backward
// (dA = dC B^T, dB = A^T dC) without copying.
//
// Three implementations with one signature, so that they can be compared (tests, bench/gemm,
// lesson 11): the naive triple loop that defines the result, a cache-blocked, vectorised,
// multi-threaded kernel, and OpenBLAS when the build found it. The K loop is never split
// across threads, so each result is the same for a given thread count, run after run.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

namespace gf::kernels {

struct GemmArgs {
  bool trans_a = false;
  bool trans_b = false;
  int64_t m = 0, n = 0, k = 0;
  const float* a = nullptr;
  const float* b = nullptr;
  float* c = nullptr;
  bool accumulate = false;  // C += op(A) op(B) instead of C = op(A) op(B)
  // Distance in floats between the starts of consecutive stored rows; 0 means contiguous
  // (the stored row length: K or M for A, N or K for B, N for C).
  int64_t lda = 0, ldb = 0, ldc = 0;
};

// The leading dimensions with 0 replaced by the contiguous row length.
struct LeadingDims {
  int64_t a, b, c;
};
LeadingDims leading_dims(const GemmArgs& args);

// The definition: for each (i, j), a dot product over k in increasing order.
void gemm_naive(const GemmArgs& args);

// Cache-blocked and packed, register-tiled micro-kernel, threads over blocks of C.
void gemm_blocked(const GemmArgs& args);

// OpenBLAS's cblas_sgemm, one OpenBLAS thread per thread of ours (so the two thread pools
// never spin against each other on the same cores). Throws std::logic_error when the build
// has no BLAS.
void gemm_blas(const GemmArgs& args);
bool have_blas();

// Which kernel gemm() uses. The default is Blocked; Blas is faster for large matrices
// when present. The choice is process-wide (lesson 11 and bench/ switch it).
enum class GemmBackend { Naive, Blocked, Blas };
void set_gemm_backend(GemmBackend backend);  // throws std::invalid_argument for Blas without BLAS
GemmBackend gemm_backend();
std::string_view to_string(GemmBackend backend);

// The precision of the operands of the blocked kernel's packed products: those of more than
// 2^16 multiply-adds, and of more than 64 rows when B is stored transposed (in training, the
// weights' products above all). Float32 by default. BFloat16 rounds both operands to bfloat16
// (8 significant bits, float32's exponent range) as it packs them and sums their products in
// float32, treating subnormal numbers as 0: twice the multiply-adds per instruction where the
// CPU has AVX512-BF16. Smaller products (a head's attention over short sequences, decoding's
// few rows) and the naive and BLAS backends stay float32, so in bfloat16 a row of C depends on
// how many rows were multiplied with it. Process-wide, like the backend; results stay the same
// for any thread count.
enum class GemmPrecision { Float32, BFloat16 };
// Whether this build can multiply in bfloat16: compiled for a CPU with AVX512-BF16.
bool have_bfloat16();
void set_gemm_precision(GemmPrecision precision);  // throws std::invalid_argument without it
GemmPrecision gemm_precision();
std::string_view to_string(GemmPrecision precision);

// The top 16 bits of x's float32, rounded to nearest, ties to even: x as a bfloat16. A NaN stays a NaN (its low bits alone could round it
// to infinity).
inline uint32_t bfloat16_bits(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);  // std::bit_cast, which WebAssembly's libc++ 13 lacks
  const uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
  const uint32_t quiet_nan = (bits >> 16) | 0x40u;
  // A select, not a branch, so that a loop of conversions vectorises.
  return (bits & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded;
}
// x rounded to bfloat16, as a float: what a bfloat16 product multiplies.
inline float round_to_bfloat16(float x) {
  const uint32_t bits = bfloat16_bits(x) << 16;
  float rounded;
  std::memcpy(&rounded, &bits, sizeof rounded);
  return rounded;
}

// The kernel every op calls.
void gemm(const GemmArgs& args);

}  // namespace gf::kernels
