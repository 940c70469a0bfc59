#include "thread_pool.h"

#include <atomic>
#include <cstdlib>
#include <thread>

namespace rxccl {

struct ThreadPool::Batch {
  const std::function<void(size_t)>* body;
  size_t pieces;
  std::atomic<size_t> next{0};
  std::mutex mutex;
  std::condition_variable finished;
  size_t done = 0;

  Batch(const std::function<void(size_t)>* body, size_t pieces) : body(body), pieces(pieces) {}

  // Claims pieces until none are left. `body` is only dereferenced for a claimed piece, and the
  // owner waits for every claimed piece, so a late helper never touches a finished caller's frame.
  void Work() {
    for (size_t piece = next.fetch_add(1); piece < pieces; piece = next.fetch_add(1)) {
      (*body)(piece);
      std::lock_guard<std::mutex> lock(mutex);
      if (++done == pieces) finished.notify_all();
    }
  }
};

size_t KernelThreads() {
  static const size_t threads = [] {
    if (const char* text = std::getenv("RXCCL_KERNEL_THREADS")) {
      char* end = nullptr;
      const long value = std::strtol(text, &end, 10);
      if (end != text && *end == '\0' && value >= 1 && value <= 1024) return size_t(value);
    }
    const unsigned hardware = std::thread::hardware_concurrency();
    return size_t(hardware == 0 ? 1 : hardware);
  }();
  return threads;
}

ThreadPool& ThreadPool::Shared() {
  static ThreadPool* const pool = new ThreadPool(KernelThreads() - 1);
  return *pool;
}

ThreadPool::ThreadPool(size_t helpers) {
  for (size_t i = 0; i < helpers; ++i) std::thread([this] { HelperLoop(); }).detach();
}

void ThreadPool::HelperLoop() {
  for (;;) {
    std::shared_ptr<Batch> batch;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return !invitations_.empty(); });
      batch = std::move(invitations_.front());
      invitations_.pop_front();
    }
    batch->Work();
  }
}

void ThreadPool::ParallelFor(size_t pieces, size_t helpers, const std::function<void(size_t)>& body) {
  auto batch = std::make_shared<Batch>(&body, pieces);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t i = 0; i < helpers; ++i) invitations_.push_back(batch);
  }
  for (size_t i = 0; i < helpers; ++i) wake_.notify_one();
  batch->Work();
  std::unique_lock<std::mutex> lock(batch->mutex);
  batch->finished.wait(lock, [&] { return batch->done == pieces; });
}

}  // namespace rxccl
