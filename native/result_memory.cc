#include "result_memory.h"

#include <sys/mman.h>

#include <cstdint>

#include "args.h"
#include "result_pool.h"

namespace rxccl {
namespace {

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14; older C library headers lack the name
#endif

constexpr size_t kHugePageBytes = size_t(2) << 20;
constexpr size_t kSmallRoundBytes = size_t(64) << 10;

void Release(Napi::Env /*env*/, void* /*data*/, ResultMapping* mapping) {
  ResultPool::Shared().Give(*mapping);
  delete mapping;
}

// A new mapping for `bytes`, written through once (false where the kernel refuses it).
bool Map(size_t bytes, ResultMapping& mapping) {
  const bool huge = bytes >= kHugeResultBytes;
  const size_t round = huge ? kHugePageBytes : kSmallRoundBytes;
  mapping.capacity = (bytes + round - 1) / round * round;
  // A huge mapping is one page longer than it needs, so that an aligned run of whole 2 MiB pages
  // lies inside it: a huge page starts on a 2 MiB boundary, and mmap only promises 4 KiB ones.
  mapping.length = mapping.capacity + (huge ? kHugePageBytes : 0);
  mapping.base = mmap(nullptr, mapping.length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapping.base == MAP_FAILED) return false;
  auto* data = static_cast<uint8_t*>(mapping.base);
  if (huge) {
    data = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(data) + kHugePageBytes - 1) & ~(kHugePageBytes - 1));
    // Where transparent huge pages are off this fails, and the memory is ordinary pages: still right.
    madvise(data, mapping.capacity, MADV_HUGEPAGE);
  }
  // Every page at once, in one call: half the cost of a fault per page (Linux 5.14 and later;
  // elsewhere this fails and the pages come as they are first written).
  madvise(data, mapping.capacity, MADV_POPULATE_WRITE);
  mapping.data = data;
  return true;
}

}  // namespace

Napi::Value AllocateResult(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  ExpectArgumentCount(info, 1, 1);
  const size_t bytes = CountArgument(info, 0, "bytes");
  if (bytes < kPooledResultBytes) return env.Undefined();
  ResultMapping mapping;
  if (!ResultPool::Shared().Take(bytes, mapping) && !Map(bytes, mapping)) return env.Undefined();
  // V8 counts the buffer's bytes as external memory itself, so the collector knows what it holds.
  return Napi::ArrayBuffer::New(env, mapping.data, bytes, Release, new ResultMapping(mapping));
}

Napi::Value ResultPoolBytes(const Napi::CallbackInfo& info) {
  ExpectArgumentCount(info, 0, 0);
  return Napi::Number::New(info.Env(), double(ResultPool::Shared().KeptBytes()));
}

}  // namespace rxccl
