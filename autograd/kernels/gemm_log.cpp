// The log of gemm() calls and the replay that times them on their own (gemm_log.h).
#include "autograd/kernels/gemm_log.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <stdexcept>
#include <tuple>

#include "autograd/kernels/parallel.h"
#include "autograd/storage.h"

namespace gf::kernels {

std::atomic<bool> detail::gemm_log_on{false};

namespace {

// The fields that make two calls the same shape.
using ShapeKey =
    std::tuple<bool, bool, bool, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, bool>;

ShapeKey key_of(const GemmArgs& g, bool in_parallel_part) {
  return {g.trans_a, g.trans_b, g.accumulate, g.m, g.n, g.k, g.lda, g.ldb, g.ldc, in_parallel_part};
}

// What the one live log holds. Calls come from the pool's workers too, hence the mutex.
struct LogState {
  std::mutex mutex;
  bool alive = false;
  std::vector<LoggedGemm> shapes;
  std::map<ShapeKey, size_t> index;  // shape -> its place in shapes
};

LogState& state() {
  static LogState instance;
  return instance;
}

using Clock = std::chrono::steady_clock;

// The best time of one call of `shape`, on operands allocated for it and left in cache.
double best_seconds_of(const GemmArgs& shape, double budget_seconds) {
  GemmArgs args = shape;
  const LeadingDims ld = leading_dims(args);
  // Buffers from the pool tensors use, so aligned as a step's operands are. Values of a
  // trained model's size: C, accumulated into a million times over, stays finite, and nothing
  // comes near a subnormal.
  const auto filled = [](int64_t count, float value) {
    std::shared_ptr<float[]> buffer = allocate_floats(count);
    std::fill_n(buffer.get(), count, value);
    return buffer;
  };
  const auto a = filled((args.trans_a ? args.k : args.m) * ld.a, 0.5f);
  const auto b = filled((args.trans_b ? args.n : args.k) * ld.b, 0.25f);
  const auto c = filled(args.m * ld.c, 0.0f);
  args.a = a.get();
  args.b = b.get();
  args.c = c.get();

  // A call can take well under a microsecond: time batches of calls at least 20 us long, so
  // that the clock's own cost is noise. The batch size comes from a call with the operands
  // already in cache.
  const auto time_batch = [&](int64_t repeats) {
    const Clock::time_point start = Clock::now();
    for (int64_t r = 0; r < repeats; ++r) gemm(args);
    return std::chrono::duration<double>(Clock::now() - start).count() /
           static_cast<double>(repeats);
  };
  time_batch(1);  // brings the operands into cache
  const int64_t repeats =
      std::clamp<int64_t>(static_cast<int64_t>(20e-6 / std::max(time_batch(1), 1e-9)), 1, 10000);
  double best = time_batch(repeats);
  const Clock::time_point start = Clock::now();
  while (std::chrono::duration<double>(Clock::now() - start).count() < budget_seconds)
    best = std::min(best, time_batch(repeats));
  return best;
}

// Sets the pool's thread count for a scope and puts the earlier one back at its end, even when
// a replay throws.
class ThreadsForScope {
 public:
  explicit ThreadsForScope(int threads) : before_(num_threads()) { set_num_threads(threads); }
  ~ThreadsForScope() { set_num_threads(before_); }
  ThreadsForScope(const ThreadsForScope&) = delete;
  ThreadsForScope& operator=(const ThreadsForScope&) = delete;

 private:
  int before_;
};

}  // namespace

GemmLog::GemmLog() {
  LogState& s = state();
  std::lock_guard lock(s.mutex);
  if (s.alive) throw std::logic_error("GemmLog: another log is already recording gemm() calls");
  s.alive = true;
  s.shapes.clear();
  s.index.clear();
  detail::gemm_log_on.store(true);
}

GemmLog::~GemmLog() {
  LogState& s = state();
  std::lock_guard lock(s.mutex);
  detail::gemm_log_on.store(false);
  s.alive = false;
}

std::vector<LoggedGemm> GemmLog::shapes() const {
  LogState& s = state();
  std::lock_guard lock(s.mutex);
  return s.shapes;
}

void detail::log_gemm(const GemmArgs& args) {
  GemmArgs shape = args;
  shape.a = shape.b = nullptr;
  shape.c = nullptr;
  const bool in_part = in_parallel_part();
  LogState& s = state();
  std::lock_guard lock(s.mutex);
  if (!s.alive) return;  // the log ended after gemm() looked
  const auto [place, added] = s.index.try_emplace(key_of(shape, in_part), s.shapes.size());
  if (added) s.shapes.push_back({.shape = shape, .called_in_parallel_part = in_part});
  ++s.shapes[place->second].calls;
}

double products_alone_seconds(const std::vector<LoggedGemm>& shapes, double seconds_per_shape) {
  // A call from inside a part ran on that part's thread alone (a nested job runs its parts one
  // after another on the thread that started it): timed on one thread, and divided by the
  // threads that ran such parts side by side.
  const double side_by_side = static_cast<double>(concurrent_threads());
  double seconds = 0;
  for (const bool in_part : {false, true}) {
    const ThreadsForScope threads(in_part ? 1 : num_threads());
    for (const LoggedGemm& logged : shapes)
      if (logged.called_in_parallel_part == in_part && logged.calls > 0)
        seconds += best_seconds_of(logged.shape, seconds_per_shape) *
                   static_cast<double>(logged.calls) / (in_part ? side_by_side : 1.0);
  }
  return seconds;
}

}  // namespace gf::kernels
