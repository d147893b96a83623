// Cache-blocked GEMM, C[M, N] (+)= op(A)[M, K] op(B)[K, N], at close to the CPU's peak in
// portable C++ (no intrinsics, but for the opt-in bfloat16 micro-kernel near the end of the
// packed path). The scheme is the one BLIS and OpenBLAS use (Goto and van de
// Geijn, "Anatomy of High-Performance Matrix Multiplication", ACM TOMS 34(3), 2008): copy
// ("pack") blocks of A and B into the order the innermost loop reads them, and size each block
// for one level of the memory hierarchy. gemm_naive.cpp is the definition it is tested against.
//
// Why block at all. gemm_naive loads two floats per multiply-add, and most of those loads miss
// the caches. One core here does 2 vector FMAs per cycle, 32 multiply-adds on 16-float AVX-512
// vectors, yet reads far fewer floats per cycle from L2, and fewer still from memory. The way
// out is reuse: each float brought into a fast level is used many times before it leaves.
// From the inside out, with this machine's sizes (AMD Zen 5: 32 vector registers of 16
// floats, 48 KiB L1d and 1 MiB L2 per core):
//
//   registers  micro_kernel keeps an MR x NR = 8 x 32 tile of C in 16 vector registers for a
//              whole block of K. Each step in k loads 32 floats of B (2 vectors) and 8 of A
//              (broadcast one at a time) and does 16 FMAs: 512 multiply-adds for 40 loads.
//              The 16 independent sums also hide the FMA latency (4 cycles x 2 units means 8
//              FMAs must be in flight). MR = 8 divides the row counts the models use.
//              (A CPU with 16 registers of 8 floats, AVX2, gets a 6 x 16 tile instead, and
//              64-bit ARM, 32 registers of 4 floats, an 8 x 8 tile: see MR and NR below.)
//   L1         the B sliver, KC x NR = 256 x 32 floats = 32 KiB, stays in L1 while the
//              micro-kernel walks down the MC rows of the A block (the i loop is innermost);
//              the A sliver, 8 x 256 floats = 8 KiB, streams through beside it.
//   L2         the A block, MC x KC = 128 x 256 floats = 128 KiB, and the B panel, KC x NC =
//              256 x 512 floats = 512 KiB, fit in L2 together: the A block serves all NC / NR
//              = 16 slivers of the panel, and the panel serves every row block of the thread.
//   memory     each block of C is read and written once per block of K, i.e. K / KC times.
//
// Packing stores a block sliver after sliver, each one k-major, whatever the trans flags were,
// so the micro-kernel reads both operands with unit stride. It pads edge slivers with zeros:
// the micro-kernel always computes a full tile and only its final store checks the bounds.
// Packing copies MC KC + KC NC floats for every MC NC KC multiply-adds, about 1%.
//
// Threads. C is cut into one part per thread that can run at once, along its rows (along its
// columns when C is wide), in whole slivers; each part packs its own blocks. K is never
// split, and the arithmetic for an element of C does not depend on where its tile lies, so the
// result is bit-identical for any thread count. Below 2^19 multiply-adds (about 6 us on one
// core) the calling thread works alone: waking the other thread would cost more than it saves.
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <new>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "autograd/kernels/gemm.h"
#include "autograd/kernels/parallel.h"
#include "autograd/kernels/simd.h"

namespace gf::kernels {
namespace {

// The C tile is MR rows of NV registers (kernels/simd.h says how wide and how many). With 32
// registers (AVX-512, NEON): 8 x 2 = 16 accumulators, leaving half the registers for the rows
// of B and the broadcasts of A; with 16 (AVX2, SSE2): 6 x 2 = 12, leaving 2 for B and 1 for A.
// The tile is 8 x 32 floats with AVX-512, 6 x 16 with AVX2, 8 x 8 with NEON, 6 x 8 with SSE2.
// NEON's 16 accumulators are as many FMAs as its fastest cores keep in flight (4 units x 4
// cycles on Apple's M1), and its NR = 8 divides d_model and d_ff. WebAssembly gets 4 x 2: the
// browser keeps one of the 16 registers for itself and, with no fused multiply-add, every
// product needs a register until it is added, so 6 x 2 spills (4 x 2 trained the copy task
// 20% faster under Node; 5 x 2, 3 x 3 and 2 x 4 were no faster).
constexpr int64_t NV = 2;
#if defined(__wasm_simd128__)
constexpr int64_t MR = 4;
#else
constexpr int64_t MR = kVectorRegisters == 32 ? 8 : 6;
#endif
constexpr int64_t NR = NV * kLanes;  // 32 floats with AVX-512
constexpr int64_t KC = 256;  // depth of a block: a B sliver (KC x NR) fills 2/3 of L1 (AVX-512)
constexpr int64_t MC = 128 / MR * MR;  // rows of an A block (MC x KC), kept in L2
constexpr int64_t NC = 512 / NR * NR;  // columns of a B panel (KC x NC), in L2 beside it
static_assert(MC % MR == 0 && NC % NR == 0, "a block is made of whole slivers");
constexpr int64_t kParallelWork = int64_t{1} << 19;  // multiply-adds worth a second thread

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// Grow-only, 64-byte aligned (a cache line, an AVX-512 vector) scratch memory for packing.
// One per thread and reused from call to call, so small products pay no allocation or page
// faults; freed when its thread ends.
class PackBuffer {
 public:
  PackBuffer() = default;
  PackBuffer(const PackBuffer&) = delete;
  PackBuffer& operator=(const PackBuffer&) = delete;
  ~PackBuffer() { release(); }

