// Mappings ready for fresh results (docs/architecture.md, "Fresh results"): those of freed
// results, and new ones a thread of the pool's own makes ahead of need. On a virtual machine the
// first write to each 4 KiB page of new memory costs about 10 us (a 1 MiB result: 2.5 ms, ten
// times the 2-rank all-reduce that fills it), and the C library returns large freed blocks to the
// kernel, so every fresh result paid it again. A result's mapping goes here when the collector
// frees it, already mapped and written, and the next result of about its size takes it: a training
// loop's results (the same sizes every step) then cost no page faults once the collector has freed
// the first ones, as PyTorch's caching allocator keeps GPU memory.
//
// A loop of calls can outrun the collector (a result is freed only after the collection that finds
// it dropped, and its finalizer after that), so a Take that leaves no mapping of its size in the
// pool asks for one: the pool's filler thread makes it, written through (result_mapping.h), so its
// page faults are the filler's, not the event loop's, and the next call of that size finds it. The
// thread runs only while there is one to make, then ends.
//
// Bounded (kPoolBytes, at most an eighth of the machine's memory): a mapping kept when it is full
// sends those kept longest ago back to the kernel (it keeps the sizes in use now); at most half of
// it is being made at once. Release gives every kept mapping back. Thread-safe: the collector may
// free buffers from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <vector>

#include "result_mapping.h"

namespace rxccl {

class ResultPool {
 public:
  // The process's pool.
  static ResultPool& Shared();

  // A kept mapping whose capacity is at least `bytes` and at most twice it (the smallest such, of
  // those the one kept last), taken out of the pool; false when none fits. Either way, asks the
  // filler for a new mapping of `bytes` where none that fits is left kept or being made.
  bool Take(size_t bytes, ResultMapping& mapping);
  // Keeps a freed result's mapping (unmapping those kept longest ago where the pool is full).
  void Give(const ResultMapping& mapping);
  // Unmaps every kept mapping, and drops what the filler was asked for (what it is making now is
  // unmapped once made). The pool fills again from the next Take.
  void Release();
  // Bytes kept now (for tests and diagnostics).
  size_t KeptBytes();

 private:
  ResultPool();
  // Mappings kept that fit `bytes`, with those being made for it. Under mutex_.
  size_t Ready(size_t bytes) const;
  // Asks the filler for a mapping of `bytes` where none is ready (and less than half the pool is
  // being made), starting its thread where none runs. Under mutex_.
  void Ahead(size_t bytes);
  // The filler thread: makes the mappings asked for, in order, then ends.
  void Fill();
  // Keeps `mapping` where `release` is still release_, making room by taking out those kept
  // longest ago; else false. The caller unmaps what is taken out (`unmap`) and a mapping not kept,
  // outside the lock: munmap of megabytes takes a while. Under mutex_.
  bool Keep(const ResultMapping& mapping, size_t release, std::vector<ResultMapping>& unmap);

  // A kept mapping, and when: the kept_count_ it was kept as.
  struct Kept {
    ResultMapping mapping;
    uint64_t order;
  };

  std::mutex mutex_;
  // By capacity.
  std::multimap<size_t, Kept> kept_;
  size_t kept_bytes_ = 0;
  uint64_t kept_count_ = 0;
  // Sizes the filler is asked for (the front one is being made), and their mapped bytes.
  std::deque<size_t> asked_;
  size_t asked_bytes_ = 0;
  bool filling_ = false;
  // Counts Release calls: a mapping made across one is not kept.
  size_t release_ = 0;
  const size_t limit_;
};

// Most bytes a pool keeps: freed results beyond it go back to the kernel.
constexpr size_t kPoolBytes = size_t(256) << 20;

}  // namespace rxccl
