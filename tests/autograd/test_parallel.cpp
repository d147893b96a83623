// Tests for the thread pool (autograd/kernels/parallel.h): every index is visited once, in the
// same chunks every time; nested and concurrent calls fall back to running inline; the pool
// survives long pauses (its workers go to sleep and must be woken) and thread-count changes.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <thread>
#include <vector>

#include "autograd/kernels/parallel.h"

namespace {

using gf::kernels::num_threads;
using gf::kernels::parallel_for;
using gf::kernels::run_parts;
using gf::kernels::set_num_threads;

// Restores the default thread count when a test that changes it ends.
struct ThreadsGuard {
  ~ThreadsGuard() { set_num_threads(0); }
};

// Records, for a parallel_for over n items heavy enough to be split, which chunk each index
// fell in, and checks that each index was visited exactly once.
std::vector<int64_t> chunk_starts(int64_t n) {
  std::vector<std::atomic<int>> visits(static_cast<size_t>(n));
  std::vector<int64_t> starts(static_cast<size_t>(n), -1);
  parallel_for(n, gf::kernels::kMinParallelWork, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      visits[static_cast<size_t>(i)].fetch_add(1);
      starts[static_cast<size_t>(i)] = begin;
    }
  });
  for (int64_t i = 0; i < n; ++i) REQUIRE(visits[static_cast<size_t>(i)].load() == 1);
  return starts;
}

}  // namespace

TEST_CASE("parallel_for visits every index once, in the same chunks every run",
          "[kernels][parallel]") {
  ThreadsGuard guard;
  for (const int threads : {1, 2, 3}) {
    set_num_threads(threads);
    REQUIRE(num_threads() == threads);
    for (const int64_t n : {0, 1, 2, 5, 1000}) {
      INFO("threads " << threads << ", n " << n);
      const std::vector<int64_t> first = chunk_starts(n);
      for (int run = 0; run < 20; ++run) REQUIRE(chunk_starts(n) == first);
      // n items in min(n, threads) chunks of sizes differing by at most one, in order.
      const int64_t chunks = std::min<int64_t>(n, threads);
      for (int64_t c = 0; c < chunks; ++c)
        for (int64_t i = n * c / chunks; i < n * (c + 1) / chunks; ++i)
          REQUIRE(first[static_cast<size_t>(i)] == n * c / chunks);
    }
  }
}

TEST_CASE("parallel_for keeps small work on the calling thread", "[kernels][parallel]") {
  ThreadsGuard guard;
  set_num_threads(2);
  const std::thread::id caller = std::this_thread::get_id();
  int calls = 0;
  parallel_for(100, 1, [&](int64_t begin, int64_t end) {
    ++calls;  // a data race if a second thread took part
    CHECK(std::this_thread::get_id() == caller);
    CHECK(begin == 0);
    CHECK(end == 100);
  });
  CHECK(calls == 1);
}

TEST_CASE("run_parts runs every part once, on the caller and the workers", "[kernels][parallel]") {
  ThreadsGuard guard;
  set_num_threads(3);
  const std::thread::id caller = std::this_thread::get_id();
  std::vector<std::atomic<int>> runs(3);
  std::atomic<int> by_caller{0}, by_workers{0};
  // At least 2000 jobs, and more until a worker has taken part (on a loaded machine it may
  // not get a core at once), for at most 10 s.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  int jobs = 0;
  while (jobs < 2000 || (by_workers.load() == 0 && std::chrono::steady_clock::now() < give_up)) {
    run_parts(3, [&](int part) {
      runs[static_cast<size_t>(part)].fetch_add(1);
      // Enough work that a spinning worker gets to claim a part before the caller is done.
      volatile float sink = 0.0f;
      for (int i = 0; i < 2000; ++i) sink = sink + 1.0f;
      (std::this_thread::get_id() == caller ? by_caller : by_workers).fetch_add(1);
    });
    ++jobs;
  }
  for (const auto& r : runs) CHECK(r.load() == jobs);
  CHECK(by_caller.load() + by_workers.load() == 3 * jobs);
  CHECK(by_caller.load() > 0);
  CHECK(by_workers.load() > 0);  // the workers took part (parts they claimed ran once too)
}

TEST_CASE("run_parts inside a part runs its parts inline", "[kernels][parallel]") {
  ThreadsGuard guard;
  set_num_threads(2);
  std::vector<std::vector<int>> inner(2);
  std::vector<std::thread::id> outer_thread(2), inner_thread(4);
  run_parts(2, [&](int outer) {
    outer_thread[static_cast<size_t>(outer)] = std::this_thread::get_id();
    run_parts(2, [&](int part) {
      inner[static_cast<size_t>(outer)].push_back(part);  // in order, on this thread
      inner_thread[static_cast<size_t>(2 * outer + part)] = std::this_thread::get_id();
    });
  });
  for (int outer = 0; outer < 2; ++outer) {
    CHECK(inner[static_cast<size_t>(outer)] == std::vector<int>{0, 1});
    CHECK(inner_thread[static_cast<size_t>(2 * outer)] == outer_thread[static_cast<size_t>(outer)]);
    CHECK(inner_thread[static_cast<size_t>(2 * outer + 1)] ==
          outer_thread[static_cast<size_t>(outer)]);
  }
}

TEST_CASE("the pool wakes its workers after they went to sleep", "[kernels][parallel]") {
  // Pauses far longer than the spin window send the worker to sleep before every job; a lost
  // wake-up would hang here. Then many jobs back to back, the common case in training.
  ThreadsGuard guard;
  set_num_threads(2);
  std::atomic<int64_t> total{0};
  for (int job = 0; job < 30; ++job) {
    std::this_thread::sleep_for(std::chrono::microseconds(3 * gf::kernels::kSpinMicroseconds));
    run_parts(2, [&](int part) { total.fetch_add(part + 1); });
  }
  CHECK(total.load() == 30 * 3);
  total = 0;
  for (int job = 0; job < 20000; ++job) run_parts(2, [&](int part) { total.fetch_add(part + 1); });
  CHECK(total.load() == 20000 * 3);
}

TEST_CASE("two threads of a program can use the kernels at once", "[kernels][parallel]") {
  ThreadsGuard guard;
  set_num_threads(2);
  const int64_t n = 1 << 16;
  auto sum_of_indices = [&] {
    std::vector<int64_t> partial(static_cast<size_t>(n), 0);
    int64_t total = 0;
    for (int repeat = 0; repeat < 200; ++repeat) {
      parallel_for(n, 1, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) partial[static_cast<size_t>(i)] = i;
      });
      for (const int64_t v : partial) total += v;
    }
    return total;
  };
  int64_t a = 0, b = 0;
  std::thread other([&] { a = sum_of_indices(); });
  b = sum_of_indices();
  other.join();
  const int64_t expected = 200 * (n * (n - 1) / 2);
  CHECK(a == expected);
  CHECK(b == expected);
}

TEST_CASE("set_num_threads refuses a negative count", "[kernels][parallel]") {
  ThreadsGuard guard;
  set_num_threads(2);
  REQUIRE_THROWS_WITH(set_num_threads(-1),
                      Catch::Contains("set_num_threads: -1 threads; give 1 or more"));
  CHECK(num_threads() == 2);  // unchanged
}
