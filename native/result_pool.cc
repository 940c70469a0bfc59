#include "result_pool.h"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <iterator>
#include <system_error>
#include <thread>

namespace rxccl {

ResultPool& ResultPool::Shared() {
  // Never destroyed: buffers may be freed while the process exits, and the filler may still run.
  static ResultPool* pool = new ResultPool();
  return *pool;
}

ResultPool::ResultPool() : limit_(std::min(kPoolBytes, size_t(sysconf(_SC_PHYS_PAGES)) * size_t(sysconf(_SC_PAGESIZE)) / 8)) {}

bool ResultPool::Take(size_t bytes, ResultMapping& mapping) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto fit = kept_.lower_bound(bytes);
  const bool found = fit != kept_.end() && fit->first / 2 <= bytes;
  if (found) {
    // Of the mappings of that capacity, the one kept last: its bytes the likeliest still cached.
    fit = std::prev(kept_.upper_bound(fit->first));
    mapping = fit->second.mapping;
    kept_bytes_ -= mapping.length;
    kept_.erase(fit);
  }
  Ahead(bytes);
  return found;
}

size_t ResultPool::Ready(size_t bytes) const {
  size_t ready = std::count_if(asked_.begin(), asked_.end(), [bytes](size_t asked) { return asked == bytes; });
  for (auto fit = kept_.lower_bound(bytes); fit != kept_.end() && fit->first / 2 <= bytes; ++fit) ready++;
  return ready;
}

void ResultPool::Ahead(size_t bytes) {
  const size_t length = MappedLength(bytes);
  // Half the pool at most being made: a burst of sizes never asked for again would otherwise crowd
  // out what the pool keeps for the sizes in use.
  if (Ready(bytes) > 0 || asked_bytes_ + length > limit_ / 2) return;
  asked_.push_back(bytes);
  asked_bytes_ += length;
  if (filling_) return;
  filling_ = true;
  try {
    std::thread([this] { Fill(); }).detach();
  } catch (const std::system_error&) {
    // No thread to be had (a pids limit, RLIMIT_NPROC): the result is made when asked, as without
    // the pool, and a later Take may try again. An exception here would end the process.
    asked_.pop_back();
    asked_bytes_ -= length;
    filling_ = false;
  }
}

void ResultPool::Fill() {
  pthread_setname_np(pthread_self(), "rxccl-results");
  std::unique_lock<std::mutex> lock(mutex_);
  while (!asked_.empty()) {
    const size_t bytes = asked_.front();
    const size_t release = release_;
    lock.unlock();
    ResultMapping mapping;
    const bool made = MapResult(bytes, mapping);
    lock.lock();
    // (Release may have emptied the queue meanwhile: then this one is no longer in it.)
    if (release == release_) {
      asked_.pop_front();
      asked_bytes_ -= MappedLength(bytes);
    }
    if (!made) continue;
    std::vector<ResultMapping> unmap;
    if (!Keep(mapping, release, unmap)) unmap.push_back(mapping);
    lock.unlock();
    for (const ResultMapping& gone : unmap) UnmapResult(gone);
    lock.lock();
  }
  filling_ = false;
}

void ResultPool::Give(const ResultMapping& mapping) {
  std::vector<ResultMapping> unmap;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!Keep(mapping, release_, unmap)) unmap.push_back(mapping);
  }
  for (const ResultMapping& gone : unmap) UnmapResult(gone);
}

bool ResultPool::Keep(const ResultMapping& mapping, size_t release, std::vector<ResultMapping>& unmap) {
  if (release != release_ || mapping.length > limit_) return false;
  while (kept_bytes_ + mapping.length > limit_) {
    const auto oldest = std::min_element(kept_.begin(), kept_.end(), [](const auto& a, const auto& b) { return a.second.order < b.second.order; });
    unmap.push_back(oldest->second.mapping);
    kept_bytes_ -= oldest->second.mapping.length;
    kept_.erase(oldest);
  }
  kept_.emplace(mapping.capacity, Kept{mapping, ++kept_count_});
  kept_bytes_ += mapping.length;
  return true;
}

void ResultPool::Release() {
  std::multimap<size_t, Kept> kept;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    kept.swap(kept_);
    kept_bytes_ = 0;
    asked_.clear();
    asked_bytes_ = 0;
    release_++;
  }
  for (const auto& [capacity, entry] : kept) UnmapResult(entry.mapping);
}

size_t ResultPool::KeptBytes() {
  std::lock_guard<std::mutex> lock(mutex_);
  return kept_bytes_;
}

}  // namespace rxccl
