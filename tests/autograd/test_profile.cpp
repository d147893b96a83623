// The per-op profiler: counts per op name, times that are never negative, and silence when
// it is off.
#include <catch2/catch.hpp>
#include <map>
#include <string>

#include "autograd/graph.h"
#include "autograd/ops.h"
#include "autograd/profile.h"

using namespace gf;

namespace {

std::map<std::string, profile::OpStats> by_name() {
  std::map<std::string, profile::OpStats> rows;
  for (const profile::OpStats& s : profile::report()) rows[s.op] = s;
  return rows;
}

// f = sum(relu(a * b + a) * b): two mul, one add, one relu, one sum.
Tensor small_graph(const Tensor& a, const Tensor& b) {
  return sum(relu(a * b + a) * b);
}

}  // namespace

TEST_CASE("the profiler counts every recorded op by name, forward and backward",
          "[autograd][profile]") {
  Tensor a = Tensor::from({2, 3}, {1, -2, 3, -4, 5, -6}).set_requires_grad();
  Tensor b = Tensor::from({3}, {0.5f, 1.5f, -2.5f}).set_requires_grad();
  profile::reset();
  profile::start();
  for (int step = 0; step < 3; ++step) {
    profile::mark();
    small_graph(a, b).backward();
  }
  profile::stop();
  const auto rows = by_name();
  REQUIRE(rows.size() == 4);
  CHECK(rows.at("mul").calls == 6);
  CHECK(rows.at("add").calls == 3);
  CHECK(rows.at("relu").calls == 3);
  CHECK(rows.at("sum").calls == 3);
  for (const auto& [name, s] : rows) {
    INFO(name);
    CHECK(s.backward_calls == s.calls);  // every node of this graph receives a gradient
    CHECK(s.forward_seconds >= 0.0);
    CHECK(s.backward_seconds >= 0.0);
    CHECK(s.total_seconds() == s.forward_seconds + s.backward_seconds);
  }
  // The report is sorted by total time, largest first.
  const auto report = profile::report();
  for (size_t i = 1; i < report.size(); ++i)
    CHECK(report[i - 1].total_seconds() >= report[i].total_seconds());
  profile::reset();
  CHECK(profile::report().empty());
}

TEST_CASE("the profiler records nothing while off, nor ops that do not record",
          "[autograd][profile]") {
  Tensor a = Tensor::from({2}, {1.0f, 2.0f}).set_requires_grad();
  profile::reset();
  CHECK_FALSE(profile::profiling_on());
  sum(a * a).backward();
  CHECK(profile::report().empty());

  profile::start();
  {
    NoGrad no_grad;  // nothing is recorded, so nothing is counted
    sum(a * a);
  }
  const Tensor constant = Tensor::from({2}, {3.0f, 4.0f});
  sum(constant * constant);  // no input requires grad: no node
  sum(a * constant).backward();
  profile::stop();
  const auto rows = by_name();
  REQUIRE(rows.size() == 2);
  CHECK(rows.at("mul").calls == 1);
  CHECK(rows.at("sum").calls == 1);
  sum(a * a).backward();  // off again: the counts stay as they were
  CHECK(by_name().at("mul").calls == 1);
  profile::reset();
}
