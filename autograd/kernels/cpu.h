// The two things the kernels need from the processor that C++ cannot say portably: the
// floating-point mode that flushes subnormal numbers to zero, and the hint a spinning thread
// gives while it polls. x86-64 and aarch64 each have their own instruction; elsewhere both are
// no-ops, and the library is only slower, never wrong.
#pragma once

#include <cstdint>

namespace gf::kernels {

// While an object of this type lives, the calling thread computes with subnormal floats
// (below ~1.2e-38) flushed to zero, in results and in inputs; the destructor puts back the
// mode it found. Arithmetic on subnormals takes a slow microcode path, ~100x slower in a
// GEMM; in training they appear as weights and gradients decay, and never matter for the
// result. Every kernel that runs on the thread pool computes in this mode, on whichever thread
// (the pool's workers keep it for good), so a result never depends on which thread made it.
// Scoped rather than set once, so that the library never changes the floating-point mode of
// a caller's thread behind its back.
class FlushDenormals {
 public:
  FlushDenormals();
  ~FlushDenormals();
  FlushDenormals(const FlushDenormals&) = delete;
  FlushDenormals& operator=(const FlushDenormals&) = delete;

 private:
  uint64_t saved_;  // the control register as found
  bool changed_;    // false when the mode was already set: nothing to restore
};

// Sets the mode for good on the calling thread (for the pool's own workers).
void flush_denormals_for_good();

// Tells the CPU that the thread is in a polling loop (x86 `pause`, ARM `yield`): the core
// then spends less power and leaves more of itself to a sibling hyper-thread.
inline void cpu_relax() {
#if defined(__x86_64__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace gf::kernels
