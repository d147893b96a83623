// Tests for the GEMM kernels (autograd/kernels/gemm.h): the fast kernels against gemm_naive on
// awkward sizes, every trans combination and both accumulate modes; exact small cases;
// run-to-run determinism; subnormal inputs; and the argument checks of gemm().
#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "autograd/kernels/gemm.h"
#include "autograd/kernels/simd.h"

namespace {

using gf::kernels::GemmArgs;
using gf::kernels::GemmBackend;
using Kernel = void (*)(const GemmArgs&);

struct NamedKernel {
  std::string name;
  Kernel kernel;
};

// The kernels to compare with gemm_naive: gemm_blocked always, gemm_blas when built in.
std::vector<NamedKernel> fast_kernels() {
  std::vector<NamedKernel> kernels{{"blocked", gf::kernels::gemm_blocked}};
  if (gf::kernels::have_blas()) kernels.push_back({"blas", gf::kernels::gemm_blas});
  return kernels;
}

std::vector<float> random_vector(int64_t size, std::mt19937& rng) {
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(size));
  for (float& x : v) x = uniform(rng);
  return v;
}

std::vector<float> absolute(std::vector<float> v) {
  for (float& x : v) x = std::abs(x);
  return v;
}

// Restores the process-wide backend when a test that switches it ends, even by a throw.
struct BackendGuard {
  GemmBackend saved = gf::kernels::gemm_backend();
  ~BackendGuard() { gf::kernels::set_gemm_backend(saved); }
};

}  // namespace

TEST_CASE("gemm kernels: a 2x2 product computed by hand", "[kernels][gemm]") {
  // A = [[1, 2], [3, 4]], B = [[5, 6], [7, 8]]; small integers, so every kernel is exact.
  const std::vector<float> a{1, 2, 3, 4}, b{5, 6, 7, 8};
  struct Case {
    bool trans_a, trans_b;
    std::vector<float> expected;
  };
  const std::vector<Case> cases{
      {false, false, {19, 22, 43, 50}},  // A B
      {true, false, {26, 30, 38, 44}},   // A^T B
      {false, true, {17, 23, 39, 53}},   // A B^T
      {true, true, {23, 31, 34, 46}},    // A^T B^T
  };
  std::vector<NamedKernel> kernels = fast_kernels();
  kernels.push_back({"naive", gf::kernels::gemm_naive});
  for (const NamedKernel& kernel : kernels) {
    for (const Case& c : cases) {
      INFO(kernel.name << " trans_a=" << c.trans_a << " trans_b=" << c.trans_b);
      std::vector<float> out(4, 1.0f);
      GemmArgs args{.m = 2, .n = 2, .k = 2, .a = a.data(), .b = b.data(), .c = out.data()};
      args.trans_a = c.trans_a;
      args.trans_b = c.trans_b;
      kernel.kernel(args);
      CHECK(out == c.expected);
      args.accumulate = true;  // C += A B on top of the product just computed
      kernel.kernel(args);
      std::vector<float> twice = c.expected;
      for (float& x : twice) x *= 2;
      CHECK(out == twice);
    }
  }
}

