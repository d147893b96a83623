// Tests for the thread pool (autograd/kernels/parallel.h): every part runs exactly once at
// every thread count, however the part counts of consecutive jobs vary; loops are cut into the
// same chunks whatever the thread count; exceptions reach the caller after every part ended;
// nested and concurrent calls fall back to running inline; the pool survives long pauses (its
// workers go to sleep and must be woken) and thread-count changes while it works. A hang ends
// the test binary through a watchdog instead of stalling the run.
#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "autograd/kernels/parallel.h"
#include "tests/support/watchdog.h"

namespace {

using gf::kernels::num_threads;
using gf::kernels::parallel_for;
using gf::kernels::run_parts;
using gf::kernels::set_num_threads;
using gf::testing::Watchdog;
using namespace std::chrono_literals;

// Restores the default thread count when a test that changes it ends.
struct ThreadsGuard {
  ~ThreadsGuard() { set_num_threads(0); }
};

// For a parallel_for over n items of the given cost, the chunk each index fell in (its first
// index); checks that each index was visited exactly once.
std::vector<int64_t> chunk_starts(int64_t n, int64_t cost) {
  std::vector<std::atomic<int>> visits(static_cast<size_t>(n));
  std::vector<int64_t> starts(static_cast<size_t>(n), -1);
  parallel_for(n, cost, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      visits[static_cast<size_t>(i)].fetch_add(1);
      starts[static_cast<size_t>(i)] = begin;
    }
  });
  for (int64_t i = 0; i < n; ++i) REQUIRE(visits[static_cast<size_t>(i)].load() == 1);
  return starts;
}

}  // namespace

TEST_CASE("pool: parallel_for cuts a loop into the same chunks at every thread count",
          "[kernels][parallel]") {
  ThreadsGuard guard;
  struct Loop {
    int64_t n, cost;
  };
  const int64_t heavy = gf::kernels::kMinParallelWork;
  for (const Loop loop : {Loop{0, heavy}, Loop{1, heavy}, Loop{2, heavy}, Loop{5, heavy},
                          Loop{1000, heavy}, Loop{100000, 1}, Loop{1000, 1}}) {
    INFO("n " << loop.n << ", cost " << loop.cost);
    set_num_threads(1);
    const std::vector<int64_t> one_thread = chunk_starts(loop.n, loop.cost);
    // Chunks of sizes differing by at most one, in order, as many as chunk_count says.
    const int64_t chunks = gf::kernels::chunk_count(loop.n, loop.cost);
    for (int64_t c = 0; c < chunks; ++c)
      for (int64_t i = loop.n * c / chunks; i < loop.n * (c + 1) / chunks; ++i)
        REQUIRE(one_thread[static_cast<size_t>(i)] == loop.n * c / chunks);
    for (const int threads : {2, 3, 4, 8, 16}) {
      set_num_threads(threads);
      for (int run = 0; run < 5; ++run) REQUIRE(chunk_starts(loop.n, loop.cost) == one_thread);
    }
  }
  CHECK(gf::kernels::chunk_count(1000, 1) == 1);  // too little work to share
  CHECK(gf::kernels::chunk_count(1000, heavy) == gf::kernels::kMaxChunks);
  CHECK(gf::kernels::chunk_count(5, heavy) == 5);  // never more chunks than items
}