  float* get(int64_t count) {
    const auto needed = static_cast<size_t>(count);
    if (needed > capacity_) {
      release();
      data_ = static_cast<float*>(::operator new (needed * sizeof(float), std::align_val_t{64}));
      capacity_ = needed;
    }
    return data_;
  }

 private:
  void release() {
    ::operator delete (data_, std::align_val_t{64});
    data_ = nullptr;
    capacity_ = 0;
  }

  float* data_ = nullptr;
  size_t capacity_ = 0;
};

// A matrix seen through strides: element (r, c) is data[r * row_stride + c * col_stride].
// This is how the transposes are absorbed: op(A) is a View of A, op(B)^T a View of B.
struct View {
  const float* data;
  int64_t row_stride, col_stride;
};

// Stores the first `lanes` floats of v at dst, or adds them to what dst holds. With AVX-512
// a mask keeps the other lanes out of memory, so a ragged edge (11 keys of a 16-lane
// register) takes one store, not 11; elsewhere a whole register is stored at once and a
// ragged one a float at a time. Either way each float is the same sum.
inline void store_lanes(float* dst, const Vec& v, int64_t lanes, bool add) {
#if defined(__AVX512F__)
  const auto mask = static_cast<__mmask16>((1u << lanes) - 1);
  const __m512 sum = add ? _mm512_add_ps(_mm512_maskz_loadu_ps(mask, dst), v) : __m512(v);
  _mm512_mask_storeu_ps(dst, mask, sum);
#else
  if (lanes == kLanes) {
    auto* whole = reinterpret_cast<UnalignedVec*>(dst);
    *whole = add ? *whole + v : v;
    return;
  }
  for (int64_t l = 0; l < lanes; ++l) dst[l] = add ? dst[l] + v[l] : v[l];
#endif
}

// Copies rows [0, rows) x columns [0, cols / kLanes * kLanes) of src (element (r, c) at
// src[r * row_stride + c]) transposed, to dst[c * dst_rows + r], with zeros for the rows from
// `rows` to dst_rows (dst_rows >= rows: the padding of a sliver, or of a row of vectors):
// square blocks of kLanes x kLanes are loaded a row to a register (zeros past `rows`),
// transposed in registers (simd.h) and stored a column to a register, or to its first
// dst_rows lanes when a column is shorter (a sliver of 8 rows with 16 lanes). Copied a float
// at a time, this transpose took most of the time of a 16-row product with a Linear's weight,
// whose [out, in] rows are the columns of op(B), and much of a small model's training step
// went to packing the 8-row slivers of op(A) that way. Returns the columns it copied.
int64_t copy_transposed(const float* src, int64_t row_stride, int64_t rows, int64_t cols,
                        float* dst, int64_t dst_rows) {
  int64_t c = 0;
  for (; c + kLanes <= cols; c += kLanes)
    for (int64_t r0 = 0; r0 < dst_rows; r0 += kLanes) {
      Vec block[kLanes] = {};
      for (int64_t i = 0; i < std::min(kLanes, rows - r0); ++i)
        block[i] = *reinterpret_cast<const UnalignedVec*>(src + (r0 + i) * row_stride + c);
      transpose(block);
      const int64_t lanes = std::min(kLanes, dst_rows - r0);
      for (int64_t i = 0; i < kLanes; ++i)
        store_lanes(dst + (c + i) * dst_rows + r0, block[i], lanes, false);
    }
  return c;
}

// Packs rows [r0, r1) x columns [c0, c1) of v as slivers of W rows: sliver s holds rows
// r0 + s W ... r0 + s W + W - 1, stored column after column (dst[c W + r]), zero past r1.
// For op(A) the rows are M and the columns K; for op(B)^T the rows are N and the columns K.
template <int64_t W>
void pack_slivers(const View& v, int64_t r0, int64_t r1, int64_t c0, int64_t c1, float* dst) {
  const int64_t cols = c1 - c0;
  for (int64_t s0 = r0; s0 < r1; s0 += W, dst += cols * W) {
    const int64_t rows = std::min(W, r1 - s0);
    const float* src = v.data + s0 * v.row_stride + c0 * v.col_stride;
    // Loop so that the source is read along its contiguous direction.
    if (v.row_stride == 1) {
      for (int64_t c = 0; c < cols; ++c) {
        for (int64_t r = 0; r < rows; ++r) dst[c * W + r] = src[c * v.col_stride + r];
        for (int64_t r = rows; r < W; ++r) dst[c * W + r] = 0.0f;
      }
    } else {
      int64_t done = 0;  // columns packed by whole blocks, zeros included
      if (v.col_stride == 1) done = copy_transposed(src, v.row_stride, rows, cols, dst, W);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = done; c < cols; ++c)
          dst[c * W + r] = src[r * v.row_stride + c * v.col_stride];
      for (int64_t r = rows; r < W; ++r)
        for (int64_t c = done; c < cols; ++c) dst[c * W + r] = 0.0f;
    }
  }
}

// Stores an MR x NR tile of sums into C[0:mr, 0:nr], adding to what C holds when add is set.
inline void store_tile(const Vec (&acc)[MR][NV], float* __restrict c, int64_t ldc, int64_t mr,
                       int64_t nr, bool add) {
  for (int64_t i = 0; i < mr; ++i)  // an edge tile stores only the part inside C
    for (int64_t v = 0; v < NV && v * kLanes < nr; ++v)
      store_lanes(c + i * ldc + v * kLanes, acc[i][v], std::min(kLanes, nr - v * kLanes), add);
}

// C[0:mr, 0:nr] (+)= a b for one packed A sliver a [kc x MR] and B sliver b [kc x NR].
// acc is MR x NV registers, updated kc times and stored once. The loops over i and v have
// compile-time trip counts; GCC unrolls them fully (the pragmas make sure of it at -O2 too),
// so acc never touches memory: each step in k is NV loads of B, MR broadcasts of A and
// MR x NV fused multiply-adds (check with objdump -d: vbroadcastss, vfmadd231ps on x86-64;
// fmla on ARM).
//
// Why Vec and not loops over floats for the compiler to vectorise: that version matches this
// one with AVX-512 at -O3, but it is fragile. With AVX2, GCC unrolls the 16-float j loop
// before it vectorises and the kernel drops from ~120 to 6 GFLOP/s; at -O2 acc stays in
// memory. Writing the registers down as Vec leaves the compiler nothing to guess.
inline void micro_kernel(int64_t kc, const float* __restrict a, const float* __restrict b,
                         float* __restrict c, int64_t ldc, int64_t mr, int64_t nr, bool add) {
  Vec acc[MR][NV] = {};
  for (int64_t p = 0; p < kc; ++p, a += MR, b += NR) {
    Vec b_row[NV];
    for (int64_t v = 0; v < NV; ++v)
      b_row[v] = *reinterpret_cast<const UnalignedVec*>(b + v * kLanes);
#pragma GCC unroll 16
    for (int64_t i = 0; i < MR; ++i)
#pragma GCC unroll 4
      for (int64_t v = 0; v < NV; ++v) acc[i][v] += a[i] * b_row[v];
  }
  store_tile(acc, c, ldc, mr, nr, add);
}

// The float32 arithmetic of the packed path: slivers of floats, one step in k a float.
struct Float32Tiles {
  using Packed = float;
  static int64_t steps(int64_t kc) { return kc; }
  template <int64_t W>
  static void pack(const View& v, int64_t r0, int64_t r1, int64_t c0, int64_t c1, float* dst) {
    pack_slivers<W>(v, r0, r1, c0, c1, dst);
  }
  static void multiply(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                       int64_t mr, int64_t nr, bool add) {
    micro_kernel(kc, a, b, c, ldc, mr, nr, add);
  }
};

#if defined(__AVX512BF16__) && defined(__AVX512F__)
// ---- bfloat16 products (opt-in, gemm.h) -----------------------------------------------------
//
// bfloat16 is a float32 with the low 16 bits of its mantissa dropped: the same exponent range,
// 8 significant bits instead of 24. AVX512-BF16's vdpbf16ps multiplies 32 pairs of bfloat16
// in a 512-bit register by 32 others and adds each two neighbouring products, one after the
// other, into one of the 16 float32 sums of a third register: 32 multiply-adds an instruction
// where vfmadd231ps does 16. The product of two bfloat16 is exact in float32, so only the
// rounding of the operands and of the sums is lost (and subnormal numbers, which the
// instruction treats as 0). Written with intrinsics because GCC's vector extension has no
// spelling for the pairwise dot product.
//
// The packed slivers hold pairs: one 32-bit word per row and pair of steps in k, row r's
// elements k = 2q (low half) and 2q + 1 (high half), so a broadcast of A's word meets B's
// words of the same two steps. An odd last step is paired with zero.

// As pack_slivers, each sliver first as floats [kc x W], then rounded and paired into words
// [ceil(kc / 2) x W].
template <int64_t W>
void pack_pairs(const View& v, int64_t r0, int64_t r1, int64_t c0, int64_t c1, uint32_t* dst) {
  thread_local PackBuffer sliver_buffer;
  const int64_t kc = c1 - c0, pairs = ceil_div(kc, 2);
  float* floats = sliver_buffer.get(kc * W);
  for (int64_t s0 = r0; s0 < r1; s0 += W, dst += pairs * W) {
    pack_slivers<W>(v, s0, std::min(s0 + W, r1), c0, c1, floats);
    for (int64_t q = 0; q < pairs; ++q)
      for (int64_t r = 0; r < W; ++r) {
        const uint32_t low = bfloat16_bits(floats[2 * q * W + r]);
        const uint32_t high = 2 * q + 1 < kc ? bfloat16_bits(floats[(2 * q + 1) * W + r]) : 0;
        dst[q * W + r] = low | high << 16;
      }
  }
}

// micro_kernel's tile, two steps in k an instruction.
// [snippet: bf16-kernel]
inline void micro_kernel_bf16(int64_t pairs, const uint32_t* __restrict a,
                              const uint32_t* __restrict b, float* __restrict c, int64_t ldc,
                              int64_t mr, int64_t nr, bool add) {
  static_assert(kLanes == 16 && NV == 2, "the tile is 8 x 32 floats of AVX-512");
  __m512 acc[MR][NV];
  for (int64_t i = 0; i < MR; ++i)
    for (int64_t v = 0; v < NV; ++v) acc[i][v] = _mm512_setzero_ps();
  for (int64_t q = 0; q < pairs; ++q, a += MR, b += NR) {
    __m512bh b_row[NV];
    for (int64_t v = 0; v < NV; ++v)
      b_row[v] = std::bit_cast<__m512bh>(_mm512_loadu_si512(b + v * kLanes));
#pragma GCC unroll 16
    for (int64_t i = 0; i < MR; ++i) {
      const auto a_pair = std::bit_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(a[i])));
#pragma GCC unroll 4
      for (int64_t v = 0; v < NV; ++v) acc[i][v] = _mm512_dpbf16_ps(acc[i][v], a_pair, b_row[v]);
    }
  }
  Vec sums[MR][NV];
  for (int64_t i = 0; i < MR; ++i)
    for (int64_t v = 0; v < NV; ++v) sums[i][v] = std::bit_cast<Vec>(acc[i][v]);
  store_tile(sums, c, ldc, mr, nr, add);
}
// [/snippet]

