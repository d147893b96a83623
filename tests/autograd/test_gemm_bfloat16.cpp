// Tests for the opt-in bfloat16 products (autograd/kernels/gemm.h): the rounding, the products
// against the naive loop on rounded operands, the same bits at any thread count, and the clear
// refusal on a build without AVX512-BF16.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

#include "autograd/kernels/gemm.h"
#include "autograd/kernels/parallel.h"

namespace {

using gf::kernels::GemmArgs;
using gf::kernels::GemmPrecision;
using gf::kernels::round_to_bfloat16;

std::vector<float> random_vector(int64_t size, std::mt19937& rng) {
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(size));
  for (float& x : v) x = uniform(rng);
  return v;
}

std::vector<float> rounded(std::vector<float> v) {
  for (float& x : v) x = round_to_bfloat16(x);
  return v;
}

// Puts float32 products back when a test ends, even by a throw.
struct PrecisionGuard {
  ~PrecisionGuard() {
    gf::kernels::set_gemm_precision(GemmPrecision::Float32);
    gf::kernels::set_num_threads(0);
  }
};

}  // namespace

TEST_CASE("round_to_bfloat16 keeps 8 significant bits, ties to even", "[kernels][gemm]") {
  // bfloat16's step above 1 is 2^-7.
  const float step = std::ldexp(1.0f, -7);
  CHECK(round_to_bfloat16(1.0f) == 1.0f);
  CHECK(round_to_bfloat16(1.0f + step) == 1.0f + step);             // representable
  CHECK(round_to_bfloat16(1.0f + 0.4f * step) == 1.0f);             // below half a step: down
  CHECK(round_to_bfloat16(1.0f + 0.6f * step) == 1.0f + step);      // above half: up
  CHECK(round_to_bfloat16(1.0f + 0.5f * step) == 1.0f);             // a tie: to the even 1
  CHECK(round_to_bfloat16(1.0f + 1.5f * step) == 1.0f + 2 * step);  // a tie: to the even 1 + 2^-6
  CHECK(round_to_bfloat16(-3.0f) == -3.0f);
  CHECK(round_to_bfloat16(1e-30f) == Approx(1e-30f).epsilon(1.0 / 256));  // float32's exponents
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(round_to_bfloat16(inf) == inf);
  CHECK(round_to_bfloat16(std::numeric_limits<float>::max()) == inf);  // past bfloat16's largest
  CHECK(std::isnan(round_to_bfloat16(std::numeric_limits<float>::quiet_NaN())));
  // A NaN whose payload sits in the 16 bits that are dropped stays a NaN.
  const uint32_t nan_bits = 0x7f800001;
  float nan_with_low_payload;
  std::memcpy(&nan_with_low_payload, &nan_bits, sizeof nan_with_low_payload);
  CHECK(std::isnan(round_to_bfloat16(nan_with_low_payload)));
}

TEST_CASE("gemm_blocked in bfloat16 matches the naive loop on rounded operands",
          "[kernels][gemm]") {
  if (!gf::kernels::have_bfloat16()) {
    REQUIRE_THROWS_WITH(gf::kernels::set_gemm_precision(GemmPrecision::BFloat16),
                        Catch::Contains("AVX512-BF16"));
    CHECK(gf::kernels::gemm_precision() == GemmPrecision::Float32);
    return;
  }
  struct Size {
    int64_t m, n, k;
  };
  // Large enough for the packed path (small products stay float32); an odd k, so that the
  // last pair of steps is half padding; several blocks of K and rows; edge tiles.
  const std::vector<Size> sizes{{130, 257, 31}, {96, 64, 513}, {300, 40, 50}, {129, 530, 17}};
  PrecisionGuard guard;
  std::mt19937 rng(8);
  for (const Size& size : sizes) {
    const auto [m, n, k] = size;
    const std::vector<float> a = random_vector(m * k, rng), b = random_vector(k * n, rng);
    const std::vector<float> c0 = random_vector(m * n, rng);
    const std::vector<float> a16 = rounded(a), b16 = rounded(b);
    for (const bool trans_a : {false, true}) {
      for (const bool trans_b : {false, true}) {
        for (const bool accumulate : {false, true}) {
          INFO(m << "x" << n << "x" << k << " trans_a=" << trans_a << " trans_b=" << trans_b
                 << " accumulate=" << accumulate);
          GemmArgs args{.trans_a = trans_a, .trans_b = trans_b, .m = m, .n = n, .k = k};
          args.accumulate = accumulate;
          std::vector<float> reference = c0, c = c0, plain = c0;
          args.a = a16.data();
          args.b = b16.data();
          args.c = reference.data();
          gf::kernels::gemm_naive(args);
          args.a = a.data();
          args.b = b.data();
          args.c = plain.data();
          gf::kernels::gemm_blocked(args);  // float32: further from the rounded reference
          gf::kernels::set_gemm_precision(GemmPrecision::BFloat16);
          args.c = c.data();
          gf::kernels::gemm_blocked(args);
          gf::kernels::set_gemm_precision(GemmPrecision::Float32);
          double worst = 0, worst_plain = 0;
          for (size_t i = 0; i < c.size(); ++i) {
            worst = std::max(worst, static_cast<double>(std::abs(c[i] - reference[i])));
            worst_plain =
                std::max(worst_plain, static_cast<double>(std::abs(plain[i] - reference[i])));
          }
          // Float32's rounding of k sums of products below 1, against bfloat16's of operands.
          CHECK(worst <= 2e-6 * static_cast<double>(k) + 1e-6);
          CHECK(worst_plain > 10 * worst);  // the rounding of the operands did happen
        }
      }
    }
  }
}

TEST_CASE("gemm_blocked in bfloat16 gives the same bits at 1, 2, 3, 4 and 8 threads",
          "[kernels][gemm][threads]") {
  if (!gf::kernels::have_bfloat16()) return;  // the test above checks the refusal
  PrecisionGuard guard;
  std::mt19937 rng(9);
  const int64_t m = 200, n = 300, k = 301;
  const std::vector<float> a = random_vector(m * k, rng), b = random_vector(n * k, rng);
  const auto run = [&](int threads) {
    gf::kernels::set_num_threads(threads);
    gf::kernels::set_gemm_precision(GemmPrecision::BFloat16);
    std::vector<float> c(static_cast<size_t>(m * n));
    gf::kernels::gemm_blocked(
        {.trans_b = true, .m = m, .n = n, .k = k, .a = a.data(), .b = b.data(), .c = c.data()});
    return c;
  };
  const std::vector<float> one = run(1);
  for (const int threads : {2, 3, 4, 8}) {
    INFO(threads << " threads");
    CHECK(run(threads) == one);
  }
}
