// One kernel invocation, fully resolved: raw pointers, element counts and the instantiated loop.
// Built on the JS thread after validation, then run there or on a worker thread; it owns nothing
// (the JS side keeps the buffers alive until the run completes).
#pragma once

#include <cstddef>
#include <cstdint>

namespace rxccl {

struct Job {
  // Processes elements [begin, end). Disjoint ranges may run on different threads at once.
  using Body = void (*)(const Job& job, size_t begin, size_t end);

  Body body = nullptr;
  // reduceSlices: slice 0 of the input; accumulate: the source. Unused by divide.
  const uint8_t* source = nullptr;
  // reduceSlices: bytes from one slice to the next.
  size_t slice_stride = 0;
  // reduceSlices: where each slice starts, when they are not `slice_stride` apart (then `source`
  // and `slice_stride` are unused): the data plane reduces a rank's own input beside the received
  // slices without copying it next to them.
  const uint8_t* const* slice_bases = nullptr;
  // reduceSlices: number of slices (k >= 1).
  size_t slices = 1;
  // reduceSlices: the output; accumulate: the accumulator; divide: the data.
  uint8_t* target = nullptr;
  // Elements per slice / per buffer.
  size_t count = 0;
  // divide, and avg's reduceSlices: the divisor (>= 1; a reduction's is usually `slices`).
  uint64_t divisor = 1;
  // Bytes the job reads, which decides whether splitting it across threads pays off.
  size_t bytes_read = 0;
};

}  // namespace rxccl
