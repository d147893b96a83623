// Flush-to-zero on each processor family (cpu.h says why the kernels want it).
//
//   x86-64   MXCSR bit 15 (FTZ) flushes subnormal results to zero; bit 6 (DAZ) reads
//            subnormal inputs as zero. SSE and AVX arithmetic both obey MXCSR.
//   aarch64  FPCR bit 24 (FZ) does both for the scalar and NEON arithmetic.
#include "autograd/kernels/cpu.h"

#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

namespace gf::kernels {
namespace {

#if defined(__x86_64__)
constexpr uint64_t kFlushBits = 0x8040u;
uint64_t read_mode() {
  return _mm_getcsr();
}
void write_mode(uint64_t mode) {
  _mm_setcsr(static_cast<unsigned>(mode));
}
#elif defined(__aarch64__)
constexpr uint64_t kFlushBits = uint64_t{1} << 24;
uint64_t read_mode() {
  uint64_t fpcr;
  asm volatile("mrs %0, fpcr" : "=r"(fpcr));
  return fpcr;
}
void write_mode(uint64_t mode) {
  asm volatile("msr fpcr, %0" : : "r"(mode));
}
#else
constexpr uint64_t kFlushBits = 0;  // no known mode: subnormals are computed, slowly
uint64_t read_mode() {
  return 0;
}
void write_mode(uint64_t) {}
#endif

}  // namespace

FlushDenormals::FlushDenormals()
    : saved_(read_mode()), changed_((saved_ & kFlushBits) != kFlushBits) {
  if (changed_) write_mode(saved_ | kFlushBits);
}

FlushDenormals::~FlushDenormals() {
  if (changed_) write_mode(saved_);
}

void flush_denormals_for_good() {
  write_mode(read_mode() | kFlushBits);
}

}  // namespace gf::kernels
