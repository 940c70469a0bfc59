// Numeric codes the addon accepts for element types and reduce ops. They are the GX1 wire codes
// (lib/protocol/element-type.ts, lib/protocol/reduce-op.ts), so the TypeScript layer passes the
// same numbers it already puts in frame headers.
#pragma once

namespace rxccl {

enum class DType : int {
  kU8 = 1, kI8, kU16, kI16, kU32, kI32, kU64, kI64, kF16, kBF16, kF32, kF64,
};

enum class Op : int {
  kSum = 1, kProd, kMin, kMax, kAvg, kBand, kBor, kBxor,
};

constexpr bool IsFloat(DType type) {
  return type == DType::kF16 || type == DType::kBF16 || type == DType::kF32 || type == DType::kF64;
}

constexpr bool IsBitwise(Op op) { return op == Op::kBand || op == Op::kBor || op == Op::kBxor; }

}  // namespace rxccl
