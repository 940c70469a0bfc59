// Memory for a collective's fresh result (docs/architecture.md, "Fresh results"). A new typed
// array of megabytes comes from the kernel page by page: on a virtual machine each 4 KiB page's
// first write costs microseconds (measured here: 64 MiB took 170-200 ms to touch, against 3 ms for
// the same bytes already mapped), which made `allReduce(x, 'sum')` over ten times slower than the
// in-place form at 64 MiB. A result of kHugeResultBytes or more is instead mapped on its own, aligned to and
// asked for in 2 MiB huge pages (madvise MADV_HUGEPAGE, where transparent huge pages are in
// "madvise" or "always" mode): the same bytes in one fault per 2 MiB (64 MiB: 3-6 ms).
#pragma once

#include <napi.h>

#include <cstddef>

namespace rxccl {

// Results at least this large get huge pages. Measured (bench/fresh-results, 2 ranks, the default
// all-reduce): 4 MiB 11.2 -> 5.8 ms, 8 MiB 20 -> 6.4 ms, 64 MiB 223 -> 33 ms; at 2 MiB no gain and at
// 1 MiB a loss (1.1 -> 2.3 ms): there the C library hands back memory the collector freed, already
// mapped, where each huge mapping is new (its 2 MiB page zeroed, maybe compacted for). A result's
// memory is rounded up to whole 2 MiB pages: at most 1.5x its size, less above.
// lib/kernels/result-memory.ts HUGE_RESULT_BYTES is the same: JavaScript asks only from there.
constexpr size_t kHugeResultBytes = size_t(4) << 20;

// allocateResult(bytes): a zeroed ArrayBuffer of `bytes` in memory of its own, mapped as huge
// pages where the system allows (unmapped when the collector frees the buffer, and counted by V8
// as external memory meanwhile), or undefined below kHugeResultBytes or where the mapping fails: the
// caller then takes an ordinary one.
Napi::Value AllocateResult(const Napi::CallbackInfo& info);

}  // namespace rxccl