TEST_CASE("gemm kernels: fast kernels match gemm_naive on awkward sizes", "[kernels][gemm]") {
  struct Size {
    int64_t m, n, k;
  };
  // Sizes that are not multiples of any tile; a single row or column; several blocks of K
  // (k > 256), of rows (m > 2 x 128) and of columns (n > 512); C wide enough to be split by
  // columns; and enough work for two threads.
  const std::vector<Size> sizes{{1, 1, 1},      {3, 5, 7},   {17, 33, 65},  {65, 1, 129},
                                {130, 257, 31}, {1, 300, 2}, {9, 300, 200}, {40, 70, 700},
                                {300, 40, 50},  {3, 530, 20}};
  std::mt19937 rng(7);
  for (const Size& size : sizes) {
    const auto [m, n, k] = size;
    const std::vector<float> a = random_vector(m * k, rng), b = random_vector(k * n, rng);
    const std::vector<float> c0 = random_vector(m * n, rng);  // the C that accumulate adds to
    const std::vector<float> abs_a = absolute(a), abs_b = absolute(b);
    for (const bool trans_a : {false, true}) {
      for (const bool trans_b : {false, true}) {
        for (const bool accumulate : {false, true}) {
          GemmArgs args{.m = m, .n = n, .k = k, .a = a.data(), .b = b.data()};
          args.trans_a = trans_a;
          args.trans_b = trans_b;
          args.accumulate = accumulate;
          std::vector<float> reference = c0;
          args.c = reference.data();
          gf::kernels::gemm_naive(args);
          // Rounding error in a float sum is bounded by a multiple of sum_k |a| |b|.
          std::vector<float> scale(static_cast<size_t>(m * n), 0.0f);
          GemmArgs scale_args = args;
          scale_args.a = abs_a.data();
          scale_args.b = abs_b.data();
          scale_args.c = scale.data();
          scale_args.accumulate = false;
          gf::kernels::gemm_naive(scale_args);

          for (const NamedKernel& kernel : fast_kernels()) {
            INFO(kernel.name << ": m=" << m << " n=" << n << " k=" << k << " trans_a=" << trans_a
                             << " trans_b=" << trans_b << " accumulate=" << accumulate);
            std::vector<float> out = c0;
            args.c = out.data();
            kernel.kernel(args);
            int64_t bad = 0;
            for (size_t i = 0; i < out.size(); ++i) {
              const float bound = 1e-4f * (1.0f + std::abs(c0[i]) + scale[i]);
              if (!(std::abs(out[i] - reference[i]) <= bound)) ++bad;
            }
            CHECK(bad == 0);
          }
        }
      }
    }
  }
}

TEST_CASE("gemm kernels: k = 0 is an empty sum", "[kernels][gemm]") {
  std::vector<NamedKernel> kernels = fast_kernels();
  kernels.push_back({"naive", gf::kernels::gemm_naive});
  for (const NamedKernel& kernel : kernels) {
    INFO(kernel.name);
    std::vector<float> out(6, 3.0f);
    GemmArgs args{.m = 2, .n = 3, .k = 0, .c = out.data(), .accumulate = true};
    kernel.kernel(args);
    CHECK(out == std::vector<float>(6, 3.0f));  // C += nothing
    args.accumulate = false;
    kernel.kernel(args);
    CHECK(out == std::vector<float>(6, 0.0f));  // C = an empty sum
  }
}

TEST_CASE("gemm_blocked: the same bits on every run", "[kernels][gemm]") {
  // Large enough for two threads and three blocks of K, with edge tiles in every direction.
  const int64_t m = 131, n = 77, k = 600;
  std::mt19937 rng(11);
  const std::vector<float> a = random_vector(m * k, rng), b = random_vector(k * n, rng);
  std::vector<float> first(static_cast<size_t>(m * n)), second(first.size());
  GemmArgs args{.trans_b = true, .m = m, .n = n, .k = k, .a = a.data(), .b = b.data()};
  args.c = first.data();
  gf::kernels::gemm_blocked(args);
  args.c = second.data();
  gf::kernels::gemm_blocked(args);
  CHECK(first == second);  // exact equality on purpose
}

TEST_CASE("gemm kernels: subnormal inputs give (nearly) zero", "[kernels][gemm]") {
  // 1e-39 is below the smallest normal float (~1.18e-38). Each product is ~1e-78, far below
  // anything a float holds, so the exact result rounds to 0. With denormals flushed to zero
  // (parallel.h) the inputs read as 0, which gives the same answer without the slow path.
  const int64_t m = 64, n = 64, k = 64;
  const std::vector<float> a(static_cast<size_t>(m * k), 1e-39f);
  const std::vector<float> b(static_cast<size_t>(k * n), 1e-39f);
  // Checked at compile time: at run time, flush-to-zero may already make 1e-39f compare as 0.
  static_assert(1e-39f > 0.0f && 1e-39f < std::numeric_limits<float>::min());
  std::vector<NamedKernel> kernels = fast_kernels();
  kernels.push_back({"naive", gf::kernels::gemm_naive});
  for (const NamedKernel& kernel : kernels) {
    INFO(kernel.name);
    std::vector<float> out(static_cast<size_t>(m * n), 1.0f);
    kernel.kernel({.m = m, .n = n, .k = k, .a = a.data(), .b = b.data(), .c = out.data()});
    CHECK(std::all_of(out.begin(), out.end(), [](float x) { return std::abs(x) < 1e-37f; }));
  }
}

