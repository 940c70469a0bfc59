#include "result_pool.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>

namespace rxccl {

ResultPool& ResultPool::Shared() {
  // Never destroyed: buffers may be freed while the process exits.
  static ResultPool* pool = new ResultPool();
  return *pool;
}

ResultPool::ResultPool() : limit_(std::min(kPoolBytes, size_t(sysconf(_SC_PHYS_PAGES)) * size_t(sysconf(_SC_PAGESIZE)) / 8)) {}

bool ResultPool::Take(size_t bytes, ResultMapping& mapping) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto fit = kept_.lower_bound(bytes);
  if (fit == kept_.end() || fit->first / 2 > bytes) return false;
  mapping = fit->second;
  kept_bytes_ -= mapping.length;
  kept_.erase(fit);
  return true;
}

void ResultPool::Give(const ResultMapping& mapping) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (kept_bytes_ + mapping.length <= limit_) {
      kept_.emplace(mapping.capacity, mapping);
      kept_bytes_ += mapping.length;
      return;
    }
  }
  munmap(mapping.base, mapping.length);
}

size_t ResultPool::KeptBytes() {
  std::lock_guard<std::mutex> lock(mutex_);
  return kept_bytes_;
}

}  // namespace rxccl