// The bfloat16 arithmetic of the packed path: slivers of pairs, two steps in k a word.
struct BFloat16Tiles {
  using Packed = uint32_t;
  static int64_t steps(int64_t kc) { return ceil_div(kc, 2); }
  template <int64_t W>
  static void pack(const View& v, int64_t r0, int64_t r1, int64_t c0, int64_t c1, uint32_t* dst) {
    pack_pairs<W>(v, r0, r1, c0, c1, dst);
  }
  static void multiply(int64_t kc, const uint32_t* a, const uint32_t* b, float* c, int64_t ldc,
                       int64_t mr, int64_t nr, bool add) {
    micro_kernel_bf16(steps(kc), a, b, c, ldc, mr, nr, add);
  }
};
#endif

// A rectangle of C: rows [i0, i1), columns [j0, j1).
struct Region {
  int64_t i0, i1, j0, j1;
};

// One thread's part of C, with the loops of the scheme above, outermost first:
// B panels (NC columns), blocks of K (KC), A blocks (MC rows), B slivers (NR), A slivers (MR).
// Tiles is the arithmetic: Float32Tiles, or BFloat16Tiles when products are opted into
// bfloat16.
template <typename Tiles>
void compute_region(const GemmArgs& args, const View& op_a, const View& op_b_t, int64_t ldc,
                    int64_t k_blocks, const Region& region) {
  using Packed = typename Tiles::Packed;
  static_assert(sizeof(Packed) == sizeof(float), "a packed step is a float's size");
  thread_local PackBuffer a_buffer, b_buffer;
  const int64_t max_kc = ceil_div(args.k, k_blocks);
  // Sized for the largest block this region needs, padded to whole slivers.
  const int64_t a_rows = ceil_div(std::min(MC, region.i1 - region.i0), MR) * MR;
  const int64_t b_cols = ceil_div(std::min(NC, region.j1 - region.j0), NR) * NR;
  auto* a_pack = reinterpret_cast<Packed*>(a_buffer.get(a_rows * max_kc));
  auto* b_pack = reinterpret_cast<Packed*>(b_buffer.get(b_cols * max_kc));

  for (int64_t jc = region.j0; jc < region.j1; jc += NC) {
    const int64_t jc_end = std::min(jc + NC, region.j1);
    for (int64_t kb = 0; kb < k_blocks; ++kb) {
      // Equal blocks of K (640 = 214 + 213 + 213, not 256 + 256 + 128), fixed by K alone.
      const int64_t p0 = args.k * kb / k_blocks, p1 = args.k * (kb + 1) / k_blocks;
      const int64_t kc = p1 - p0, steps = Tiles::steps(kc);
      const bool add = args.accumulate || kb > 0;  // later blocks of K add to the partial sum
      Tiles::template pack<NR>(op_b_t, jc, jc_end, p0, p1, b_pack);
      for (int64_t ic = region.i0; ic < region.i1; ic += MC) {
        const int64_t ic_end = std::min(ic + MC, region.i1);
        Tiles::template pack<MR>(op_a, ic, ic_end, p0, p1, a_pack);
        for (int64_t j = jc; j < jc_end; j += NR) {
          const Packed* b_sliver = b_pack + (j - jc) * steps;
          for (int64_t i = ic; i < ic_end; i += MR) {
            const Packed* a_sliver = a_pack + (i - ic) * steps;
            Tiles::multiply(kc, a_sliver, b_sliver, args.c + i * ldc + j, ldc,
                            std::min(MR, ic_end - i), std::min(NR, jc_end - j), add);
          }
        }
      }
    }
  }
}

