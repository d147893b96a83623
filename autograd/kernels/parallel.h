// Threads for the kernels: a small pool of our own, and the one rule that keeps results the
// same on every machine: work is cut into chunks that depend on the size of the problem only,
// never on the number of threads. A thread count decides who computes a chunk, not what it
// computes, so a run gives the same bits with 1, 2, 3 or 16 threads.
//
// Why not OpenMP's parallel regions. A training step of a small model runs a few hundred
// short parallel loops, each a few microseconds of work. Handing one to a sleeping thread
// costs a futex wake-up and a trip through the scheduler, measured at ~40 us per region with
// OMP_WAIT_POLICY=passive: more than the work itself, so two threads ran the copy task slower
// than one. OpenMP's other setting spins without end and steals the core from other programs.
// The pool does what both mean to do: after each job a worker polls for a short while
// (kSpinMicroseconds), so the next job of the same step reaches it in well under a
// microsecond, and then sleeps, so an idle process costs nothing. With more threads than
// cores, only one worker fewer than the cores polls; the others sleep (parallel.cpp says why).
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

namespace gf::kernels {

// Number of threads the kernels use, the calling thread included. The default is the
// OMP_NUM_THREADS environment variable if set (the name every numeric library reads), else
// the number of cores. set_num_threads(0) restores the default; it may be called while other
// threads of the program run kernels (it waits for the pool's current job). Results are the
// same bits for every count.
int num_threads();
void set_num_threads(int threads);
// How many threads can run parts at the same time: num_threads(), but no more than the cores
// the process may run on. A job cut into more parts than this gains nothing, and loses where
// each part repeats some work (each part of a GEMM packs its own panels of B): parallel_for
// and the GEMM cut their work into this many parts. The results do not depend on it.
int concurrent_threads();
#if defined(__EMSCRIPTEN__) && !defined(__EMSCRIPTEN_PTHREADS__)
// A WebAssembly build without threads (a page opened from file:// gets no SharedArrayBuffer):
// every part runs on the calling thread.
inline constexpr int kMaxThreads = 1;
#else
inline constexpr int kMaxThreads = 256;
#endif

// How long an idle worker keeps polling for the next job before it goes to sleep.
inline constexpr int64_t kSpinMicroseconds = 200;

// Runs part(p) for p = 0 .. parts - 1 and returns when all have ended. Every thread, the
// caller included, takes the next part not yet taken, so a part runs on whichever thread gets
// to it first: a worker slow to arrive (its core busy with another program) does not hold the
// caller up, and parts may outnumber threads. If parts throw, every part still runs, and the
// first exception caught is rethrown here. A call from inside a part (nested parallelism), or
// while another thread of the program is using the pool, runs the parts one after another on
// the calling thread. Parts run with subnormals flushed to zero (cpu.h).
inline constexpr int kMaxParts = 4095;
template <typename Part>
void run_parts(int parts, Part&& part);
// True while the calling thread runs a part of run_parts (where a nested call runs inline).
bool in_parallel_part();

// Below this much work (roughly, element operations) even the pool's hand-off costs more
// than it saves; above it, loops are cut into chunks of about kChunkWork, at most kMaxChunks.
inline constexpr int64_t kMinParallelWork = int64_t{1} << 15;
inline constexpr int64_t kChunkWork = int64_t{1} << 12;
inline constexpr int64_t kMaxChunks = 64;
inline bool worth_parallel(int64_t work) {
  return work >= kMinParallelWork;
}

// How many chunks parallel_for cuts [0, n) into: a function of n and the cost alone.
inline int64_t chunk_count(int64_t n, int64_t cost_per_item) {
  if (n <= 0) return 0;
  const int64_t work = n * std::max<int64_t>(cost_per_item, 1);
  if (!worth_parallel(work)) return 1;
  return std::clamp<int64_t>(work / kChunkWork, 1, std::min(n, kMaxChunks));
}

// Calls body(begin, end) on contiguous, disjoint chunks covering [0, n), in sizes that differ
// by at most one, as chunk_count says. The chunks are the same for every thread count, so a
// body may even keep a partial result per chunk, as long as the caller combines them in chunk
// order.
//
// The chunks are handed out in one contiguous run per thread (part p of T takes chunks
// p C / T to (p + 1) C / T), not one by one: then thread 0 works on the start of every tensor
// in op after op and thread 1 on the end, each on data already in its own core's cache. Taken
// one at a time, the chunks went to whichever thread came first, and a 2-thread step of the
// small copy model ran 20% slower (bench/copy, copy-tiny: 11.4 against 9.5 ms per step).
template <typename Body>
void parallel_for(int64_t n, int64_t cost_per_item, Body&& body) {
  const int64_t chunks = chunk_count(n, cost_per_item);
  if (chunks == 0) return;
  const int64_t parts = std::min<int64_t>(chunks, concurrent_threads());
  run_parts(static_cast<int>(parts), [&](int p) {
    for (int64_t c = chunks * p / parts; c < chunks * (p + 1) / parts; ++c)
      body(n * c / chunks, n * (c + 1) / chunks);
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
