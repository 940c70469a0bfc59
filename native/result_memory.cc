#include "result_memory.h"

#include "args.h"
#include "result_pool.h"

namespace rxccl {
namespace {

// Results from this size set off V8's full collections by themselves every few calls (one per
// 64 MiB of external memory), and one is mostly in progress: a scavenge asked for then finishes it
// early, a second full collection per call (measured, 2 ranks of 64 MiB on the loaded VM: 21-29 ->
// 80-88 ms of collection per call).
constexpr size_t kNudgedResultBytes = size_t(16) << 20;

void Release(Napi::Env /*env*/, void* /*data*/, ResultMapping* mapping) {
  ResultPool::Shared().Give(*mapping);
  delete mapping;
}

}  // namespace

Napi::Value AllocateResult(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  ExpectArgumentCount(info, 1, 1);
  const size_t bytes = CountArgument(info, 0, "bytes");
  if (bytes < kPooledResultBytes) return env.Undefined();
  // V8 frees young array buffers by a scavenge (a fraction of a millisecond) once they add up to
  // twice its semi-space (32 MiB), but checks that only when it allocates a backing store itself
  // (Heap::AllocateExternalBackingStore): memory given to it, as these results are, only counts as
  // external memory, which brings a full
  // collection (milliseconds of marking the whole heap) per 64 MiB. Asking it for one byte makes
  // it check: dropped results are then freed by scavenges, sooner and for less. Measured in one
  // process, 2000 results of 1 MiB: 0.33 -> 0.16 ms of CPU per result.
  if (bytes < kNudgedResultBytes) Napi::ArrayBuffer::New(env, 1);
  ResultMapping mapping;
  if (!ResultPool::Shared().Take(bytes, mapping) && !MapResult(bytes, mapping)) return env.Undefined();
  // V8 counts the buffer's bytes as external memory itself, so the collector knows what it holds.
  return Napi::ArrayBuffer::New(env, mapping.data, bytes, Release, new ResultMapping(mapping));
}

Napi::Value ResultPoolBytes(const Napi::CallbackInfo& info) {
  ExpectArgumentCount(info, 0, 0);
  return Napi::Number::New(info.Env(), double(ResultPool::Shared().KeptBytes()));
}

Napi::Value ReleaseResultPool(const Napi::CallbackInfo& info) {
  ExpectArgumentCount(info, 0, 0);
  ResultPool::Shared().Release();
  return info.Env().Undefined();
}

}  // namespace rxccl