// ---- Small products, and products with few rows -----------------------------------------
//
// Attention multiplies one head at a time: [10, 16] x [16, 10] in the copy task. In 8 x 32
// tiles such a product is mostly padding, and packing both operands costs more than the
// arithmetic. Below kSmallWork multiply-adds, op(B) is made rows of whole vectors (copied, as
// it is tiny, or read in place when its rows already are) and op(A) is read in place, a float
// at a time; or, for a query against a head's cached keys, the roles swap (gemm_small).
//
// Decoding with the key/value cache has the opposite shape: one new position per sentence,
// so 16 rows of x against a 512 x 512 weight W, or the 8000 x 512 generator. A Linear stores
// W as [out, in], so op(B) = W^T, and packing its panels transposes all of W to use each
// sliver twice: 16 x 512 x 512 ran at 40 GFLOP/s on one core with a float-at-a-time
// transpose, 66 with copy_transposed's. Instead C^T = op(B)^T op(A)^T = W op(A)^T is computed
// the same way as a small product: W's rows are read in place and the few rows of op(A) are
// the ones made vectors, so the weights stream from memory once and nothing is packed (105).
//
// Each element of C is summed in exactly micro_kernel's order: per block of K (the same
// blocks), p ascending, one multiply-add at a time, the blocks added to C in order (a b and
// b a round alike). So in float32 every path gives the same bits, and a row of C does not
// depend on how many rows were multiplied with it (decoding one position with the key/value
// cache gives the numbers the full recomputation gives).
constexpr int64_t kSmallWork = int64_t{1} << 16;
// At most this many rows of C, with B stored transposed, take the transposed product. On one
// core here, [m, 512] x [512, n] with n = 512 and 2048 ran at 105 GFLOP/s against the packed
// path's 66-71 for m = 16, 90-100 against 90-96 for m = 64; at 96 rows the packed path led for
// n = 512. With B not transposed, packing is a plain copy and the packed path was as fast.
constexpr int64_t kFewRows = 2 * NR;
// Rows of op(A) a tile reads at once: with 32 registers, 8 rows x 2 vectors of accumulators
// and the 2 vectors of op(B) leave 14 free; with 16, 4 x 2 and 2.
constexpr int64_t kSmallRows = kVectorRegisters == 32 ? 8 : 4;