TEST_CASE("gemm kernels: subnormal entries among normal ones change nothing", "[kernels][gemm]") {
  // Every other entry of A is subnormal; the result must match A with those entries set to 0
  // (their products with B are below 1.2e-38, far under the rounding error of the sums).
  const int64_t m = 37, n = 45, k = 300;
  std::mt19937 rng(5);
  std::vector<float> a = random_vector(m * k, rng), a_zeroed = a;
  for (size_t i = 0; i < a.size(); i += 2) {
    a[i] = (a[i] < 0 ? -1e-39f : 1e-39f) * static_cast<float>(1 + i % 7);
    a_zeroed[i] = 0.0f;
  }
  const std::vector<float> b = random_vector(k * n, rng);
  std::vector<float> reference(static_cast<size_t>(m * n));
  gf::kernels::gemm_naive(
      {.m = m, .n = n, .k = k, .a = a_zeroed.data(), .b = b.data(), .c = reference.data()});
  for (const NamedKernel& kernel : fast_kernels()) {
    INFO(kernel.name);
    std::vector<float> out(reference.size());
    kernel.kernel({.m = m, .n = n, .k = k, .a = a.data(), .b = b.data(), .c = out.data()});
    int64_t bad = 0;
    for (size_t i = 0; i < out.size(); ++i) bad += std::abs(out[i] - reference[i]) <= 1e-4f ? 0 : 1;
    CHECK(bad == 0);
  }
}

TEST_CASE("gemm: dispatches to the chosen backend", "[kernels][gemm]") {
  BackendGuard guard;
  CHECK(gf::kernels::gemm_backend() == GemmBackend::Blocked);  // the default
  CHECK(gf::kernels::to_string(GemmBackend::Naive) == "naive");
  CHECK(gf::kernels::to_string(GemmBackend::Blocked) == "blocked");
  CHECK(gf::kernels::to_string(GemmBackend::Blas) == "blas");

  std::mt19937 rng(3);
  const std::vector<float> a = random_vector(5 * 4, rng), b = random_vector(4 * 3, rng);
  std::vector<float> expected(15), out(15);
  GemmArgs args{.m = 5, .n = 3, .k = 4, .a = a.data(), .b = b.data(), .c = expected.data()};
  gf::kernels::gemm_naive(args);
  args.c = out.data();
  gf::kernels::set_gemm_backend(GemmBackend::Naive);
  CHECK(gf::kernels::gemm_backend() == GemmBackend::Naive);
  gf::kernels::gemm(args);
  CHECK(out == expected);  // the very same code ran

  if (gf::kernels::have_blas()) {
    gf::kernels::set_gemm_backend(GemmBackend::Blas);
    CHECK(gf::kernels::gemm_backend() == GemmBackend::Blas);
    gf::kernels::gemm(args);
    for (size_t i = 0; i < out.size(); ++i) CHECK(out[i] == Approx(expected[i]).margin(1e-5));
  } else {
    REQUIRE_THROWS_WITH(gf::kernels::set_gemm_backend(GemmBackend::Blas),
                        Catch::Matchers::Contains("backend blas is not available"));
    REQUIRE_THROWS_WITH(gf::kernels::gemm_blas(args),
                        Catch::Matchers::Contains("gemm_blas: this build has no BLAS"));
    CHECK(gf::kernels::gemm_backend() == GemmBackend::Naive);  // unchanged by the throw
  }
}

