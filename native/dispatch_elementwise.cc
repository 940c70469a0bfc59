#include "dispatch.h"
#include "dispatch_table.h"
#include "kernels.h"

namespace rxccl {
namespace {

template <class E, Op kOp>
struct AccumulateKernel {
  static constexpr Job::Body kBody = &Accumulate<E, kOp>;
};

}  // namespace

Job::Body AccumulateBody(DType type, Op op) {
  return ForType(type, [op](auto element) { return ForOp<AccumulateKernel, decltype(element)>(op); });
}

Job::Body DivideBody(DType type) {
  return ForType(type, [](auto element) -> Job::Body { return &Divide<decltype(element)>; });
}

size_t ElementWidth(DType type) {
  return ForType(type, [](auto element) { return sizeof(typename decltype(element)::Storage); });
}

}  // namespace rxccl
