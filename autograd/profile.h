// A per-op profile of the tape: for each op name, how many nodes were recorded and how much
// wall time went to the op forward and backward. Off by default; while off, each recorded op
// pays one branch (attach_node in graph.cpp tests profiling_on()).
//
// What it measures, exactly:
//   forward   the time from the previous recorded op (or from start() / mark()) to this op's
//             record(), charged to this op. That is the op's own work plus everything the
//             program did since the previous op: module glue, building masks, ops that did
//             not record (under NoGrad, or on inputs that need no gradient). In a small model
//             that glue is the per-op overhead the lesson is about, so it is kept, not hidden.
//   backward  the time backward() spends on each node: its backward function, adding the
//             returned gradients into the inputs' slots, and freeing the node's tensors.
// Whatever lies outside both (the optimizer step, backward()'s topological sort, work after
// the last recorded op) is not charged to any op: the caller measures the whole step and
// sees the remainder. One thread only: record and backward from the thread that started it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gf::profile {

struct OpStats {
  std::string op;                 // the name given to record(): "matmul", "softmax", ...
  int64_t calls = 0;              // nodes recorded
  int64_t backward_calls = 0;     // nodes backward() visited
  double forward_seconds = 0.0;   // see the header comment: own work + the glue before it
  double backward_seconds = 0.0;  // backward function + gradient accumulation + release
  double total_seconds() const { return forward_seconds + backward_seconds; }
};

namespace detail {
inline bool profiling_on = false;
void on_record(const char* op);
void on_backward(const char* op, double seconds);
}  // namespace detail

inline bool profiling_on() {
  return detail::profiling_on;
}

void start();  // switches profiling on and marks the forward clock (keeps earlier counts)
void stop();   // switches it off; the counts stay until reset()
void reset();  // forgets every count
// Restarts the forward clock: the next op's forward time begins here, not at the previous
// op. Call it at the start of each step, so the data loading before it is not charged.
void mark();

// Every op seen since the last reset(), the largest total_seconds() first (ties by name).
std::vector<OpStats> report();

}  // namespace gf::profile
