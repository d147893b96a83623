// Tests for what the bench programs share (bench/bench_util.h): the products-alone ceiling
// refuses a step whose logged products differ from the count it is read against.
#include <catch2/catch.hpp>
#include <vector>

#include "autograd/kernels/gemm.h"
#include "bench/bench_util.h"

using namespace gf;

TEST_CASE("products_alone_seconds checks the logged products against the counted ones",
          "[bench][gemm_log]") {
  const std::vector<float> a(8 * 16, 0.5f), b(16 * 4, 0.25f);
  std::vector<float> c(8 * 4);
  const auto step = [&] {
    kernels::gemm({.m = 8, .n = 4, .k = 16, .a = a.data(), .b = b.data(), .c = c.data()});
  };
  const double flops = 2.0 * 8 * 4 * 16;
  CHECK(bench::products_alone_seconds(step, flops) > 0.0);
  CHECK_THROWS_WITH(bench::products_alone_seconds(step, 2 * flops),
                    Catch::Contains("a step's gemm() calls did 0.000001 GFLOP, models/flops.h "
                                    "counts 0.000002: one is wrong"));
}

TEST_CASE("fraction_of_peak is the rate of the work over the peak", "[bench]") {
  // 2 GFLOP in 10 ms is 200 GFLOP/s, half of a 400 GFLOP/s peak.
  CHECK(bench::fraction_of_peak(2e9, 10.0, {.peak_gflops = 400.0}) == Approx(0.5));
}
