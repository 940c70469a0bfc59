// The switch from runtime (element type, op) codes to kernel instantiations, shared by the
// dispatch_*.cc files (split so the kernels compile in parallel).
#pragma once

#include "codes.h"
#include "elements.h"
#include "job.h"

namespace rxccl {

// Kernel<E, op>::kBody for a runtime `op`, or null for a bitwise op on a float type.
template <template <class, Op> class Kernel, class E>
Job::Body ForOp(Op op) {
  switch (op) {
    case Op::kSum: return Kernel<E, Op::kSum>::kBody;
    case Op::kProd: return Kernel<E, Op::kProd>::kBody;
    case Op::kMin: return Kernel<E, Op::kMin>::kBody;
    case Op::kMax: return Kernel<E, Op::kMax>::kBody;
    case Op::kAvg: return Kernel<E, Op::kAvg>::kBody;
    case Op::kBand:
    case Op::kBor:
    case Op::kBxor:
      if constexpr (!E::kFloat) {
        if (op == Op::kBand) return Kernel<E, Op::kBand>::kBody;
        if (op == Op::kBor) return Kernel<E, Op::kBor>::kBody;
        return Kernel<E, Op::kBxor>::kBody;
      }
      return nullptr;
  }
  return nullptr;
}

// Calls visit(E{}) with the element traits E of `type` (traits are empty tag structs).
template <class Visit>
auto ForType(DType type, Visit&& visit) {
  switch (type) {
    case DType::kU8: return visit(Integer<uint8_t>{});
    case DType::kI8: return visit(Integer<int8_t>{});
    case DType::kU16: return visit(Integer<uint16_t>{});
    case DType::kI16: return visit(Integer<int16_t>{});
    case DType::kU32: return visit(Integer<uint32_t>{});
    case DType::kI32: return visit(Integer<int32_t>{});
    case DType::kU64: return visit(Integer<uint64_t>{});
    case DType::kI64: return visit(Integer<int64_t>{});
    case DType::kF16: return visit(F16{});
    case DType::kBF16: return visit(BF16{});
    case DType::kF32: return visit(Floating<float>{});
    case DType::kF64: return visit(Floating<double>{});
  }
  return decltype(visit(Integer<uint8_t>{})){};
}

}  // namespace rxccl