TEST_CASE("gemm: rejects negative sizes and missing matrices", "[kernels][gemm]") {
  std::vector<float> a(6), b(6), c(4);
  GemmArgs args{.m = -1, .n = 2, .k = 3, .a = a.data(), .b = b.data(), .c = c.data()};
  REQUIRE_THROWS_AS(gf::kernels::gemm(args), std::invalid_argument);
  REQUIRE_THROWS_WITH(
      gf::kernels::gemm(args),
      Catch::Matchers::Contains("gemm: sizes must not be negative (m = -1, n = 2, k = 3)"));

  args.m = 2;
  args.b = nullptr;
  REQUIRE_THROWS_WITH(
      gf::kernels::gemm(args),
      Catch::Matchers::Contains("gemm: b is null but holds 6 elements (m = 2, n = 2, k = 3)"));

  // A matrix without elements is never read, so it may be null.
  std::fill(c.begin(), c.end(), 5.0f);
  REQUIRE_NOTHROW(gf::kernels::gemm({.m = 2, .n = 2, .k = 0, .c = c.data()}));
  CHECK(c == std::vector<float>(4, 0.0f));
  REQUIRE_NOTHROW(gf::kernels::gemm({.m = 0, .n = 0, .k = 5}));
}

TEST_CASE("gemm kernels: leading dimensions read and write sub-matrices in place",
          "[kernels][gemm]") {
  // Each operand sits in a wider stored matrix (3 floats of padding per row); the product
  // must equal the one on contiguous copies, and the padding must stay untouched.
  std::mt19937 rng(11);
  std::vector<NamedKernel> kernels = fast_kernels();
  kernels.push_back({"naive", gf::kernels::gemm_naive});
  const int64_t pad = 3;
  for (const auto& [m, n, k] : {std::array<int64_t, 3>{5, 7, 3}, {33, 40, 17}, {130, 70, 300}}) {
    for (const bool trans_a : {false, true}) {
      for (const bool trans_b : {false, true}) {
        const int64_t a_rows = trans_a ? k : m, a_cols = trans_a ? m : k;
        const int64_t b_rows = trans_b ? n : k, b_cols = trans_b ? k : n;
        const std::vector<float> a = random_vector(a_rows * a_cols, rng);
        const std::vector<float> b = random_vector(b_rows * b_cols, rng);
        std::vector<float> expected(static_cast<size_t>(m * n));
        gf::kernels::gemm_naive({.trans_a = trans_a,
                                 .trans_b = trans_b,
                                 .m = m,
                                 .n = n,
                                 .k = k,
                                 .a = a.data(),
                                 .b = b.data(),
                                 .c = expected.data()});
        // The same numbers, each row followed by pad sentinels.
        auto widen = [&](const std::vector<float>& v, int64_t rows, int64_t cols) {
          std::vector<float> wide(static_cast<size_t>(rows * (cols + pad)), 7.0f);
          for (int64_t r = 0; r < rows; ++r)
            std::copy_n(v.begin() + static_cast<std::ptrdiff_t>(r * cols), cols,
                        wide.begin() + static_cast<std::ptrdiff_t>(r * (cols + pad)));
          return wide;
        };
        const std::vector<float> wide_a = widen(a, a_rows, a_cols);
        const std::vector<float> wide_b = widen(b, b_rows, b_cols);
        for (const auto& [name, kernel] : kernels) {
          INFO(name << " m " << m << " n " << n << " k " << k << " trans " << trans_a << trans_b);
          std::vector<float> wide_c(static_cast<size_t>(m * (n + pad)), 7.0f);
          kernel({.trans_a = trans_a,
                  .trans_b = trans_b,
                  .m = m,
                  .n = n,
                  .k = k,
                  .a = wide_a.data(),
                  .b = wide_b.data(),
                  .c = wide_c.data(),
                  .lda = a_cols + pad,
                  .ldb = b_cols + pad,
                  .ldc = n + pad});
          for (int64_t i = 0; i < m; ++i) {
            for (int64_t j = 0; j < n; ++j)
              REQUIRE(std::abs(wide_c[static_cast<size_t>(i * (n + pad) + j)] -
                               expected[static_cast<size_t>(i * n + j)]) <=
                      1e-5f * static_cast<float>(k));
            for (int64_t j = n; j < n + pad; ++j)
              REQUIRE(wide_c[static_cast<size_t>(i * (n + pad) + j)] == 7.0f);
          }
        }
      }
    }
  }
}

