// The profiler's counters: a map from op name to its OpStats, and the forward clock.
#include "autograd/profile.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <string_view>

namespace gf::profile {
namespace {

using Clock = std::chrono::steady_clock;

// Keyed by the name's characters, not its address: the same literal may have a different
// address in each translation unit. Node::op names are literals, so the views never dangle.
std::map<std::string_view, OpStats>& table() {
  static std::map<std::string_view, OpStats> stats;
  return stats;
}

Clock::time_point last_mark;

OpStats& stats_for(const char* op) {
  OpStats& s = table()[op];
  if (s.op.empty()) s.op = op;
  return s;
}

}  // namespace

namespace detail {

void on_record(const char* op) {
  const Clock::time_point now = Clock::now();
  OpStats& s = stats_for(op);
  ++s.calls;
  s.forward_seconds += std::chrono::duration<double>(now - last_mark).count();
  last_mark = Clock::now();  // the map lookup above is the profiler's cost, not the next op's
}

void on_backward(const char* op, double seconds) {
  OpStats& s = stats_for(op);
  ++s.backward_calls;
  s.backward_seconds += seconds;
}

}  // namespace detail

void start() {
  detail::profiling_on = true;
  mark();
}

void stop() {
  detail::profiling_on = false;
}

void reset() {
  table().clear();
}

void mark() {
  last_mark = Clock::now();
}

std::vector<OpStats> report() {
  std::vector<OpStats> rows;
  for (const auto& [name, s] : table()) rows.push_back(s);
  std::stable_sort(rows.begin(), rows.end(), [](const OpStats& a, const OpStats& b) {
    return a.total_seconds() > b.total_seconds();
  });
  return rows;
}

}  // namespace gf::profile
