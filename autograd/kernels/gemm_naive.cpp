// The reference GEMM: C[M, N] = op(A)[M, K] op(B)[K, N], one dot product per element of C.
// It is slow on purpose and defines the answer: each C[i, j] is a float sum over k in
// increasing order. The fast kernels (gemm_blocked.cpp, gemm_blas.cpp) are tested against it.
#include "autograd/kernels/gemm.h"

namespace gf::kernels {

void gemm_naive(const GemmArgs& args) {
  const int64_t m = args.m, n = args.n, k = args.k;
  const LeadingDims ld = leading_dims(args);
  // op(A)[i, p] and op(B)[p, j] read through the transposes, so no copy is made.
  auto op_a = [&](int64_t i, int64_t p) {
    return args.trans_a ? args.a[p * ld.a + i] : args.a[i * ld.a + p];
  };
  auto op_b = [&](int64_t p, int64_t j) {
    return args.trans_b ? args.b[j * ld.b + p] : args.b[p * ld.b + j];
  };

  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      float sum = 0.0f;
      for (int64_t p = 0; p < k; ++p) sum += op_a(i, p) * op_b(p, j);
      float& c = args.c[i * ld.c + j];
      c = args.accumulate ? c + sum : sum;
    }
  }
}

}  // namespace gf::kernels
