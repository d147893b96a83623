// The vector registers of the CPU we compile for, named with GCC's vector extension (clang has
// it too): arithmetic on a Vec is element-wise, and a float operand is broadcast to all lanes.
// The compiler maps a Vec of the register's width onto one register, with no intrinsics, so
// the same source builds for x86-64 and for 64-bit ARM. The GEMM kernel sizes its register
// tile from these numbers; lesson 11 measures the machine's peak with them.
//
// Which registers the compiler may use is decided at compile time: with -march=native
// (GRADFORMER_NATIVE, the default) the widest this machine has; without it, what every CPU of
// the architecture has (SSE2 on x86-64, NEON on ARM). WebAssembly has one width, 128 bits,
// and no fused multiply-add.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

namespace gf::kernels {

#if defined(__AVX512F__)
inline constexpr int64_t kLanes = 16, kVectorRegisters = 32;  // zmm0-31
inline constexpr const char* kVectorUnit = "AVX-512";
#elif defined(__AVX__)
inline constexpr int64_t kLanes = 8, kVectorRegisters = 16;  // ymm0-15
#if defined(__AVX2__)
inline constexpr const char* kVectorUnit = "AVX2";
#else
inline constexpr const char* kVectorUnit = "AVX";
#endif
#elif defined(__ARM_NEON)
inline constexpr int64_t kLanes = 4, kVectorRegisters = 32;  // v0-31, 128 bits each
inline constexpr const char* kVectorUnit = "NEON";
#elif defined(__wasm_simd128__)
// WebAssembly's 128-bit SIMD (-msimd128): the browser maps it onto the CPU's SSE or NEON
// registers, so 16 is what every x86-64 has.
inline constexpr int64_t kLanes = 4, kVectorRegisters = 16;
inline constexpr const char* kVectorUnit = "WebAssembly SIMD";
#elif defined(__SSE2__)
inline constexpr int64_t kLanes = 4, kVectorRegisters = 16;  // xmm0-15: every x86-64 has them
inline constexpr const char* kVectorUnit = "SSE2";
#else
// No vector unit the compiler knows of: it splits each Vec into scalar floats.
inline constexpr int64_t kLanes = 4, kVectorRegisters = 16;
inline constexpr const char* kVectorUnit = "no vector unit";
#endif

// Whether `acc + a * b` compiles to one fused multiply-add (one rounding) or to a multiply and
// an add. Every 64-bit ARM CPU has FMA; on x86-64 it came with AVX2 (Haswell, 2013), so a
// build without -march=native has none.
#if defined(__FMA__) || defined(__ARM_FEATURE_FMA)
inline constexpr bool kFusedMultiplyAdd = true;
#else
inline constexpr bool kFusedMultiplyAdd = false;
#endif

using Vec = float __attribute__((vector_size(kLanes * sizeof(float))));
// The same register loaded from any float address: aligned like a float, and allowed to
// alias floats.
using UnalignedVec =
    float __attribute__((vector_size(kLanes * sizeof(float)), aligned(4), may_alias));

// Transposes a square block of kLanes x kLanes floats held as kLanes registers, rows[i] being
// row i: afterwards rows[i] holds column i. The transpose swaps the bits of a row index with
// those of a column index, one bit per level: the level of bit H swaps, within every block of
// 2H x 2H, the top right H x H block with the bottom left one, by pairing rows i and i + H and
// exchanging their lanes with bit H set against those without. Each level is kLanes shuffles
// of two registers; 4 levels for 16 lanes, against 256 scalar moves.
namespace detail {
// One level: lanes of top with bit H set trade places with the lanes of bottom without it.
template <int64_t H, size_t... L>
void swap_off_diagonal(Vec& top, Vec& bottom, std::index_sequence<L...>) {
  constexpr auto n = static_cast<size_t>(kLanes), h = static_cast<size_t>(H);
  const Vec t = top, b = bottom;  // a shuffle's index n + l names lane l of its second operand
  top = __builtin_shufflevector(t, b, ((L & h) == 0 ? L : n + L - h)...);
  bottom = __builtin_shufflevector(t, b, ((L & h) == 0 ? L + h : n + L)...);
}
}  // namespace detail

template <int64_t H = kLanes / 2>
inline void transpose(Vec (&rows)[kLanes]) {
  constexpr auto lanes = std::make_index_sequence<static_cast<size_t>(kLanes)>{};
  for (int64_t i = 0; i < kLanes; ++i)
    if ((i & H) == 0) detail::swap_off_diagonal<H>(rows[i], rows[i + H], lanes);
  if constexpr (H > 1) transpose<H / 2>(rows);
}

}  // namespace gf::kernels
