// One mapping of a fresh result (docs/architecture.md, "Fresh results"): anonymous memory of its
// own, from kHugeResultBytes aligned to and asked for in 2 MiB huge pages, written through when it
// is made so that no thread of this process faults on it later.
//
// Why written through, page by page: on the project's virtual machine (a PVM guest: the host keeps
// a shadow of each process's page tables) the first access by this process to a page costs 5-10 us
// even after the guest kernel has populated it (MADV_POPULATE_WRITE: 1 MiB 0.13 ms, then the first
// write still 1.3 ms; 64 MiB 13 ms, then 100-220 ms), and any thread's access fills the shadow for
// all of them (written from another thread first, the same 64 MiB then take 3 ms to write, memory
// speed). Huge pages cost one fault per 2 MiB instead of 512.
#pragma once

#include <cstddef>

namespace rxccl {

// One mapping: the whole of it (what munmap takes), and the part a result uses (aligned to 2 MiB
// for huge pages), which is `capacity` bytes long.
struct ResultMapping {
  void* base = nullptr;
  size_t length = 0;
  void* data = nullptr;
  size_t capacity = 0;
};

// New mappings at least this large get huge pages. Measured (bench/fresh-results, 2 ranks, the
// default all-reduce, before the pool): 4 MiB 11.2 -> 5.8 ms, 8 MiB 20 -> 6.4 ms, 64 MiB 223 ->
// 33 ms; at 2 MiB no gain (a 2 MiB page zeroed, maybe compacted for, costs what 512 faults do). Such
// a mapping is rounded up to whole 2 MiB pages: at most 1.5x its size, less above; a smaller one to
// 64 KiB.
constexpr size_t kHugeResultBytes = size_t(4) << 20;

// The bytes of address space a new mapping for a result of `bytes` takes (ResultMapping::length).
size_t MappedLength(size_t bytes);

// A new mapping for `bytes`, every page of it written once (false where the kernel refuses it).
// Its bytes are zero.
bool MapResult(size_t bytes, ResultMapping& mapping);

// Gives a mapping back to the kernel.
void UnmapResult(const ResultMapping& mapping);

}  // namespace rxccl
