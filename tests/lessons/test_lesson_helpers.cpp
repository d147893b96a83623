// The helpers in lessons/lesson.h that lessons compute with: a lesson's checks are only as
// good as its max_abs_diff, and its timing tables as its median.
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "autograd/tensor.h"
#include "lessons/lesson.h"

using namespace gf;
using namespace gf::lessons;

TEST_CASE("max_abs_diff is the largest elementwise difference", "[lessons][helpers]") {
  const std::vector<float> a = {1.0f, -2.0f, 3.0f}, b = {1.5f, -4.0f, 3.0f};
  CHECK(max_abs_diff(a, b) == 2.0f);
  CHECK(max_abs_diff(a, a) == 0.0f);
  CHECK(max_abs_diff(std::vector<float>{}, std::vector<float>{}) == 0.0f);
  // A difference in size is not a small difference: the check that uses it must fail.
  CHECK(std::isinf(max_abs_diff(a, std::vector<float>{1.0f, -2.0f})));
}

TEST_CASE("max_abs_diff of tensors also asks for the same shape", "[lessons][helpers]") {
  const Tensor x = Tensor::from({2, 2}, {1, 2, 3, 4});
  CHECK(max_abs_diff(x, Tensor::from({2, 2}, {1, 2, 3, 1})) == 3.0f);
  CHECK(std::isinf(max_abs_diff(x, Tensor::from({4}, {1, 2, 3, 4}))));
}

TEST_CASE("median takes the middle value, or the mean of the two middle ones",
          "[lessons][helpers]") {
  CHECK(median({3.0, 1.0, 2.0}) == 2.0);
  CHECK(median({4.0, 1.0, 3.0, 2.0}) == 2.5);
  CHECK(median({7.0}) == 7.0);
}
