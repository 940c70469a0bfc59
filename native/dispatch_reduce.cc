#include "dispatch.h"
#include "dispatch_table.h"
#include "kernels.h"

namespace rxccl {
namespace {

template <class E, Op kOp>
struct ReduceSlicesKernel {
  static constexpr Job::Body kBody = &ReduceSlices<E, kOp>;
};

}  // namespace

Job::Body ReduceSlicesBody(DType type, Op op) {
  return ForType(type, [op](auto element) { return ForOp<ReduceSlicesKernel, decltype(element)>(op); });
}

}  // namespace rxccl
