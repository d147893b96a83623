// GEMM through OpenBLAS's cblas_sgemm, the practical speed limit that gemm_blocked is measured
// against. Compiled with GRADFORMER_HAVE_BLAS when CMake found OpenBLAS; otherwise gemm_blas
// throws and have_blas() says false, so callers and tests can ask before using it.
#include <stdexcept>

#include "autograd/kernels/gemm.h"
#include "autograd/kernels/parallel.h"

#ifdef GRADFORMER_HAVE_BLAS
#include <cblas.h>
#include <fmt/format.h>
#include <omp.h>

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
  if (k == 0) {  // an empty sum; some BLAS builds reject the leading dimension 0 that K = 0 gives
    if (!args.accumulate) std::fill(args.c, args.c + m * n, 0.0f);
    return;
  }
  if (m > INT_MAX || n > INT_MAX || k > INT_MAX)  // sizes and leading dimensions are ints
    throw std::invalid_argument(fmt::format(
        "gemm_blas: sizes too large for BLAS's 32-bit indices (m = {}, n = {}, k = {})", m, n, k));

  // OpenBLAS would start its own pool of threads inside each call. Those threads and OpenMP's
  // spin-wait on the same two cores and slow each other down, so OpenBLAS gets one thread and
  // OpenMP splits the rows of C instead. A function-local static runs this exactly once.
  static const bool single_threaded = (openblas_set_num_threads(1), true);
  (void)single_threaded;

  // Row-major leading dimensions: op(A) rows i0..i1 start at row i0 of A, or at column i0 of
  // A^T's storage [K, M]; B is used whole by every thread.
  const int lda = static_cast<int>(args.trans_a ? m : k);
  const int ldb = static_cast<int>(args.trans_b ? k : n);
  const int ldc = static_cast<int>(n);
  const float beta = args.accumulate ? 1.0f : 0.0f;  // beta = 0: C is overwritten, never read
  const int threads = m * n * k >= (int64_t{1} << 19) ? num_threads() : 1;  // as gemm_blocked

#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    flush_denormals_on_this_thread();
    const int64_t t = omp_get_thread_num(), team = omp_get_num_threads();
    // Static split of the rows: thread t always gets the same rows, so the same bits.
    const int64_t i0 = m * t / team, i1 = m * (t + 1) / team;
    if (i1 > i0) {
      const float* a = args.trans_a ? args.a + i0 : args.a + i0 * k;
      cblas_sgemm(CblasRowMajor, args.trans_a ? CblasTrans : CblasNoTrans,
                  args.trans_b ? CblasTrans : CblasNoTrans, static_cast<int>(i1 - i0),
                  static_cast<int>(n), static_cast<int>(k), 1.0f, a, lda, args.b, ldb, beta,
                  args.c + i0 * n, ldc);
    }
  }
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
