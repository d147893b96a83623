#include <catch2/catch.hpp>
#include <cstdint>

#include "autograd/ops.h"
#include "autograd/random.h"
#include "autograd/storage.h"
#include "autograd/tensor.h"

using namespace gf;

namespace {

// A small forward and backward pass whose every intermediate is freed when it returns.
std::vector<float> one_step(uint64_t seed) {
  Rng rng(seed);
  Tensor w = Tensor::randn({32, 48}, rng);
  w.set_requires_grad();
  Tensor x = Tensor::randn({40, 48}, rng);
  Tensor loss = sum(tanh(linear(x, w)) * 0.5f);
  loss.backward();
  std::vector<float> out = w.grad().to_vector();
  out.push_back(loss.item());
  return out;
}

}  // namespace

TEST_CASE("buffers are aligned and hold what is written", "[autograd][storage]") {
  for (int64_t count : {0, 1, 15, 16, 17, 1000, 100000}) {
    const auto buffer = allocate_floats(count);
    REQUIRE(buffer != nullptr);
    CHECK(reinterpret_cast<uintptr_t>(buffer.get()) % 64 == 0);
    for (int64_t i = 0; i < count; ++i) buffer.get()[i] = static_cast<float>(i);
    for (int64_t i = 0; i < count; ++i) CHECK(buffer.get()[i] == static_cast<float>(i));
  }
}

TEST_CASE("the pool gives the same results as plain allocation, and reuses buffers",
          "[autograd][storage]") {
  const bool was = set_storage_pool_enabled(false);
  const std::vector<float> plain = one_step(5);
  set_storage_pool_enabled(true);
  const std::vector<float> first = one_step(5);
  const StoragePoolStats before = storage_pool_stats();
  const std::vector<float> second = one_step(5);
  const StoragePoolStats after = storage_pool_stats();
  set_storage_pool_enabled(was);

  CHECK(first == plain);
  CHECK(second == plain);
  // The second step finds every buffer it needs left over by the first: nothing fresh.
  CHECK(after.reused > before.reused);
  CHECK(after.fresh == before.fresh);
}

TEST_CASE("turning the pool off hands back what it cached", "[autograd][storage]") {
  const bool was = set_storage_pool_enabled(true);
  { const auto buffer = allocate_floats(4096); }
  CHECK(storage_pool_stats().cached_bytes >= 4096 * 4);
  set_storage_pool_enabled(false);
  CHECK(storage_pool_stats().cached_bytes == 0);
  set_storage_pool_enabled(was);
}

TEST_CASE("a request takes the smallest cached buffer at most twice its size",
          "[autograd][storage]") {
  // Under AddressSanitizer the pool is off by default; the test turns it on for itself.
  const bool was = set_storage_pool_enabled(false);  // empties the cache
  set_storage_pool_enabled(true);
  const int64_t n = 1 << 20;  // distinct from the sizes other tests leave behind
  float* big = nullptr;
  float* bigger = nullptr;
  {
    const auto a = allocate_floats(n), b = allocate_floats(3 * n);
    big = a.get();
    bigger = b.get();
  }
  const StoragePoolStats before = storage_pool_stats();
  {
    const auto fit = allocate_floats(3 * n / 4);  // n fits (3/4 of it), 3n would be 4x
    CHECK(fit.get() == big);
    const auto second = allocate_floats(2 * n);  // 3n is 1.5x: taken
    CHECK(second.get() == bigger);
    const auto small = allocate_floats(n / 4);  // nothing within 2x is left: fresh
    CHECK(small.get() != big);
    const StoragePoolStats after = storage_pool_stats();
    CHECK(after.reused == before.reused + 2);
    CHECK(after.fresh == before.fresh + 1);
  }
  // Each buffer goes back under its own size: n again serves n exactly.
  { CHECK(allocate_floats(n).get() == big); }
  set_storage_pool_enabled(false);
  set_storage_pool_enabled(was);
}
