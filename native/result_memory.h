// Memory for a collective's fresh result (docs/architecture.md, "Fresh results"). A new typed
// array of megabytes comes from the kernel page by page: on a virtual machine each 4 KiB page's
// first write costs about 10 us (1 MiB: 2.5 ms; 64 MiB: 170-200 ms, against 3 ms for the same bytes
// already mapped), which made `allReduce(x, 'sum')` ten times slower than the in-place form from
// 1 MiB up. A result of kPooledResultBytes or more is a mapping of its own (result_mapping.h): one
// the pool holds ready (result_pool.h: a freed result's, or one its filler thread made ahead, no
// page faults on the event loop), else a new one.
#pragma once

#include <napi.h>

#include <cstddef>

namespace rxccl {

// Results at least this large get mappings of their own (and the pool). Below, the C library's
// blocks: it keeps freed ones of such sizes and hands them out again, already mapped.
// lib/kernels/result-memory.ts POOLED_RESULT_BYTES is the same: JavaScript asks only from there.
constexpr size_t kPooledResultBytes = size_t(64) << 10;

// allocateResult(bytes): an ArrayBuffer of exactly `bytes` in a mapping of its own (given back to
// the pool when the collector frees the buffer, and counted by V8 as external memory meanwhile),
// or undefined below kPooledResultBytes or where mapping fails: the caller then takes an ordinary
// one. Its bytes are zero when the mapping is new, else what a freed result left there: a
// collective writes every byte of its result before anyone sees it.
Napi::Value AllocateResult(const Napi::CallbackInfo& info);

// resultPoolBytes(): the bytes of mappings the pool keeps now (tests, diagnostics).
Napi::Value ResultPoolBytes(const Napi::CallbackInfo& info);

// releaseResultPool(): gives every mapping the pool keeps back to the kernel (a session's close).
Napi::Value ReleaseResultPool(const Napi::CallbackInfo& info);

}  // namespace rxccl