// op(B) [k, n] as rows of whole vectors: row p at data + p * stride, its n floats followed by
// zeros up to a whole number of vectors.
struct VecRows {
  const float* data;
  int64_t stride;
};

// op(B) given as the View of its transpose, as VecRows: in place when its rows are contiguous
// and whole vectors (a head's values [t, 64]: nothing to copy), else copied into `buffer`
// with zeros past column n.
VecRows vector_rows(const View& op_b_t, int64_t n, int64_t k, PackBuffer& buffer) {
  if (op_b_t.row_stride == 1 && n % kLanes == 0) return {op_b_t.data, op_b_t.col_stride};
  const int64_t width = ceil_div(n, kLanes) * kLanes;
  float* rows = buffer.get(k * width);
  int64_t done = 0;  // rows copied by whole blocks, zeros included
  if (op_b_t.col_stride == 1)
    done = copy_transposed(op_b_t.data, op_b_t.row_stride, n, k, rows, width);
  for (int64_t p = done; p < k; ++p) {
    float* row = rows + p * width;
    for (int64_t j = 0; j < n; ++j)
      row[j] = op_b_t.data[j * op_b_t.row_stride + p * op_b_t.col_stride];
    std::fill(row + n, row + width, 0.0f);
  }
  return {rows, width};
}

