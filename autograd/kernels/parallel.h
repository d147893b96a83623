// Threads for the kernels: a small pool with static splits, so that the same thread count
// gives the same division of work, and so the same bits, on every run.
//
// Why not OpenMP's parallel regions. A training step of a small model runs a few hundred
// short parallel loops, each a few microseconds of work. Handing one to a sleeping thread
// costs a futex wake-up and a trip through the scheduler, measured here at ~40 us per
// region with OMP_WAIT_POLICY=passive: more than the work itself, so two threads ran the copy
// task slower than one. OpenMP's other setting spins without end and steals the core from
// other programs. The pool below does what both mean to do: after each job a worker spins for
// a short while (kSpinMicroseconds), so the next job of the same step reaches it in well
// under a microsecond, and then sleeps, so an idle process costs nothing.
#pragma once

#include <cstdint>
#include <type_traits>

namespace gf::kernels {

// Sets flush-to-zero and denormals-are-zero on the calling thread. Arithmetic on subnormal
// floats (below ~1.2e-38) takes a slow microcode path, ~100x slower in a GEMM; in training
// they appear as weights and gradients decay, and they never matter for the result. Every
// thread that computes calls this; after the first call on a thread it costs one branch.
void flush_denormals_on_this_thread();

// Number of threads the kernels use, the calling thread included. The default is the
// OMP_NUM_THREADS environment variable if set (the name every numeric library reads), else
// the number of cores. set_num_threads(0) restores the default. Results are bit-identical
// run after run for a given count; they may differ in the last bits between counts.
int num_threads();
void set_num_threads(int threads);

// How long an idle worker keeps polling for the next job before it goes to sleep.
inline constexpr int64_t kSpinMicroseconds = 200;

// Runs part(p) for p = 0 .. parts - 1 and returns when all are done; parts <= num_threads().
// The calling thread and the workers each take the next part not yet taken, so a part runs
// on whichever thread gets to it first: a worker that is slow to arrive (its core busy with
// another program) does not hold the caller up. What a part computes never depends on which
// thread runs it, so the bits do not either. A call from inside a part (nested parallelism),
// or while another thread of the program is using the pool, runs the parts one after another
// on the calling thread.
template <typename Part>
void run_parts(int parts, Part&& part);

// Below this much work (roughly, element operations) even the pool's hand-off costs more
// than it saves.
inline constexpr int64_t kMinParallelWork = int64_t{1} << 15;
inline bool worth_parallel(int64_t work) {
  return work >= kMinParallelWork;
}

// Calls body(begin, end) on contiguous, disjoint chunks covering [0, n): one chunk per thread,
// split evenly and in order, or a single chunk on this thread when n * cost_per_item is small.
template <typename Body>
void parallel_for(int64_t n, int64_t cost_per_item, Body&& body) {
  const int threads = num_threads();
  if (n * cost_per_item < kMinParallelWork || threads == 1 || n < 2) {
    flush_denormals_on_this_thread();
    body(int64_t{0}, n);
    return;
  }
  const int parts = static_cast<int>(n < threads ? n : threads);
  run_parts(parts, [&](int t) {
    const int64_t begin = n * t / parts, end = n * (t + 1) / parts;
    body(begin, end);
  });
}

// ---- implementation of run_parts ----------------------------------------------------------

namespace detail {
// A type-erased reference to the caller's callable: no allocation, unlike std::function.
struct PartRef {
  void (*call)(void* callable, int part);
  void* callable;
};
void run_parts(int parts, PartRef part);
}  // namespace detail

template <typename Part>
void run_parts(int parts, Part&& part) {
  using Callable = std::remove_reference_t<Part>;
  detail::run_parts(parts, {[](void* callable, int p) { (*static_cast<Callable*>(callable))(p); },
                            const_cast<void*>(static_cast<const void*>(&part))});
}

}  // namespace gf::kernels
