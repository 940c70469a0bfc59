// Memory for a collective's fresh result (docs/architecture.md, "Fresh results"). A new typed
// array of megabytes comes from the kernel page by page: on a virtual machine each 4 KiB page's
// first write costs about 10 us (1 MiB: 2.5 ms; 64 MiB: 170-200 ms, against 3 ms for the same bytes
// already mapped), which made `allReduce(x, 'sum')` ten times slower than the in-place form from
// 1 MiB up. A result of kPooledResultBytes or more is a mapping of its own: one a freed result left
// in the pool (result_pool.h: no page faults at all), else a new one, written in one call
// (MADV_POPULATE_WRITE) rather than fault by fault, and from kHugeResultBytes aligned to and asked
// for in 2 MiB huge pages (MADV_HUGEPAGE, where transparent huge pages are in "madvise" or
// "always" mode: one fault per 2 MiB).
#pragma once

#include <napi.h>

#include <cstddef>

namespace rxccl {

// Results at least this large get mappings of their own (and the pool). Below, the C library's
// blocks: it keeps freed ones of such sizes and hands them out again, already mapped.
// lib/kernels/result-memory.ts POOLED_RESULT_BYTES is the same: JavaScript asks only from there.
constexpr size_t kPooledResultBytes = size_t(64) << 10;

// New mappings at least this large get huge pages. Measured (bench/fresh-results, 2 ranks, the
// default all-reduce, before the pool): 4 MiB 11.2 -> 5.8 ms, 8 MiB 20 -> 6.4 ms, 64 MiB 223 ->
// 33 ms; at 2 MiB no gain (a 2 MiB page zeroed, maybe compacted for, costs what 512 faults do). Such
// a mapping is rounded up to whole 2 MiB pages: at most 1.5x its size, less above; a smaller one to
// 64 KiB.
constexpr size_t kHugeResultBytes = size_t(4) << 20;

// allocateResult(bytes): an ArrayBuffer of exactly `bytes` in a mapping of its own (given back to
// the pool when the collector frees the buffer, and counted by V8 as external memory meanwhile),
// or undefined below kPooledResultBytes or where mapping fails: the caller then takes an ordinary
// one. Its bytes are zero when the mapping is new, else what a freed result left there: a
// collective writes every byte of its result before anyone sees it.
Napi::Value AllocateResult(const Napi::CallbackInfo& info);

// resultPoolBytes(): the bytes of freed results the pool keeps now (tests, diagnostics).
Napi::Value ResultPoolBytes(const Napi::CallbackInfo& info);

}  // namespace rxccl
