// The two limits of this machine that bound every kernel, measured by the program that asks:
// how fast its cores can multiply and add (the peak, in GFLOP/s) and how fast they can read
// memory (the bandwidth, in GB/s). Work that does many operations per byte it reads, like a
// large matrix product, can at best run at the peak; work that reads each byte once for an
// operation or two, like decoding one token with a large model, can at best run at the
// bandwidth. The smaller of the two bounds for a piece of work is its "roofline" (Williams,
// Waterman and Patterson, 2009); bench/ reports each workload's time as a fraction of it.
//
// Both are measured, not looked up: a CPU's datasheet says nothing of the clock it holds under
// load, of a virtual machine's share, or of the memory channels populated. Both are maxima,
// so each is the best of many short trials: on a shared machine a short trial has the best
// chance of finding the cores free.
#pragma once

#include <cstdint>

#include "autograd/kernels/simd.h"

namespace gf::kernels {

// The independent chains of multiply-adds fma_gflops keeps in flight: as many as fit in half
// the vector registers, with two more for its constants.
inline constexpr int kChains = kVectorRegisters == 32 ? 16 : 12;

// GFLOP/s of `threads` parts of `iterations` rounds of multiply-adds on registers alone (one
// trial; run_parts runs the parts, so at most the pool's threads run at once).
double fma_gflops(int threads, int64_t iterations);

// The best of `trials` short trials of fma_gflops: the peak of `threads` cores.
double peak_gflops(int threads, int trials = 40);

// GB/s of `threads` parts reading `count` floats at `data` once (one trial).
double read_gbs(int threads, const float* data, int64_t count);

// The buffer read_bandwidth_gbs reads: 8 times the last-level cache of a desktop CPU or of
// one die of a server CPU (32 MiB), so that the reads come from memory, not from a cache.
inline constexpr int64_t kBandwidthBytes = int64_t{256} << 20;

// The best of `trials` reads of a buffer of kBandwidthBytes by `threads` threads: the memory
// bandwidth the cores can use. Allocates the buffer for the measurement and frees it.
double read_bandwidth_gbs(int threads, int trials = 5);

}  // namespace gf::kernels
