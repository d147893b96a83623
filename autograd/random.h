// One seeded random number generator, passed explicitly to whatever needs randomness
// (initialisation, dropout, data), so that the same seed gives the same run, bit for bit.
//
// The engine is xoshiro256** (Blackman and Vigna, 2018), seeded through splitmix64. The
// mappings to floats and ranges are our own few lines rather than <random>'s distributions,
// whose outputs differ between standard libraries.
#pragma once

#include <array>
#include <cstdint>

namespace gf {

class Rng {
 public:
  explicit Rng(uint64_t seed);

  uint64_t next_u64();
  float uniform();                       // [0, 1), 24 random bits
  float uniform(float low, float high);  // [low, high)
  float normal();                        // mean 0, standard deviation 1 (Box-Muller)
  int64_t below(int64_t n);              // uniform integer in [0, n), unbiased; n > 0
  bool bernoulli(float p);               // true with probability p

  // The engine's whole state: a stream saved with state() and put back with set_state()
  // continues with exactly the numbers it would have drawn (training resumes this way).
  using State = std::array<uint64_t, 4>;
  State state() const;
  void set_state(const State& state);  // throws std::invalid_argument for the all-zero state

 private:
  uint64_t state_[4];
};

}  // namespace gf
