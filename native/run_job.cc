#include "run_job.h"

#include <algorithm>

#include "kernels.h"
#include "thread_pool.h"

namespace rxccl {

void RunJob(const Job& job) {
  const size_t threads = KernelThreads();
  if (threads == 1 || job.bytes_read < kMinSplitBytes) {
    job.body(job, 0, job.count);
    return;
  }
  // Whole blocks per piece, so each piece walks the same block grid as an unsplit run.
  const size_t blocks = (job.count + kBlockElements - 1) / kBlockElements;
  const size_t pieces = std::min(blocks, (job.bytes_read + kPieceBytes - 1) / kPieceBytes);
  const size_t blocks_per_piece = (blocks + pieces - 1) / pieces;
  ThreadPool::Shared().ParallelFor(pieces, std::min(threads, pieces) - 1, [&job, blocks_per_piece](size_t piece) {
    const size_t begin = std::min(job.count, piece * blocks_per_piece * kBlockElements);
    const size_t end = std::min(job.count, begin + blocks_per_piece * kBlockElements);
    if (begin < end) job.body(job, begin, end);
  });
}

}  // namespace rxccl
