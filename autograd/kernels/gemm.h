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

// The kernel every op calls.
void gemm(const GemmArgs& args);

}  // namespace gf::kernels
