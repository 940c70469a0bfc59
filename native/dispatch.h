// Picks the loop instantiated for an (element type, op) pair. The choice happens once per job, on
// the JS thread; a null result means the pair is not supported (a bitwise op on a float type).
#pragma once

#include "codes.h"
#include "job.h"

namespace rxccl {

Job::Body ReduceSlicesBody(DType type, Op op);
Job::Body AccumulateBody(DType type, Op op);
Job::Body DivideBody(DType type);

// Bytes per element of `type`.
size_t ElementWidth(DType type);

}  // namespace rxccl
