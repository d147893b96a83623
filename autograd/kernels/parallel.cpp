// The worker pool behind run_parts and parallel_for (see parallel.h for why it exists).
//
// One job at a time. A job is a fixed list of parts; which thread computes a part is decided
// at run time: every thread, the caller included, claims the next unclaimed part until none
// is left. The caller claims first and never waits for a worker to arrive, only for parts a
// worker has already claimed. So a worker that has lost its core to another program, or is
// slow to wake, costs nothing: the caller does its parts.
//
// Everything a thread needs to claim a part is in one atomic word, `claim_`:
//
//     bits 63..24  the job's number     bits 23..12  its part count     bits 11..0  next part
//
// A job with no parts is the order to stop: run() never publishes one, stop_workers() does.
// A worker learns both what to do and whether to stop from one load of this word; reading the
// order from a second variable would let a worker see "no stop" for one job and then take
// the stop's job number as the next job to wait past, and so sleep through the stop.
//
// A thread claims part p by a compare-and-swap from (job, parts, p) to (job, parts, p + 1),
// with p < parts read from the same word. The swap fails if anything changed, in particular
// if the caller has moved on to another job, so a claim can never reach into the next job.
// Once a thread holds a part of the current job, that job cannot end before the part does, so
// the job's other fields (`job_`, the error slot) stay this job's while the part runs: the
// caller wrote them before it published the job with its release store to claim_, and rewrites
// them only after every part has been counted in parts_done_.
//
// Waiting is "spin, then sleep" on both sides (Pool::wait_until), with one limit: at most one
// worker fewer than the cores the process may run on is awake (spinning or working) at a time.
// With more threads than cores (--threads 16 on two, as a learner's setting may be copied to a
// smaller machine), a spinning worker holds a core the caller or a worker with a part needs,
// and the step waits for the scheduler's time slice, milliseconds each time: --threads 16 ran
// a copy-tiny step about 5 times slower than --threads 2 on two cores. So a worker takes one of
// the awake places when it wakes and gives it back when it goes to sleep; one that finds no
// place free after a job sleeps at once, and publishing a job wakes only as many sleepers as
// there are free places. In a long run of jobs the same few workers stay awake and the others
// asleep. Every thread can still take a part, so the results stay those of any other thread
// count; libgomp also stops spinning when a team has more threads than available CPUs.
#include "autograd/kernels/parallel.h"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "autograd/kernels/cpu.h"

#if defined(__linux__)
#include <sched.h>
#endif

