#include "autograd/random.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>

namespace gf {

static uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) {
  return (x << k) | (x >> (64 - k));
}

// splitmix64 spreads any seed (0 included) over the 256-bit state, which must not be all zero.
Rng::Rng(uint64_t seed) {
  for (uint64_t& s : state_) s = splitmix64(seed);
}

uint64_t Rng::next_u64() {
  const uint64_t result = rotl(state_[1] * 5, 7) * 9;
  const uint64_t t = state_[1] << 17;
  state_[2] ^= state_[0];
  state_[3] ^= state_[1];
  state_[1] ^= state_[2];
  state_[0] ^= state_[3];
  state_[2] ^= t;
  state_[3] = rotl(state_[3], 45);
  return result;
}

// The top 24 bits, scaled by 2^-24: every float in [0, 1) on a grid of 2^-24, never 1.
float Rng::uniform() {
  return static_cast<float>(next_u64() >> 40) * 0x1.0p-24f;
}

float Rng::uniform(float low, float high) {
  return low + (high - low) * uniform();
}

// Box-Muller: for u1 in (0, 1] and u2 in [0, 1), sqrt(-2 ln u1) cos(2 pi u2) is N(0, 1).
float Rng::normal() {
  const double u1 = 1.0 - static_cast<double>(next_u64() >> 11) * 0x1.0p-53;  // (0, 1]
  const double u2 = static_cast<double>(next_u64() >> 11) * 0x1.0p-53;        // [0, 1)
  return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2));
}

// Rejection sampling: drop the top sliver of 64-bit values that would favour small results.
int64_t Rng::below(int64_t n) {
  if (n <= 0) throw std::invalid_argument(fmt::format("Rng::below: n must be positive, got {}", n));
  const uint64_t range = static_cast<uint64_t>(n);
  const uint64_t limit = UINT64_MAX - UINT64_MAX % range;
  uint64_t x = next_u64();
  while (x >= limit) x = next_u64();
  return static_cast<int64_t>(x % range);
}

bool Rng::bernoulli(float p) {
  return uniform() < p;
}

Rng::State Rng::state() const {
  return {state_[0], state_[1], state_[2], state_[3]};
}

// xoshiro's all-zero state is a fixed point (it would only ever return 0), and no seed leads
// to it, so a zero state can only come from a damaged file.
void Rng::set_state(const State& state) {
  if (state == State{})
    throw std::invalid_argument("Rng::set_state: the all-zero state is not a valid state");
  std::copy(state.begin(), state.end(), state_);
}

}  // namespace gf
