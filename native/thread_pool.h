// A process-wide pool of helper threads that large kernels split across. It is shared by every
// caller (the JS thread for small synchronous runs, libuv workers for async ones): a caller
// publishes a batch of pieces, works on it itself, and waits only for its own batch, so
// concurrent kernels cannot deadlock each other.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>

namespace rxccl {

class ThreadPool {
 public:
  // The pool, created on first use with KernelThreads() - 1 helpers. It is never destroyed: its
  // threads are detached and may still be parked when the process exits, and running static
  // destructors under them would be a crash on exit.
  static ThreadPool& Shared();

  // Runs body(0) .. body(pieces - 1) on the calling thread, joined by up to `helpers` helper
  // threads as they wake; returns when all pieces are done. Pieces are claimed one at a time, so
  // a helper that wakes late (or shares its core with another process) takes fewer of them
  // instead of holding everyone up.
  void ParallelFor(size_t pieces, size_t helpers, const std::function<void(size_t)>& body);

 private:
  struct Batch;
  explicit ThreadPool(size_t helpers);
  void HelperLoop();

  std::mutex mutex_;
  std::condition_variable wake_;
  // One entry per helper invited to a batch; a helper that arrives after the pieces ran out
  // finds nothing left and moves on.
  std::deque<std::shared_ptr<Batch>> invitations_;
};

// Threads one kernel may use, the caller included: $RXCCL_KERNEL_THREADS when it is a positive
// integer (1 disables splitting; useful when several ranks share a machine), else the number of
// hardware threads.
size_t KernelThreads();

}  // namespace rxccl
