// Tests for the log of gemm() calls and its replay (autograd/kernels/gemm_log.h): what a log
// records and when, and what products_alone_seconds adds up.
#include <catch2/catch.hpp>
#include <stdexcept>
#include <vector>

#include "autograd/kernels/gemm.h"
#include "autograd/kernels/gemm_log.h"
#include "autograd/kernels/parallel.h"

using namespace gf::kernels;

namespace {

// C [2, 3] = A [2, 4] B [4, 3], or with A's rows 6 floats apart.
void small_product(std::vector<float>& c, int64_t lda = 0) {
  static const std::vector<float> a(12, 1.0f), b(12, 1.0f);
  gemm({.m = 2, .n = 3, .k = 4, .a = a.data(), .b = b.data(), .c = c.data(), .lda = lda});
}

}  // namespace

TEST_CASE("GemmLog records each shape once, with its calls, in the order first seen",
          "[gemm][gemm_log]") {
  std::vector<float> c(6), big(40 * 40);
  const std::vector<float> square(40 * 40, 0.5f);
  small_product(c);  // before the log: not recorded
  std::vector<LoggedGemm> calls;
  {
    GemmLog log;
    small_product(c);
    gemm({.trans_b = true,
          .m = 40,
          .n = 40,
          .k = 40,
          .a = square.data(),
          .b = square.data(),
          .c = big.data(),
          .accumulate = true});
    small_product(c);
    small_product(c, 6);  // the same sizes, another leading dimension: another shape
    calls = log.shapes();
  }
  small_product(c);  // after the log: not recorded
  REQUIRE(calls.size() == 3);
  CHECK(calls[0].shape.m == 2);
  CHECK(calls[0].shape.n == 3);
  CHECK(calls[0].shape.k == 4);
  CHECK(calls[0].shape.lda == 0);
  CHECK(calls[0].calls == 2);
  CHECK(calls[0].total_flops() == 2.0 * 2 * 3 * 4 * 2);
  CHECK_FALSE(calls[0].called_in_parallel_part);
  CHECK(calls[1].shape.trans_b);
  CHECK_FALSE(calls[1].shape.trans_a);
  CHECK(calls[1].shape.accumulate);
  CHECK(calls[1].shape.m == 40);
  CHECK(calls[1].calls == 1);
  CHECK(calls[2].shape.lda == 6);
  CHECK(calls[2].calls == 1);
  // The results are untouched by the logging: 4 ones times 4 ones.
  CHECK(c == std::vector<float>(6, 4.0f));
}

TEST_CASE("GemmLog marks the calls made inside a part of a parallel job", "[gemm][gemm_log]") {
  std::vector<float> c0(6), c1(6);
  GemmLog log;
  run_parts(2, [&](int part) { small_product(part == 0 ? c0 : c1); });
  const std::vector<LoggedGemm> calls = log.shapes();
  REQUIRE(calls.size() == 1);
  CHECK(calls[0].called_in_parallel_part);
  CHECK(calls[0].calls == 2);
  CHECK_FALSE(in_parallel_part());
}

TEST_CASE("only one GemmLog records at a time", "[gemm][gemm_log]") {
  GemmLog log;
  CHECK_THROWS_AS(GemmLog(), std::logic_error);
  CHECK_THROWS_WITH(GemmLog(), Catch::Contains("another log is already recording gemm() calls"));
}

TEST_CASE("products_alone_seconds times a shape and multiplies by its calls", "[gemm][gemm_log]") {
  const int threads_before = num_threads();
  LoggedGemm shape{.shape = {.m = 64, .n = 64, .k = 64}, .calls = 0};
  CHECK(products_alone_seconds({shape}) == 0.0);
  shape.calls = 1;
  const double one = products_alone_seconds({shape}, 0.002);
  shape.calls = 1000;
  const double thousand = products_alone_seconds({shape}, 0.002);
  // A 64^3 product is 0.5 MFLOP: one call takes more than 10 ns and less than 10 ms on any CPU.
  CHECK(one > 1e-8);
  CHECK(one < 1e-2);
  // Each figure is the best of its own timings, so the two differ by the noise of a shared
  // machine, not by a factor of 3.
  CHECK(thousand / one > 300.0);
  CHECK(thousand / one < 3000.0);
  CHECK(num_threads() == threads_before);  // the replay puts the thread count back
}
