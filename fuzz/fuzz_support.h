// What every fuzz target shares: a failed property aborts with a message, which libFuzzer
// reports as a crash and saves the input that caused it.
#pragma once

#include <cstdio>
#include <cstdlib>

namespace gf::fuzz {

// Unlike assert, active in every build type: a property the documentation promises.
inline void require(bool ok, const char* property) {
  if (ok) return;
  std::fprintf(stderr, "fuzz: property violated: %s\n", property);
  std::abort();
}

}  // namespace gf::fuzz
