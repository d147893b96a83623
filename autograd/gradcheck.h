// Gradient checking: compares the gradients backward() computes with central finite
// differences. Used by the test that walks every op, and by lesson 01.
//
// With a fixed random tensor r of the output's shape, the checked function is
//   L(x) = sum(r * f(x))
// (a plain sum(f(x)) would hide mistakes: softmax's rows sum to 1, so its gradient under a
// plain sum is exactly zero whatever the code does). The analytic side is f(x).backward(r).
// The numeric side, per input element x_k, with h = step * max(1, |x_k|):
//   dL/dx_k ~ (L(x + h e_k) - L(x - h e_k)) / 2h,   L accumulated in double
// An element passes when |numeric - analytic| <= atol + rtol * |numeric|. The defaults suit
// float32 forward passes: rounding of order 1e-7 * |L| / h, truncation of order h^2.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "autograd/tensor.h"

namespace gf {

using Tensors = std::vector<Tensor>;

struct GradcheckOptions {
  double step = 1e-2;   // relative finite-difference step
  double atol = 1e-3;   // absolute tolerance
  double rtol = 1e-2;   // relative tolerance
  uint64_t seed = 7;    // for the random weighting r
  int max_reports = 5;  // failing elements described in the report
};

struct GradcheckResult {
  bool ok = true;
  double max_abs_error = 0.0;  // the largest |numeric - analytic| seen
  int64_t checked = 0;         // elements compared
  std::string report;          // one line per failure: input, index, both values
};

// The inputs are copied; the copies are marked as requiring grad and nudged one element at a
// time. f must be deterministic: dropout needs a freshly seeded Rng per call.
GradcheckResult gradcheck(const std::function<Tensor(const Tensors&)>& f, const Tensors& inputs,
                          const GradcheckOptions& options = {});

}  // namespace gf
