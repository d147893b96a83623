// Threads for the kernels: OpenMP with static splits, so that the same thread count gives
// the same division of work, and so the same bits, on every run.
#pragma once

#include <omp.h>

#include <cstdint>

namespace gf::kernels {

// Sets flush-to-zero and denormals-are-zero on the calling thread. Arithmetic on subnormal
// floats (below ~1.2e-38) takes a slow microcode path, ~100x slower in a GEMM; in training
// they appear as weights and gradients decay, and they never matter for the result. Every
// thread that computes calls this; after the first call on a thread it costs one branch.
void flush_denormals_on_this_thread();

// Number of threads the kernels use (OpenMP's, normally the core count).
int num_threads();

// Below this much work (roughly, element operations) waking the other threads costs more
// than it saves: toy models run almost entirely below it.
inline constexpr int64_t kMinParallelWork = int64_t{1} << 15;
inline bool worth_parallel(int64_t work) {
  return work >= kMinParallelWork;
}

// Calls body(begin, end) on contiguous, disjoint chunks covering [0, n): one chunk per thread,
// split evenly and in order, or a single chunk on this thread when n * cost_per_item is small.
template <typename Body>
void parallel_for(int64_t n, int64_t cost_per_item, Body&& body) {
  if (n * cost_per_item < kMinParallelWork || num_threads() == 1) {
    flush_denormals_on_this_thread();
    body(int64_t{0}, n);
    return;
  }
#pragma omp parallel
  {
    flush_denormals_on_this_thread();
    const int64_t t = omp_get_thread_num(), threads = omp_get_num_threads();
    const int64_t begin = n * t / threads, end = n * (t + 1) / threads;
    if (begin < end) body(begin, end);
  }
}

}  // namespace gf::kernels
