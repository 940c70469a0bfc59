#include "result_memory.h"

#include <sys/mman.h>

#include <cstdint>

#include "args.h"

namespace rxccl {
namespace {

constexpr size_t kHugePageBytes = size_t(2) << 20;

// What the finalizer unmaps: the whole mapping, of which the buffer is the aligned part.
struct Mapping {
  void* base;
  size_t length;
};

void Unmap(Napi::Env /*env*/, void* /*data*/, Mapping* mapping) {
  munmap(mapping->base, mapping->length);
  delete mapping;
}

}  // namespace

Napi::Value AllocateResult(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  ExpectArgumentCount(info, 1, 1);
  const size_t bytes = CountArgument(info, 0, "bytes");
  if (bytes < kHugeResultBytes) return env.Undefined();
  const size_t pages = (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  // One page more than the result, so that an aligned run of `pages` lies inside it: a huge page
  // must start on a 2 MiB boundary, and mmap only promises 4 KiB ones.
  const size_t length = pages + kHugePageBytes;
  void* base = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) return env.Undefined();
  auto* aligned = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(base) + kHugePageBytes - 1) & ~(kHugePageBytes - 1));
  // Where transparent huge pages are off this fails, and the memory is ordinary pages: still right.
  madvise(aligned, pages, MADV_HUGEPAGE);
  // V8 counts the buffer's bytes as external memory itself, so the collector knows what it holds.
  auto* mapping = new Mapping{base, length};
  return Napi::ArrayBuffer::New(env, aligned, bytes, Unmap, mapping);
}

}  // namespace rxccl