TEST_CASE("pool: parallel_for keeps small work on the calling thread", "[kernels][parallel]") {
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

TEST_CASE("pool: run_parts runs every part once, on the caller and the workers",
          "[kernels][parallel]") {
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

TEST_CASE("pool: run_parts inside a part runs its parts inline", "[kernels][parallel]") {
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

TEST_CASE("pool: workers wake up after they went to sleep", "[kernels][parallel]") {
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

TEST_CASE("pool: more threads than cores still wake, and run every part once",
          "[kernels][parallel]") {
  // 16 threads: on a machine of fewer cores, most workers never spin and are woken one at a
  // time into a free spinning place; a lost wake-up would hang here, a part run twice or not
  // at all would show in the counts.
  ThreadsGuard guard;
  set_num_threads(16);
  std::vector<std::atomic<int>> runs(16);
  for (int job = 0; job < 30; ++job) {
    std::this_thread::sleep_for(std::chrono::microseconds(3 * gf::kernels::kSpinMicroseconds));
    run_parts(16, [&](int part) { runs[static_cast<size_t>(part)].fetch_add(1); });
  }
  for (int job = 0; job < 5000; ++job)
    run_parts(1 + job % 16, [&](int part) { runs[static_cast<size_t>(part)].fetch_add(1); });
  for (int part = 0; part < 16; ++part) {
    int expected = 30;
    for (int job = 0; job < 5000; ++job) expected += part < 1 + job % 16 ? 1 : 0;
    CHECK(runs[static_cast<size_t>(part)].load() == expected);
  }
}

TEST_CASE("pool: two threads of a program can use the kernels at once", "[kernels][parallel]") {
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

TEST_CASE("pool: set_num_threads refuses a negative or huge count", "[kernels][parallel]") {
  ThreadsGuard guard;
  set_num_threads(2);
  REQUIRE_THROWS_WITH(set_num_threads(-1),
                      Catch::Contains("set_num_threads: -1 threads; give 1 to 256"));
  REQUIRE_THROWS_WITH(set_num_threads(gf::kernels::kMaxThreads + 1),
                      Catch::Contains("set_num_threads: 257 threads"));
  CHECK(num_threads() == 2);  // unchanged
}

TEST_CASE("pool: every part runs exactly once while part counts vary from job to job",
          "[kernels][parallel][stress]") {
  // Consecutive jobs with different part counts are where a claim could reach into the next
  // job: a thread still looking at job N must never run a part of job N + 1. Each part counts
  // its runs; after every job each count must be exactly 1 and no part may still be running.
  ThreadsGuard guard;
  constexpr int kJobs = 100000;
  for (const int threads : {3, 4, 8, 16}) {
    set_num_threads(threads);
    const int most_parts = threads + 2;  // parts may outnumber threads
    Watchdog watchdog(120s,
                      std::to_string(kJobs) + " jobs on " + std::to_string(threads) + " threads");
    std::vector<std::atomic<int>> runs(static_cast<size_t>(most_parts));
    std::atomic<int> running{0};
    int64_t wrong = 0;
    for (int job = 0; job < kJobs; ++job) {
      const int parts = 2 + job % (most_parts - 1);
      run_parts(parts, [&](int part) {
        running.fetch_add(1);
        runs[static_cast<size_t>(part)].fetch_add(1);
        running.fetch_sub(1);
      });
      if (running.load() != 0) ++wrong;
      for (int p = 0; p < most_parts; ++p) {
        const int expected = p < parts ? 1 : 0;
        if (runs[static_cast<size_t>(p)].exchange(0) != expected) ++wrong;
      }
    }
    INFO(threads << " threads");
    CHECK(wrong == 0);
  }
}

TEST_CASE("pool: an exception in a part reaches the caller once every part has ended",
          "[kernels][parallel]") {
  ThreadsGuard guard;
  Watchdog watchdog(60s, "the exception test");
  for (const int threads : {1, 2, 4, 8}) {
    set_num_threads(threads);
    INFO(threads << " threads");
    for (int repeat = 0; repeat < 200; ++repeat) {
      std::vector<std::atomic<int>> runs(8);
      std::atomic<int> running{0};
      std::string message;
      try {
        run_parts(8, [&](int part) {
          running.fetch_add(1);
          runs[static_cast<size_t>(part)].fetch_add(1);
          running.fetch_sub(1);
          if (part == 3 || part == 6) throw std::runtime_error("part " + std::to_string(part));
        });
      } catch (const std::runtime_error& e) {
        message = e.what();
      }
      REQUIRE((message == "part 3" || message == "part 6"));  // the first one caught
      REQUIRE(running.load() == 0);                           // nothing still runs
      for (const auto& r : runs) REQUIRE(r.load() == 1);      // and every part ran
    }
    // The pool is still usable, for split loops too.
    std::atomic<int64_t> total{0};
    parallel_for(1 << 16, 1, [&](int64_t begin, int64_t end) { total.fetch_add(end - begin); });
    CHECK(total.load() == 1 << 16);
  }
}

TEST_CASE("pool: an exception in a loop body reaches the caller of parallel_for",
          "[kernels][parallel]") {
  ThreadsGuard guard;
  set_num_threads(4);
  CHECK_THROWS_WITH(parallel_for(1 << 16, 1,
                                 [&](int64_t begin, int64_t) {
                                   if (begin == 0) throw std::invalid_argument("first chunk");
                                 }),
                    "first chunk");
  CHECK_THROWS_WITH(run_parts(gf::kernels::kMaxParts + 1, [](int) {}),
                    Catch::Contains("run_parts: 4096 parts; at most 4095"));
}

TEST_CASE("pool: set_num_threads may change the pool while another thread runs work",
          "[kernels][parallel]") {
  ThreadsGuard guard;
  Watchdog watchdog(60s, "changing the thread count under load");
  std::atomic<bool> stop{false};
  int64_t wrong = 0;
  std::thread worker([&] {
    const int64_t n = 1 << 15;
    std::vector<int> seen(static_cast<size_t>(n));
    while (!stop.load()) {
      std::fill(seen.begin(), seen.end(), 0);
      parallel_for(n, 4, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) ++seen[static_cast<size_t>(i)];
      });
      for (const int v : seen) wrong += v != 1;
    }
  });
  for (int change = 0; change < 200; ++change) {
    set_num_threads(1 + change % 8);
    std::this_thread::sleep_for(100us);
  }
  stop = true;
  worker.join();
  CHECK(wrong == 0);
}
