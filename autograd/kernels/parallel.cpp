// The worker pool behind run_parts and parallel_for (see parallel.h for why it exists).
//
// One job at a time. A job is a fixed list of parts (the static split, so the same bits);
// which thread computes a part is decided at run time: every thread, the caller included,
// claims the next unclaimed part until none is left. The caller claims first and never waits
// for a worker to arrive, only for parts a worker has already claimed. So a worker that has
// lost its core to another program, or is slow to wake, costs nothing: the caller does its
// parts. (With a fixed part per thread, every loop would wait for that worker.)
//
// `claim_` holds the job's number in its high 32 bits and the next part to hand out in its
// low 32: a thread claims part p by a compare-and-swap from (job, p) to (job, p + 1), which
// fails if the caller has moved on to another job meanwhile. Waiting is "spin, then sleep" on
// both sides (Pool::wait_until).
#include "autograd/kernels/parallel.h"

#include <fmt/format.h>
#include <immintrin.h>
#include <xmmintrin.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

namespace gf::kernels {

void flush_denormals_on_this_thread() {
  thread_local bool done = false;
  if (done) return;
  // MXCSR bit 15 (FTZ) flushes subnormal results to zero; bit 6 (DAZ) reads subnormal
  // inputs as zero.
  _mm_setcsr(_mm_getcsr() | 0x8040u);
  done = true;
}

namespace {

int default_threads() {
  if (const char* env = std::getenv("OMP_NUM_THREADS")) {
    const int n = std::atoi(env);
    if (n > 0) return n;
  }
  const unsigned cores = std::thread::hardware_concurrency();
  return cores > 0 ? static_cast<int>(cores) : 1;
}

// True on a thread while it runs a part: a run_parts from there runs inline.
thread_local bool inside_part = false;

class Pool {
 public:
  Pool() : threads_(default_threads()) { start_workers(); }
  ~Pool() { stop_workers(); }

  int threads() const { return threads_; }

  void set_threads(int threads) {
    if (threads < 0)
      throw std::invalid_argument(
          fmt::format("set_num_threads: {} threads; give 1 or more (0 for the default)", threads));
    const int wanted = threads == 0 ? default_threads() : threads;
    std::lock_guard lock(run_mutex_);
    if (wanted == threads_) return;  // keep the running workers
    stop_workers();
    threads_ = wanted;
    start_workers();
  }

  void run(int parts, detail::PartRef part) {
    if (parts <= 0) return;
    std::unique_lock lock(run_mutex_, std::try_to_lock);
    if (parts == 1 || inside_part || !lock.owns_lock() || parts > threads_) {
      for (int p = 0; p < parts; ++p) run_part(part, p);
      return;
    }
    job_ = part;
    job_parts_.store(parts);
    parts_done_.store(0);
    ++job_number_;
    claim_.store(job_number_ << 32);  // publishes the job: part 0 is next
    wake_sleepers();
    work_on(job_number_);
    wait_until([&] { return parts_done_.load() == parts; });
  }

 private:
  static void run_part(detail::PartRef part, int p) {
    flush_denormals_on_this_thread();
    const bool outer = inside_part;
    inside_part = true;
    part.call(part.callable, p);
    inside_part = outer;
  }

  // Claims and runs parts of job `job` until none is left (or the job is over).
  void work_on(uint64_t job) {
    for (;;) {
      uint64_t claim = claim_.load();
      if (claim >> 32 != job) return;
      const auto p = static_cast<int>(claim & 0xffffffffu);
      const int parts = job_parts_.load();
      if (p >= parts) return;
      if (!claim_.compare_exchange_weak(claim, claim + 1)) continue;
      // Part p of this job is ours and not done, so the caller is still inside run() and
      // job_ and parts are this job's.
      run_part(job_, p);
      if (parts_done_.fetch_add(1) + 1 == parts) wake_sleepers();
    }
  }

  // Polls done() with the CPU's pause hint for up to kSpinMicroseconds, then sleeps until a
  // wake_sleepers() call finds it true. The sleep is rare (only after a pause in the work),
  // so it may take a lock; the hand-off between jobs of one step never does.
  template <typename Done>
  void wait_until(Done done) {
    using Clock = std::chrono::steady_clock;
    const auto give_up = Clock::now() + std::chrono::microseconds(kSpinMicroseconds);
    for (int polls = 1; !done(); ++polls) {
      if (polls % 64 == 0 && Clock::now() > give_up) {
        // Count ourselves as a sleeper *before* the last look at done(): a waker that changed
        // the state after that look then sees the count and takes the lock (all seq_cst).
        sleepers_.fetch_add(1);
        {
          std::unique_lock lock(sleep_mutex_);
          wake_.wait(lock, done);
        }
        sleepers_.fetch_sub(1);
        return;
      }
      _mm_pause();
    }
  }

  // Called after every change a waiter may be waiting for.
  void wake_sleepers() {
    if (sleepers_.load() == 0) return;
    { std::lock_guard lock(sleep_mutex_); }  // a sleeper is either before its check or asleep
    wake_.notify_all();
  }

  // `job` is the job number when the worker was made: read in the new thread, a job (or the
  // stop) published before the thread first ran would be missed.
  void worker(uint64_t job) {
    for (;;) {
      wait_until([&] { return claim_.load() >> 32 != job; });
      if (stopping_.load()) return;
      job = claim_.load() >> 32;
      work_on(job);
    }
  }

  void start_workers() {
    stopping_.store(false);
    for (int index = 1; index < threads_; ++index)
      workers_.emplace_back(&Pool::worker, this, job_number_);
  }

  void stop_workers() {
    stopping_.store(true);
    claim_.store(++job_number_ << 32);  // a new job number wakes every worker, which then sees
    wake_sleepers();                    // stopping_
    for (std::thread& w : workers_) w.join();
    workers_.clear();
  }

  int threads_;
  std::vector<std::thread> workers_;
  std::mutex run_mutex_;            // one job at a time; set_threads waits for it too
  uint64_t job_number_ = 0;         // written by the thread in run() (or set_threads) only
  std::atomic<uint64_t> claim_{0};  // job number << 32 | next part to hand out
  std::atomic<int> job_parts_{0};
  std::atomic<int> parts_done_{0};
  std::atomic<bool> stopping_{false};
  std::atomic<int> sleepers_{0};  // threads in (or about to enter) wake_.wait
  std::mutex sleep_mutex_;
  std::condition_variable wake_;
  detail::PartRef job_{};
};

Pool& pool() {
  static Pool instance;
  return instance;
}

}  // namespace

int num_threads() {
  return pool().threads();
}

void set_num_threads(int threads) {
  pool().set_threads(threads);
}

void detail::run_parts(int parts, PartRef part) {
  pool().run(parts, part);
}

}  // namespace gf::kernels
