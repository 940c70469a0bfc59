#include "result_mapping.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>

namespace rxccl {
namespace {

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14; older C library headers lack the name
#endif

constexpr size_t kHugePageBytes = size_t(2) << 20;
constexpr size_t kSmallRoundBytes = size_t(64) << 10;

bool Huge(size_t bytes) { return bytes >= kHugeResultBytes; }

size_t Capacity(size_t bytes) {
  const size_t round = Huge(bytes) ? kHugePageBytes : kSmallRoundBytes;
  return (bytes + round - 1) / round * round;
}

}  // namespace

size_t MappedLength(size_t bytes) {
  // A huge mapping is one page longer than it needs, so that an aligned run of whole 2 MiB pages
  // lies inside it: a huge page starts on a 2 MiB boundary, and mmap only promises 4 KiB ones.
  return Capacity(bytes) + (Huge(bytes) ? kHugePageBytes : 0);
}

bool MapResult(size_t bytes, ResultMapping& mapping) {
  mapping.capacity = Capacity(bytes);
  mapping.length = MappedLength(bytes);
  mapping.base = mmap(nullptr, mapping.length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapping.base == MAP_FAILED) return false;
  auto* data = static_cast<uint8_t*>(mapping.base);
  if (Huge(bytes)) {
    data = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(data) + kHugePageBytes - 1) & ~(kHugePageBytes - 1));
    // Where transparent huge pages are off this fails, and the memory is ordinary pages: still right.
    madvise(data, mapping.capacity, MADV_HUGEPAGE);
  }
  // Every page at once, in one call: half the cost of a fault per page (Linux 5.14 and later;
  // elsewhere this fails and the pages come as they are first written, below).
  madvise(data, mapping.capacity, MADV_POPULATE_WRITE);
  // Then one byte of each page written (a zero, as it is): where a hypervisor shadows page tables
  // this process's first access costs again, once, here rather than on whoever writes the result.
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  for (size_t offset = 0; offset < mapping.capacity; offset += page) static_cast<volatile uint8_t*>(data)[offset] = 0;
  mapping.data = data;
  return true;
}

void UnmapResult(const ResultMapping& mapping) { munmap(mapping.base, mapping.length); }

}  // namespace rxccl