// Rows i0 .. i0 + rows - 1 (rows <= R), vectors v0 .. v0 + V - 1 of C for the block of K
// [p0, p0 + kc): R x V accumulators, R V independent chains so that the FMA latency is hidden.
// Each step in p reads R floats of op(A) once for all V vectors of op(B). A tile of fewer
// than R rows (the last of a head's 11 queries: 8 + 3) still runs R chains, its last row
// read again for the missing ones and not stored: a row on its own would be one chain, which
// waits out each FMA's latency (4 cycles) before the next can start. With 4 lanes
// (WebAssembly) a head's row of 11 keys is 3 vectors; there this path took 15% of the copy
// task's training (node --cpu-prof), and reading A once for two vectors, not once for each,
// made a step about 5% faster.
//
// With Prefetch, op(A)'s rows are contiguous and `next_rows` is where the next R rows start:
// each step asks the cache for one float of them, in the columns this tile reads, so that the
// next tile finds its rows in L2. This is for cached decoding, where op(A) is a Linear's
// weight, read once per token and too large for L2: a tile reads 8 of its rows at 4 bytes a
// step each, a stream too slow for the hardware prefetcher to run ahead of. On an Intel Xeon
// with 2 threads, [16, 512] x [512, 2048] read its weight at 10.4-11.2 GB/s without the hint
// and 13.5-15.3 GB/s with it, in alternating runs. Elsewhere (a head's queries, in L1 already)
// it would only cost.
template <int64_t R, int64_t V, bool Prefetch>
void small_tile(const View& op_a, int64_t i0, int64_t rows, int64_t v0, int64_t p0, int64_t kc,
                const VecRows& op_b, float* c, int64_t ldc, int64_t n, bool add,
                const float* next_rows) {
  static_assert(R > 0 && (R & (R - 1)) == 0, "p & (R - 1) picks the row to prefetch");
  const int64_t col_stride = Prefetch ? 1 : op_a.col_stride;
  const float* a_rows[R];
  for (int64_t r = 0; r < R; ++r)
    a_rows[r] = op_a.data + (i0 + std::min(r, rows - 1)) * op_a.row_stride;
  Vec acc[R][V] = {};
  for (int64_t p = p0; p < p0 + kc; ++p) {
    const float* b = op_b.data + p * op_b.stride + v0 * kLanes;
    Vec b_vecs[V];
    for (int64_t v = 0; v < V; ++v)
      b_vecs[v] = *reinterpret_cast<const UnalignedVec*>(b + v * kLanes);
    if constexpr (Prefetch)
      __builtin_prefetch(next_rows + (p & (R - 1)) * op_a.row_stride + p, 0, 2);
#pragma GCC unroll 8
    for (int64_t r = 0; r < R; ++r) {
      const float a = a_rows[r][p * col_stride];
#pragma GCC unroll 2
      for (int64_t v = 0; v < V; ++v) acc[r][v] += a * b_vecs[v];
    }
  }
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t v = 0; v < V; ++v) {
      const int64_t first = (v0 + v) * kLanes;
      store_lanes(c + (i0 + r) * ldc + first, acc[r][v], std::min(kLanes, n - first), add);
    }
}

