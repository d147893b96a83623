#include <catch2/catch.hpp>
#include <vector>

#include "viz/ticks.h"

using namespace gf::viz;

namespace {

void check_ticks(const std::vector<double>& got, const std::vector<double>& expected) {
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == Approx(expected[i]).margin(1e-12));
}

}  // namespace

TEST_CASE("nice ticks are round multiples of 1, 2 or 5", "[viz][ticks]") {
  check_ticks(nice_ticks(0, 1), {0, 0.2, 0.4, 0.6, 0.8, 1.0});
  check_ticks(nice_ticks(0, 500, 5), {0, 100, 200, 300, 400, 500});
  check_ticks(nice_ticks(-1, 1, 4), {-1, -0.5, 0, 0.5, 1});
  check_ticks(nice_ticks(0.05, 2.4, 5), {0.5, 1.0, 1.5, 2.0});
  check_ticks(nice_ticks(3, 3), {3});
  CHECK(nice_step(0, 2000, 6) == 500);
  CHECK(nice_step(0, 0.007, 5) == Approx(0.001));
  CHECK(nice_step(1, 1) == 1);  // degenerate: no division by zero
  check_ticks(multiples(0.25, 0, 1), {0, 0.25, 0.5, 0.75, 1});
  CHECK(multiples(0, 0, 1).empty());
}

TEST_CASE("log ticks use powers of ten, or 1-2-5 steps over a short range", "[viz][ticks]") {
  check_ticks(log_ticks(0.04, 3), {0.05, 0.1, 0.2, 0.5, 1, 2});
  check_ticks(log_ticks(1e-4, 1), {1e-4, 1e-3, 1e-2, 1e-1, 1});
  CHECK(log_ticks(0, 1).empty());
  CHECK(log_ticks(-1, 1).empty());
}

TEST_CASE("tick labels carry the decimals the step needs", "[viz][ticks]") {
  CHECK(format_tick(0.4, 0.2) == "0.4");
  CHECK(format_tick(1.0, 0.2) == "1.0");
  CHECK(format_tick(100, 50) == "100");
  CHECK(format_tick(0.05, 0.05) == "0.05");
  CHECK(format_tick(-1e-17, 0.5) == "0.0");  // never "-0.0"
  CHECK(format_tick(0.003, 0.001) == "0.003");
  CHECK(format_tick(1e-5, 1e-5) == "1e-05");
  CHECK(format_tick(2e6, 1e6) == "2e+06");
}
