// Runs a job to completion on the calling thread, split across the shared pool when it is large.
#pragma once

#include "job.h"

namespace rxccl {

// Jobs reading less than this run on the calling thread alone. Waking a helper costs tens of
// microseconds on a VM, about what reading 1-2 MiB costs, so splitting pays only for large jobs
// (bench/kernels/split.ts finds where on a machine).
constexpr size_t kMinSplitBytes = size_t(8) << 20;

// Bytes read per piece of a split job. Pieces are claimed dynamically; several per thread let the
// calling thread absorb a helper that is slow to wake.
constexpr size_t kPieceBytes = size_t(1) << 20;

void RunJob(const Job& job);

}  // namespace rxccl