// Rows i0 .. i0 + rows - 1 of C (rows <= R), block of K after block, two vectors at a time.
// A row on its own (R = 1) goes four vectors at a time: its 4 chains hide the latency as the
// 8 copies of it in a tile of 8 rows would, with a quarter of the multiply-adds.
// `next_rows`: null, or the next R rows of op(A), contiguous, for small_tile to prefetch.
template <int64_t R, bool Prefetch>
void small_rows(const View& op_a, int64_t i0, int64_t rows, const VecRows& op_b, int64_t n,
                int64_t k, int64_t k_blocks, float* c, int64_t ldc, bool accumulate,
                const float* next_rows) {
  const int64_t vecs = ceil_div(n, kLanes);
  for (int64_t kb = 0; kb < k_blocks; ++kb) {
    const int64_t p0 = k * kb / k_blocks, kc = k * (kb + 1) / k_blocks - p0;
    const bool add = accumulate || kb > 0;  // later blocks of K add to the partial sum
    int64_t v = 0;
    if constexpr (R == 1)
      for (; v + 4 <= vecs; v += 4)
        small_tile<R, 4, Prefetch>(op_a, i0, rows, v, p0, kc, op_b, c, ldc, n, add, next_rows);
    for (; v + 2 <= vecs; v += 2)
      small_tile<R, 2, Prefetch>(op_a, i0, rows, v, p0, kc, op_b, c, ldc, n, add, next_rows);
    if (v < vecs)
      small_tile<R, 1, Prefetch>(op_a, i0, rows, v, p0, kc, op_b, c, ldc, n, add, next_rows);
  }
}

// Rows [i0, i1) of C (+)= op(A) op(B), kSmallRows at a time. `prefetch`: op(A)'s rows are
// contiguous, and each group of rows prefetches the next (small_tile says when that pays).
void small_product(const View& op_a, int64_t i0, int64_t i1, const VecRows& op_b, int64_t n,
                   int64_t k, int64_t k_blocks, float* c, int64_t ldc, bool accumulate,
                   bool prefetch = false) {
  for (int64_t i = i0; i < i1; i += kSmallRows) {
    const int64_t rows = std::min(kSmallRows, i1 - i);
    if (rows == 1) {
      small_rows<1, false>(op_a, i, 1, op_b, n, k, k_blocks, c, ldc, accumulate, nullptr);
    } else if (prefetch && i + 2 * kSmallRows <= i1) {
      const float* next_rows = op_a.data + (i + kSmallRows) * op_a.row_stride;
      small_rows<kSmallRows, true>(op_a, i, rows, op_b, n, k, k_blocks, c, ldc, accumulate,
                                   next_rows);
    } else {
      small_rows<kSmallRows, false>(op_a, i, rows, op_b, n, k, k_blocks, c, ldc, accumulate,
                                    nullptr);
    }
  }
}

// C^T [n, m] = op(B)^T op(A)^T, the rows of C^T (columns of C) cut into one part per thread.
// A part computes kChunk columns of C at a time into a small buffer, then writes them row by
// row: written straight into C, a tile would store to m rows of C a few floats each, and when
// C's rows are a power of two apart (d_ff = 2048) those all fall in one set of the L1 cache
// and evict each other, which made the product twice as slow.
void gemm_transposed(const GemmArgs& args, const View& op_a, const View& op_b_t, int64_t ldc,
                     int64_t k_blocks) {
  constexpr int64_t kChunk = 64;
  const int64_t m = args.m, n = args.n, k = args.k;
  thread_local PackBuffer a_buffer;
  const VecRows op_a_t = vector_rows(op_a, m, k, a_buffer);  // op(A)^T [k, m]
  const int threads = m * n * k >= kParallelWork ? concurrent_threads() : 1;
  const int64_t groups = ceil_div(n, kSmallRows);
  run_parts(threads, [&](int t) {
    thread_local PackBuffer c_buffer;
    float* chunk = c_buffer.get(kChunk * m);  // C^T's rows j .. j + kChunk - 1
    const int64_t j1 = std::min(n, kSmallRows * (groups * (t + 1) / threads));
    for (int64_t j = kSmallRows * (groups * t / threads); j < j1; j += kChunk) {
      const int64_t rows = std::min(kChunk, j1 - j);
      if (args.accumulate)
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t i = 0; i < m; ++i) chunk[r * m + i] = args.c[i * ldc + j + r];
      const View w_rows{op_b_t.data + j * op_b_t.row_stride, op_b_t.row_stride, op_b_t.col_stride};
      small_product(w_rows, 0, rows, op_a_t, m, k, k_blocks, chunk, m, args.accumulate,
                    op_b_t.col_stride == 1);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t r = 0; r < rows; ++r) args.c[i * ldc + j + r] = chunk[r * m + i];
    }
  });
}

