#include "autograd/storage.h"

#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <new>
#include <vector>

#include "autograd/sanitizers.h"

namespace gf {

namespace {

constexpr bool kPoolByDefault = !kAddressSanitizer;

constexpr size_t kAlignment = 64;                      // a cache line; also AVX-512's width
constexpr int64_t kMaxCachedBytes = int64_t{1} << 30;  // 1 GiB

// Sizes are rounded up to whole cache lines, so that tensors of nearly the same size share a
// free list and every buffer is a valid aligned_alloc size.
size_t rounded_bytes(int64_t count) {
  const size_t bytes = static_cast<size_t>(count) * sizeof(float);
  return (bytes + kAlignment - 1) / kAlignment * kAlignment;
}

// A request may be served by a cached buffer up to this factor larger. Exact sizes alone
// never reuse the activations that backward frees for the parameters' gradients, which have
// other shapes ([512, 512] against [800, 512] in copy-base), so every gradient was fresh memory
// on top of the cache: the peak grew by the size of the model.
constexpr size_t kLargestFit = 2;

class Pool {
 public:
  struct Buffer {
    float* data;
    size_t bytes;  // may exceed the request (kLargestFit)
  };

  Buffer take(size_t bytes) {
    if (enabled_.load(std::memory_order_relaxed)) {
      std::lock_guard lock(mutex_);
      // The smallest cached buffer that is large enough (best fit).
      auto it = free_.lower_bound(bytes);
      if (it != free_.end() && it->first <= kLargestFit * bytes) {
        const Buffer b{it->second.back(), it->first};
        it->second.pop_back();
        if (it->second.empty()) free_.erase(it);
        cached_bytes_ -= static_cast<int64_t>(b.bytes);
        ++reused_;
        return b;
      }
      ++fresh_;
    }
    void* p = std::aligned_alloc(kAlignment, bytes);
    if (p == nullptr) throw std::bad_alloc();
    return {static_cast<float*>(p), bytes};
  }

  void give_back(float* p, size_t bytes) {
    if (enabled_.load(std::memory_order_relaxed)) {
      std::lock_guard lock(mutex_);
      if (cached_bytes_ + static_cast<int64_t>(bytes) <= kMaxCachedBytes) {
        free_[bytes].push_back(p);
        cached_bytes_ += static_cast<int64_t>(bytes);
        return;
      }
    }
    std::free(p);
  }

  bool set_enabled(bool enabled) {
    const bool was = enabled_.exchange(enabled);
    if (!enabled) {  // hand back everything cached, so that "off" really is the plain version
      std::lock_guard lock(mutex_);
      for (auto& [bytes, buffers] : free_)
        for (float* p : buffers) std::free(p);
      free_.clear();
      cached_bytes_ = 0;
    }
    return was;
  }

  StoragePoolStats stats() {
    std::lock_guard lock(mutex_);
    return {cached_bytes_, reused_, fresh_};
  }

 private:
  std::atomic<bool> enabled_{kPoolByDefault};
  std::mutex mutex_;  // tensors are made and dropped on the kernels' worker threads too
  std::map<size_t, std::vector<float*>> free_;  // by size; no empty lists
  int64_t cached_bytes_ = 0, reused_ = 0, fresh_ = 0;
};

// Never destroyed: a tensor held in a static may be released after every other static is
// gone, and its deleter must still find the pool.
Pool& pool() {
  static Pool* instance = new Pool;
  return *instance;
}

}  // namespace

std::shared_ptr<float[]> allocate_floats(int64_t count) {
  const Pool::Buffer b = pool().take(rounded_bytes(count > 0 ? count : 1));
  return std::shared_ptr<float[]>(b.data,
                                  [bytes = b.bytes](float* q) { pool().give_back(q, bytes); });
}

StoragePoolStats storage_pool_stats() {
  return pool().stats();
}

bool set_storage_pool_enabled(bool enabled) {
  return pool().set_enabled(enabled);
}

}  // namespace gf
