// Conversions between f32 and the two 16-bit float formats. Every f16/bf16 kernel step converts
// its operands to f32, computes, and rounds back with these, so they sit in the innermost loops:
// they are branch-free (selects, not jumps) so that gcc -O3 vectorises the loops around them
// without needing F16C or any CPU feature beyond the x86-64/aarch64 baseline.
#pragma once

#include <cstdint>
#include <cstring>

#include "inline.h"

namespace rxccl {

RXCCL_ALWAYS_INLINE uint32_t BitsOf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

RXCCL_ALWAYS_INLINE float FloatOf(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

// binary16 -> binary32, exact (F. Giesen, "half_to_float_fast3", with the cases selected rather
// than branched). Exponent and mantissa move into place and the exponent is rebiased; Inf/NaN get
// an all-ones exponent; a subnormal is renormalised by a float subtraction of two normal numbers.
// No intermediate is a subnormal float: those take a slow microcode path on x86, and f16 data
// (gradients) is often subnormal.
RXCCL_ALWAYS_INLINE float HalfToFloat(uint16_t half) {
  const uint32_t exponent_mask = 0x7c00u << 13;
  const uint32_t moved = uint32_t(half & 0x7fffu) << 13;
  const uint32_t exponent = moved & exponent_mask;
  const uint32_t normal = moved + ((127u - 15u) << 23);
  const uint32_t infnan = normal + ((128u - 16u) << 23);
  // 2^-14 * (1 + m/1024) - 2^-14 = m * 2^-24, exactly.
  const uint32_t subnormal = BitsOf(FloatOf(normal + (1u << 23)) - FloatOf(113u << 23));
  const uint32_t magnitude = exponent == exponent_mask ? infnan : exponent == 0 ? subnormal : normal;
  return FloatOf(magnitude | (uint32_t(half & 0x8000u) << 16));
}

// binary32 -> binary16, round to nearest even (F. Giesen, "float_to_half_fast3_rtne"), with all
// three cases computed and one selected. Overflow gives Inf; every NaN becomes the quiet NaN
// 0x7e00 with the input's sign.
RXCCL_ALWAYS_INLINE uint16_t FloatToHalf(float value) {
  const uint32_t f32_infinity = 255u << 23;
  const uint32_t f16_overflow = (127u + 16u) << 23;     // 2^16: rounds to Inf or is Inf/NaN
  const uint32_t f16_min_normal = 113u << 23;           // 2^-14
  const uint32_t subnormal_magic = 126u << 23;          // 0.5: its ulp is the f16 subnormal step
  uint32_t bits = BitsOf(value);
  const uint32_t sign = bits & 0x80000000u;
  bits ^= sign;
  // Subnormal or zero: adding 0.5 lets the FPU's own round-to-nearest-even drop the extra bits.
  const uint32_t subnormal = BitsOf(FloatOf(bits) + FloatOf(subnormal_magic)) - subnormal_magic;
  // Normal: rebias the exponent, then add 0x0fff plus the lowest kept bit (ties to even).
  const uint32_t odd = (bits >> 13) & 1u;
  const uint32_t normal = (bits + ((15u - 127u) << 23) + 0x0fffu + odd) >> 13;
  const uint32_t special = bits > f32_infinity ? 0x7e00u : 0x7c00u;
  const uint32_t half = bits >= f16_overflow ? special : bits < f16_min_normal ? subnormal : normal;
  return uint16_t(half | (sign >> 16));
}

// bfloat16 is the top half of a binary32, so widening is a shift.
RXCCL_ALWAYS_INLINE float Bf16ToFloat(uint16_t bf16) { return FloatOf(uint32_t(bf16) << 16); }

// binary32 -> bfloat16, round to nearest even; a NaN keeps its sign and top payload bits and is
// made quiet (as PyTorch does), so it cannot round into an Inf.
RXCCL_ALWAYS_INLINE uint16_t FloatToBf16(float value) {
  const uint32_t bits = BitsOf(value);
  const uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
  const uint32_t quiet_nan = (bits >> 16) | 0x0040u;
  return uint16_t((bits & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
}

}  // namespace rxccl
