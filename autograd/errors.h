// The exceptions a caller's mistake raises. Each message names the op and shows the numbers:
//   matmul: cannot multiply [2, 3, 5] by [4, 7] (inner dimensions 5 and 4 differ)
// An op checks its arguments before it allocates or records anything, so a throw leaves
// every tensor and the tape as they were.
#pragma once

#include <stdexcept>

namespace gf {

// Shapes that do not fit the op: ranks, broadcasting, inner dimensions.
struct ShapeError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// An index out of range: a token id, an axis, a slice bound.
struct IndexError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// A file that cannot be read as what it claims to be (checkpoints, corpora).
struct FormatError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace gf
