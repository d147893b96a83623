#include "autograd/storage.h"

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

namespace gf {

namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kPoolByDefault = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kPoolByDefault = false;
#else
constexpr bool kPoolByDefault = true;
#endif
#else
constexpr bool kPoolByDefault = true;
#endif

constexpr size_t kAlignment = 64;                      // a cache line; also AVX-512's width
constexpr int64_t kMaxCachedBytes = int64_t{1} << 30;  // 1 GiB

// Sizes are rounded up to whole cache lines, so that tensors of nearly the same size share a
// free list and every buffer is a valid aligned_alloc size.
size_t rounded_bytes(int64_t count) {
  const size_t bytes = static_cast<size_t>(count) * sizeof(float);
  return (bytes + kAlignment - 1) / kAlignment * kAlignment;
}

class Pool {
 public:
  float* take(size_t bytes) {
    if (enabled_.load(std::memory_order_relaxed)) {
      std::lock_guard lock(mutex_);
      auto it = free_.find(bytes);
      if (it != free_.end() && !it->second.empty()) {
        float* p = it->second.back();
        it->second.pop_back();
        cached_bytes_ -= static_cast<int64_t>(bytes);
        ++reused_;
        return p;
      }
      ++fresh_;
    }
    void* p = std::aligned_alloc(kAlignment, bytes);
    if (p == nullptr) throw std::bad_alloc();
    return static_cast<float*>(p);
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
  std::unordered_map<size_t, std::vector<float*>> free_;
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
  const size_t bytes = rounded_bytes(count > 0 ? count : 1);
  float* p = pool().take(bytes);
  return std::shared_ptr<float[]>(p, [bytes](float* q) { pool().give_back(q, bytes); });
}

StoragePoolStats storage_pool_stats() {
  return pool().stats();
}

bool set_storage_pool_enabled(bool enabled) {
  return pool().set_enabled(enabled);
}

}  // namespace gf
