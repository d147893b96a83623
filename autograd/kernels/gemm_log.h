// A log of the matrix products gemm() computes, and the time they take on their own.
//
// bench/ reads a training step against the machine's FMA peak (roofline.h). No step can reach
// that peak: its products come in the shapes the model gives them, and a small or skinny
// product runs below a large one's rate however little else the step does. While a GemmLog is
// alive it records the shape of every gemm() call; products_alone_seconds() then times each
// shape on its own and adds the times up. That is a step with nothing but its products, and
// the FLOPs over that time estimate the most this step can do with these kernels: its ceiling.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "autograd/kernels/gemm.h"

namespace gf::kernels {

// One shape of product, as gemm() was called with it, and how many calls it had.
struct LoggedGemm {
  GemmArgs shape;  // sizes, trans, accumulate and leading dimensions; the pointers are null
  // Called from inside a part of a parallel job (attention's heads, one pair each): such a call
  // runs on that part's thread alone, while other threads run parts of their own.
  bool called_in_parallel_part = false;
  int64_t calls = 0;
  double total_flops() const {  // of all its calls
    return 2.0 * static_cast<double>(shape.m) * static_cast<double>(shape.n) *
           static_cast<double>(shape.k) * static_cast<double>(calls);
  }
};

// Records every gemm() call, on any thread, from its construction to its destruction. One log
// at a time: a second one throws std::logic_error. A call pays one untaken branch while no log
// is alive.
class GemmLog {
 public:
  GemmLog();
  ~GemmLog();
  GemmLog(const GemmLog&) = delete;
  GemmLog& operator=(const GemmLog&) = delete;

  // The distinct shapes recorded so far, each with its count of calls, in the order each was
  // first seen.
  std::vector<LoggedGemm> shapes() const;
};

// The time the logged products take on their own: each shape on 64-byte aligned operands (as
// a tensor's are) that stay in cache, the best of repeated runs for `seconds_per_shape`, times
// its calls. A call made inside a parallel part is timed on one thread, and its time divided
// by the threads that can run at once (concurrent_threads()), as if the parts had kept every
// thread busy. These choices err towards less time, so the result is an optimistic estimate
// of the least time a step's products can take with these kernels, not a prediction of it.
double products_alone_seconds(const std::vector<LoggedGemm>& shapes,
                              double seconds_per_shape = 0.01);

namespace detail {
extern std::atomic<bool> gemm_log_on;  // read by gemm() on every call; set by GemmLog
void log_gemm(const GemmArgs& args);
}  // namespace detail

}  // namespace gf::kernels