// Below kSmallWork: one thread, and of op(A) and op(B), the one with fewer elements to copy is
// made VecRows; but a single row of op(A) never is. A query against a head's cached keys,
// [1, 64] x [64, t] in decoding, copies the keys into t / 16 vectors a step and multiplies
// them with one row's chains: made vectors itself, the query would fill one lane of 16, and
// each of t / 8 tiles would run 8 chains for it. Cached decoding took 404 ms a batch so,
// against 425 (medians of three alternating rounds; each round 1-7% faster).
void gemm_small(const GemmArgs& args, const View& op_a, const View& op_b_t, int64_t ldc,
                int64_t k_blocks) {
  if (args.trans_b && args.m < args.n && args.m > 1)
    return gemm_transposed(args, op_a, op_b_t, ldc, k_blocks);
  thread_local PackBuffer b_buffer;
  const VecRows op_b = vector_rows(op_b_t, args.n, args.k, b_buffer);
  small_product(op_a, 0, args.m, op_b, args.n, args.k, k_blocks, args.c, ldc, args.accumulate);
}

}  // namespace

void gemm_blocked(const GemmArgs& args) {
  const int64_t m = args.m, n = args.n, k = args.k;
  if (m == 0 || n == 0) return;
  const LeadingDims ld = leading_dims(args);
  if (k == 0) {  // an empty sum
    if (!args.accumulate)
      for (int64_t i = 0; i < m; ++i) std::fill_n(args.c + i * ld.c, n, 0.0f);
    return;
  }
  // op(A)[i, p] is a[i lda + p], or a[p lda + i] when A is stored transposed; likewise for B.
  const View op_a = args.trans_a ? View{args.a, 1, ld.a} : View{args.a, ld.a, 1};
  const View op_b_t = args.trans_b ? View{args.b, ld.b, 1} : View{args.b, 1, ld.b};
  // As many blocks of K as KC requires, made equal, so no block is left nearly empty.
  const int64_t k_blocks = ceil_div(k, KC);
  if (m * n * k <= kSmallWork) return gemm_small(args, op_a, op_b_t, ld.c, k_blocks);
  if (args.trans_b && m <= kFewRows) return gemm_transposed(args, op_a, op_b_t, ld.c, k_blocks);

  const int threads = m * n * k >= kParallelWork ? concurrent_threads() : 1;
  const int64_t row_slivers = ceil_div(m, MR), col_slivers = ceil_div(n, NR);
  const bool split_rows = row_slivers >= col_slivers;
  [[maybe_unused]] const bool bfloat16 = gemm_precision() == GemmPrecision::BFloat16;

  run_parts(threads, [&](int t) {
    // Part t gets slivers [S t / T, S (t + 1) / T): sizes differ by at most one sliver.
    Region region{0, m, 0, n};
    if (split_rows) {
      region.i0 = MR * (row_slivers * t / threads);
      region.i1 = std::min(m, MR * (row_slivers * (t + 1) / threads));
    } else {
      region.j0 = NR * (col_slivers * t / threads);
      region.j1 = std::min(n, NR * (col_slivers * (t + 1) / threads));
    }
    if (region.i0 >= region.i1 || region.j0 >= region.j1) return;
#if defined(__AVX512BF16__) && defined(__AVX512F__)
    if (bfloat16) return compute_region<BFloat16Tiles>(args, op_a, op_b_t, ld.c, k_blocks, region);
#endif
    compute_region<Float32Tiles>(args, op_a, op_b_t, ld.c, k_blocks, region);
  });
}

}  // namespace gf::kernels
