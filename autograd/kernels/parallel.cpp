#include "autograd/kernels/parallel.h"

#include <xmmintrin.h>

namespace gf::kernels {

void flush_denormals_on_this_thread() {
  thread_local bool done = false;
  if (done) return;
  // MXCSR bit 15 (FTZ) flushes subnormal results to zero; bit 6 (DAZ) reads subnormal
  // inputs as zero.
  _mm_setcsr(_mm_getcsr() | 0x8040u);
  done = true;
}

int num_threads() {
  return omp_get_max_threads();
}

}  // namespace gf::kernels
