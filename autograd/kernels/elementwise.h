// Element-wise loops on plain float pointers, for code below the ops (the tape adds gradients
// with add) that must not depend on ops.h, whose ops record onto the tape.
#pragma once

#include <cstdint>

#include "autograd/kernels/parallel.h"

namespace gf::kernels {

// y = a + b over n floats; y may be a or b.
inline void add(const float* a, const float* b, float* y, int64_t n) {
  parallel_for(n, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) y[i] = a[i] + b[i];
  });
}

}  // namespace gf::kernels
