// Where tensor data lives: float buffers that are recycled instead of returned to the system.
//
// A training step allocates the same few hundred buffers, of the same sizes, every step, and
// frees them all when the step's graph goes. Handing each one back to malloc is not free: the
// large ones are mapped fresh from the kernel every time (glibc serves allocations above
// 128 KB with mmap), and the first touch of every page then costs a page fault. Measured on the
// copy task with one thread, before this pool: 600k page faults in 200 steps, and 30% of the
// run's time spent in the kernel. So a freed buffer goes onto a free list for its size, and
// the next allocation takes the smallest cached buffer that holds it, if that is at most twice
// the size it asked for: after the first step, a step allocates nothing new. (Exact sizes
// alone would never hand the activations that backward frees to the parameters' gradients,
// whose shapes differ, and the peak would grow by the model's size.)
//
// The pool never shrinks below what the busiest step needed; it caps what it holds
// (kMaxCachedBytes) so that a one-off giant tensor does not stay cached forever. Under
// AddressSanitizer the pool is off, so that a use after free is still caught.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace gf {

// A buffer of at least count floats, 64-byte aligned, uninitialised; its deleter gives it
// back to the pool. count >= 0 (0 gives a valid, empty buffer).
std::shared_ptr<float[]> allocate_floats(int64_t count);

// What the pool holds and has done, for tests and the speed lesson.
struct StoragePoolStats {
  int64_t cached_bytes = 0;  // in free lists now
  int64_t reused = 0;        // allocations served from a free list
  int64_t fresh = 0;         // allocations that went to the system
};
StoragePoolStats storage_pool_stats();

// Turns recycling off (every buffer then comes from, and goes back to, the system, as the
// plain version does) or on; returns the previous setting. Results are the same either way:
// a kernel writes every element of its output before reading it.
bool set_storage_pool_enabled(bool enabled);

}  // namespace gf
