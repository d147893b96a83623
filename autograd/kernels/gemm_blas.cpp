// GEMM through OpenBLAS's cblas_sgemm, the practical speed limit that gemm_blocked is measured
// against. Compiled with GRADFORMER_HAVE_BLAS when CMake found OpenBLAS; otherwise gemm_blas
// throws and have_blas() says false, so callers and tests can ask before using it.
#include <stdexcept>

#include "autograd/kernels/gemm.h"
#include "autograd/kernels/parallel.h"

#ifdef GRADFORMER_HAVE_BLAS
#include <cblas.h>
#include <fmt/format.h>

#include <algorithm>
#include <climits>

// Declared here as well as in OpenBLAS's cblas.h, because a generic cblas.h lacks it.
extern "C" void openblas_set_num_threads(int num_threads);
#endif

namespace gf::kernels {

#ifdef GRADFORMER_HAVE_BLAS

bool have_blas() {
  return true;
}

void gemm_blas(const GemmArgs& args) {
  const int64_t m = args.m, n = args.n, k = args.k;
  if (m == 0 || n == 0) return;
  const LeadingDims ld = leading_dims(args);
  if (k == 0) {  // an empty sum; some BLAS builds reject the leading dimension 0 that K = 0 gives
    if (!args.accumulate)
      for (int64_t i = 0; i < m; ++i) std::fill_n(args.c + i * ld.c, n, 0.0f);
    return;
  }
  if (std::max({m, n, k, ld.a, ld.b, ld.c}) > INT_MAX)  // sizes and leading dimensions are ints
    throw std::invalid_argument(fmt::format(
        "gemm_blas: sizes too large for BLAS's 32-bit indices (m = {}, n = {}, k = {})", m, n, k));

  // OpenBLAS would start its own pool of threads inside each call. Those threads and ours
  // (parallel.h) would wait on the same two cores and slow each other down, so OpenBLAS gets
  // one thread and our pool splits the rows of C instead. A function-local static runs this exactly once.
  static const bool single_threaded = (openblas_set_num_threads(1), true);
  (void)single_threaded;

  // Row-major leading dimensions: op(A) rows i0..i1 start at row i0 of A, or at column i0 of
  // A^T's storage [K, M]; B is used whole by every thread.
  const int lda = static_cast<int>(ld.a), ldb = static_cast<int>(ld.b),
            ldc = static_cast<int>(ld.c);
  const float beta = args.accumulate ? 1.0f : 0.0f;  // beta = 0: C is overwritten, never read
  const int threads =
      m * n * k >= (int64_t{1} << 19) ? concurrent_threads() : 1;  // as gemm_blocked

  run_parts(threads, [&](int t) {
    // Static split of the rows: thread t always gets the same rows, so the same bits.
    const int64_t i0 = m * t / threads, i1 = m * (t + 1) / threads;
    if (i1 > i0) {
      const float* a = args.trans_a ? args.a + i0 : args.a + i0 * ld.a;
      cblas_sgemm(CblasRowMajor, args.trans_a ? CblasTrans : CblasNoTrans,
                  args.trans_b ? CblasTrans : CblasNoTrans, static_cast<int>(i1 - i0),
                  static_cast<int>(n), static_cast<int>(k), 1.0f, a, lda, args.b, ldb, beta,
                  args.c + i0 * ld.c, ldc);
    }
  });
}

#else  // no BLAS in this build

bool have_blas() {
  return false;
}

void gemm_blas(const GemmArgs&) {
  throw std::logic_error(
      "gemm_blas: this build has no BLAS (install libopenblas-dev and reconfigure)");
}

#endif

}  // namespace gf::kernels
