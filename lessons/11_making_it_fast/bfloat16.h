// Lesson 11, section 5: products in bfloat16 (bfloat16.cpp; part6_bfloat16.md is its text).
#pragma once

#include <cstdint>
#include <string>

#include "lessons/lesson.h"

namespace gf::lessons {

struct Bfloat16Setup {
  bool quick = false;
  uint64_t seed = 11;
  int threads = 2;
  std::string out_dir;
};

// What bfloat16 keeps of a float, what it does to a product's speed and accuracy, and to the
// training of the copy task and the toy translation. On a build without bfloat16 products it
// says so and checks only that the library refuses them with a clear message.
void bfloat16_products(const Bfloat16Setup& s, Checks& check);

}  // namespace gf::lessons
