// The combining step of each reduce op, resolved at compile time per (element type, op).
#pragma once

#include "codes.h"
#include "inline.h"

namespace rxccl {

// avg combines like sum: the division by the number of contributions is a separate finishing
// step (fused at the end of a slice reduction, or the divide kernel after accumulation).
template <class E, Op kOp>
RXCCL_ALWAYS_INLINE typename E::Compute Combine(typename E::Compute a, typename E::Compute b) {
  if constexpr (kOp == Op::kSum || kOp == Op::kAvg) {
    return E::Add(a, b);
  } else if constexpr (kOp == Op::kProd) {
    return E::Mul(a, b);
  } else if constexpr (kOp == Op::kMin) {
    return E::Min(a, b);
  } else if constexpr (kOp == Op::kMax) {
    return E::Max(a, b);
  } else if constexpr (kOp == Op::kBand) {
    return E::And(a, b);
  } else if constexpr (kOp == Op::kBor) {
    return E::Or(a, b);
  } else {
    static_assert(kOp == Op::kBxor, "unhandled op");
    return E::Xor(a, b);
  }
}

}  // namespace rxccl
