// Mappings of freed results, kept to be handed out again (docs/architecture.md, "Fresh results").
// On a virtual machine the first write to each 4 KiB page of new memory costs about 10 us (a
// 1 MiB result: 2.5 ms, ten times the 2-rank all-reduce that fills it), and the C library returns
// large freed blocks to the kernel, so every fresh result paid it again. A result's mapping goes
// here when the collector frees it, already mapped and written, and the next result of about its
// size takes it: a training loop's results (the same sizes every step) then cost no page faults
// once the collector has freed the first ones, as PyTorch's caching allocator keeps GPU memory.
// Bounded (kPoolBytes, at most an eighth of the machine's memory); mappings beyond it go back to
// the kernel. Thread-safe: the collector may free buffers from any thread.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>

namespace rxccl {

// One mapping: the whole of it (what munmap takes), and the part a result uses (aligned to 2 MiB
// for huge pages), which is `capacity` bytes long.
struct ResultMapping {
  void* base = nullptr;
  size_t length = 0;
  void* data = nullptr;
  size_t capacity = 0;
};

class ResultPool {
 public:
  // The process's pool.
  static ResultPool& Shared();

  // A kept mapping whose capacity is at least `bytes` and at most twice it (the smallest such),
  // taken out of the pool; false when none fits.
  bool Take(size_t bytes, ResultMapping& mapping);
  // Keeps a freed result's mapping, or unmaps it when the pool is full.
  void Give(const ResultMapping& mapping);
  // Bytes kept now (for tests and diagnostics).
  size_t KeptBytes();

 private:
  ResultPool();
  std::mutex mutex_;
  // By capacity.
  std::multimap<size_t, ResultMapping> kept_;
  size_t kept_bytes_ = 0;
  const size_t limit_;
};

// Most bytes a pool keeps: freed results beyond it go back to the kernel.
constexpr size_t kPoolBytes = size_t(256) << 20;

}  // namespace rxccl