TEST_CASE("gemm: a leading dimension shorter than a row is refused", "[kernels][gemm]") {
  std::vector<float> a(12), b(12), c(16);
  REQUIRE_THROWS_WITH(
      gf::kernels::gemm(
          {.m = 4, .n = 4, .k = 3, .a = a.data(), .b = b.data(), .c = c.data(), .lda = 2}),
      Catch::Contains("lda = 2 is shorter than a stored row of 3 floats"));
}

TEST_CASE("gemm_blocked: a row of C has the same bits however many rows are multiplied",
          "[kernels][gemm]") {
  // 64 rows take the packed path; 1 or 3 rows of a narrow C the small-product path; 1 to 20
  // rows of a wide C with B transposed the few-rows path, which computes C^T. All must sum
  // every element in the same order (decoding with the key/value cache relies on it). K = 300
  // makes two blocks of K, N = 40 a partial vector, N = 600 a wide C in many parts.
  std::mt19937 rng(5);
  const int64_t m = 64, k = 300;
  for (const int64_t n : {40, 600}) {
    for (const bool trans_a : {false, true}) {
      for (const bool trans_b : {false, true}) {
        for (const bool accumulate : {false, true}) {
          INFO("n " << n << " trans " << trans_a << trans_b << " accumulate " << accumulate);
          const std::vector<float> a = random_vector(m * k, rng), b = random_vector(k * n, rng);
          const std::vector<float> c0 = random_vector(m * n, rng);
          std::vector<float> all = c0;
          gf::kernels::gemm_blocked({.trans_a = trans_a,
                                     .trans_b = trans_b,
                                     .m = m,
                                     .n = n,
                                     .k = k,
                                     .a = a.data(),
                                     .b = b.data(),
                                     .c = all.data(),
                                     .accumulate = accumulate});
          for (const int64_t rows : {1, 3, 16, 20}) {
            for (const int64_t first : {int64_t{0}, int64_t{17}, m - rows}) {
              INFO("rows " << first << " .. " << first + rows - 1);
              // Those rows alone: A's rows (or, transposed, its columns) read through lda.
              std::vector<float> some(c0.begin() + static_cast<std::ptrdiff_t>(first * n),
                                      c0.begin() + static_cast<std::ptrdiff_t>((first + rows) * n));
              gf::kernels::gemm_blocked({.trans_a = trans_a,
                                         .trans_b = trans_b,
                                         .m = rows,
                                         .n = n,
                                         .k = k,
                                         .a = trans_a ? a.data() + first : a.data() + first * k,
                                         .b = b.data(),
                                         .c = some.data(),
                                         .accumulate = accumulate,
                                         .lda = trans_a ? m : k});
              for (int64_t i = 0; i < rows * n; ++i)
                REQUIRE(some[static_cast<size_t>(i)] == all[static_cast<size_t>(first * n + i)]);
            }
          }
        }
      }
    }
  }
}

TEST_CASE("transpose: a block of registers becomes its transpose", "[kernels][gemm]") {
  using gf::kernels::kLanes;
  gf::kernels::Vec rows[kLanes];
  for (int64_t i = 0; i < kLanes; ++i)
    for (int64_t l = 0; l < kLanes; ++l) rows[i][l] = static_cast<float>(100 * i + l);
  gf::kernels::transpose(rows);
  for (int64_t i = 0; i < kLanes; ++i)
    for (int64_t l = 0; l < kLanes; ++l) REQUIRE(rows[i][l] == static_cast<float>(100 * l + i));
}