namespace gf::kernels {
namespace {

// The cores this process may run on: its CPU affinity mask (taskset, a container's cpuset),
// else every core the machine has.
int usable_cores() {
#if defined(__linux__)
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
#endif
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

int default_threads() {
  int n = 0;
  if (const char* env = std::getenv("OMP_NUM_THREADS")) n = std::atoi(env);
  if (n <= 0) n = usable_cores();
  return std::clamp(n, 1, kMaxThreads);
}

// True on a thread while it runs a part: a run_parts from there runs inline.
thread_local bool inside_part = false;

// The fields of the claim word (see the top of this file).
constexpr int kPartBits = 12;
static_assert(kMaxParts < (1 << kPartBits));
constexpr uint64_t kPartMask = (uint64_t{1} << kPartBits) - 1;
constexpr uint64_t pack(uint64_t job, uint64_t parts, uint64_t next) {
  return job << (2 * kPartBits) | parts << kPartBits | next;
}
constexpr uint64_t job_of(uint64_t claim) {
  return claim >> (2 * kPartBits);
}
constexpr int parts_of(uint64_t claim) {
  return static_cast<int>(claim >> kPartBits & kPartMask);
}
constexpr int next_of(uint64_t claim) {
  return static_cast<int>(claim & kPartMask);
}

class Pool {
 public:
  Pool() : threads_(default_threads()) { start_workers(); }
  ~Pool() { stop_workers(); }

  int threads() const { return threads_.load(); }
  int concurrent_threads() const { return std::min(threads_.load(), usable_cores_); }

  void set_threads(int threads) {
    if (threads < 0 || threads > kMaxThreads)
      throw std::invalid_argument(fmt::format(
          "set_num_threads: {} threads; give 1 to {} (0 for the default)", threads, kMaxThreads));
    const int wanted = threads == 0 ? default_threads() : threads;
    std::lock_guard lock(run_mutex_);       // waits for a job another thread is running
    if (wanted == threads_.load()) return;  // keep the running workers
    stop_workers();
    threads_.store(wanted);
    start_workers();
  }

  void run(int parts, detail::PartRef part) {
    if (parts <= 0) return;
    if (parts > kMaxParts)
      throw std::invalid_argument(
          fmt::format("run_parts: {} parts; at most {} in one call", parts, kMaxParts));
    FlushDenormals flushed;
    if (parts == 1 || inside_part || threads_.load() == 1) return run_inline(parts, part);
    std::unique_lock lock(run_mutex_, std::try_to_lock);
    if (!lock.owns_lock()) return run_inline(parts, part);  // another thread has the pool

    job_ = part;
    first_error_ = nullptr;
    parts_done_.store(0);
    ++job_number_;
    claim_.store(pack(job_number_, static_cast<uint64_t>(parts), 0));  // publishes the job
    wake_workers();
    work_on_current_job();
    wait_until([&] { return parts_done_.load() == parts; }, caller_asleep_, Spin::kCaller);
    if (first_error_) std::rethrow_exception(std::exchange(first_error_, nullptr));
  }

 private:
  // Runs part p, keeping its exception (if it is the job's first) instead of letting it out.
  void run_part(detail::PartRef part, int p, std::exception_ptr& first_error) {
    const bool outer = inside_part;
    inside_part = true;
    try {
      part.call(part.callable, p);
    } catch (...) {
      std::lock_guard lock(error_mutex_);
      if (!first_error) first_error = std::current_exception();
    }
    inside_part = outer;
  }

  void run_inline(int parts, detail::PartRef part) {
    std::exception_ptr first_error;
    for (int p = 0; p < parts; ++p) run_part(part, p, first_error);
    if (first_error) std::rethrow_exception(first_error);
  }

  // Claims and runs parts of the current job until none is left.
  void work_on_current_job() {
    uint64_t claim = claim_.load();
    for (;;) {
      const int parts = parts_of(claim), p = next_of(claim);
      if (p >= parts) return;
      if (!claim_.compare_exchange_weak(claim, claim + 1)) continue;  // claim now holds the new
      run_part(job_, p, first_error_);                                // value: look again
      if (parts_done_.fetch_add(1) + 1 == parts) wake_caller();
      claim = claim_.load();
    }
  }

  // How a thread waits: the caller spins; a worker in an awake place spins, and one past the
  // places sleeps at once.
  enum class Spin { kCaller, kWorker, kNo };

  // Polls done() with the CPU's pause hint for up to kSpinMicroseconds, unless spin is kNo,
  // then sleeps until a wake-up finds done() true. `asleep` counts the sleepers of its kind,
  // for the waker to read. A worker gives its awake place back when it sleeps and takes one
  // again when it wakes. The sleep is rare (only after a pause in the work), so it may take a
  // lock; the hand-off between jobs of one step never does.
  template <typename Done>
  void wait_until(Done done, std::atomic<int>& asleep, Spin spin) {
    using Clock = std::chrono::steady_clock;
    const auto give_up = Clock::now() + std::chrono::microseconds(kSpinMicroseconds);
    for (int polls = 1; spin != Spin::kNo; ++polls) {
      if (done()) return;
      if (polls % 64 == 0 && Clock::now() > give_up) break;
      cpu_relax();
    }
    // Count ourselves as a sleeper, and only then give the place back and take the last look
    // at done(): a waker that changed the state after that look then sees the count and takes
    // the lock, and one that read the places before we gave ours back changed the state
    // before our look (all seq_cst).
    const bool worker = spin != Spin::kCaller;
    asleep.fetch_add(1);
    if (worker) awake_.fetch_sub(1);
    {
      std::unique_lock lock(sleep_mutex_);
      wake_.wait(lock, done);
    }
    if (worker) awake_.fetch_add(1);
    asleep.fetch_sub(1);
  }

  // The counts are read with a read-modify-write that adds 0, not a load. The change the
  // waiter waits for (a seq_cst store or read-modify-write) must be visible before we read
  // its count, or a waiter may count itself, look at the old state and sleep while we see no
  // sleeper. C++ promises that order for a seq_cst store followed by a seq_cst load, and ARM
  // and x86 CPUs keep it, but qemu-user 7.2 does not: running ARM code on an x86 host, a
  // store-release followed by a load-acquire let both threads of the classic
  // store-buffering test read the old value in 15 to 39 of 200,000 rounds. An RMW always
  // reads the last value in the variable's order, and under qemu the same test never read an
  // old one (0 of 200,000). A fence would do too, but ThreadSanitizer cannot check fences (GCC
  // refuses to build it).
  static int read_count(std::atomic<int>& count) { return count.fetch_add(0); }

  // After publishing a job: wakes sleeping workers into the free awake places, one each.
  void wake_workers() {
    const int free_places = awake_places_ - read_count(awake_);
    if (free_places <= 0 || read_count(workers_asleep_) == 0) return;
    { std::lock_guard lock(sleep_mutex_); }  // a sleeper is either before its check or asleep
    // Only workers wait for a job here: the caller, the one thread that publishes, is not
    // asleep while it does.
    for (int i = 0; i < free_places; ++i) wake_.notify_one();
  }

  // After the job's last part: wakes the caller if it has gone to sleep waiting. notify_all,
  // since sleeping workers share the condition variable.
  void wake_caller() {
    if (read_count(caller_asleep_) == 0) return;
    { std::lock_guard lock(sleep_mutex_); }
    wake_.notify_all();
  }

  // `job` is the job number when the worker was made: read in the new thread, a job (or the
  // stop) published before the thread first ran would be missed.
  void worker(uint64_t job) {
    flush_denormals_for_good();
    awake_.fetch_add(1);
    for (;;) {
      uint64_t claim = 0;
      // Spin if this worker's place is within the limit (see the top of this file), or sleep
      // at once; a worker woken for one job may have pushed the count past it.
      const bool spin = read_count(awake_) <= awake_places_;
      wait_until(
          [&] {
            claim = claim_.load();
            return job_of(claim) != job;
          },
          workers_asleep_, spin ? Spin::kWorker : Spin::kNo);
      if (parts_of(claim) == 0) {  // the order to stop (see the top of this file)
        awake_.fetch_sub(1);
        return;
      }
      job = job_of(claim);
      work_on_current_job();
    }
  }

  void start_workers() {
    awake_places_ = std::min(threads_.load(), usable_cores_) - 1;
    for (int index = 1; index < threads_.load(); ++index)
      workers_.emplace_back(&Pool::worker, this, job_number_);
  }

  void stop_workers() {
    claim_.store(pack(++job_number_, 0, 0));  // a new job number (with no parts) wakes every
    { std::lock_guard lock(sleep_mutex_); }   // worker, which then returns
    wake_.notify_all();
    for (std::thread& w : workers_) w.join();
    workers_.clear();
  }

  std::atomic<int> threads_;
  const int usable_cores_ = usable_cores();
  std::vector<std::thread> workers_;
  std::mutex run_mutex_;            // one job at a time; set_threads waits for it too
  uint64_t job_number_ = 0;         // written only by the thread holding run_mutex_
  std::atomic<uint64_t> claim_{0};  // job number | part count | next part to hand out
  std::atomic<int> parts_done_{0};
  // Threads in (or about to enter) wake_.wait: the caller waiting for parts, workers for a job.
  std::atomic<int> caller_asleep_{0}, workers_asleep_{0};
  // Workers awake (spinning or working), and how many may be: one fewer than the cores.
  std::atomic<int> awake_{0};
  int awake_places_ = 0;  // written only while no worker runs
  std::mutex sleep_mutex_;
  std::condition_variable wake_;
  // The current job: written by the caller before it publishes the job, read by the threads
  // that hold one of its parts (see the top of this file).
  detail::PartRef job_{};
  std::exception_ptr first_error_;
  std::mutex error_mutex_;  // guards first_error_ while parts run
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

int concurrent_threads() {
  return pool().concurrent_threads();
}

bool in_parallel_part() {
  return inside_part;
}

void detail::run_parts(int parts, PartRef part) {
  pool().run(parts, part);
}

}  // namespace gf::kernels
