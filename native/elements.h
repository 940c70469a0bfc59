// How each element type is stored, computed and combined. A kernel is instantiated per element
// type and op, so these are all compile-time choices: the inner loops contain no dispatch.
//
// Every element type E provides
//   Storage       the bytes in the buffer (f16/bf16 are uint16_t bit patterns)
//   Compute       what arithmetic happens in (f16/bf16 compute in float)
//   Load/Store    Storage <-> Compute; Store rounds (f16/bf16: to nearest even)
//   Round         what Store then Load would give: a result kept in Compute between steps must go
//                 through it, so f16/bf16 round after every pairwise step (the documented rule)
//   Add Mul Min Max, DivideBy(a, n), and for integers And Or Xor, all returning unrounded results:
//   a value that is stored next is rounded once, by Store, instead of by Round and again by Store.
#pragma once

#include <cstdint>
#include <type_traits>

#include "half.h"
#include "inline.h"

namespace rxccl {

// Two's-complement integers. Arithmetic runs in an unsigned type at least as wide as `unsigned`:
// unsigned overflow is defined to wrap, while signed overflow (and uint16 * uint16 promoted to a
// signed int) would be undefined behaviour.
template <class T>
struct Integer {
  using Storage = T;
  using Compute = T;
  static constexpr bool kFloat = false;
  using Unsigned = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;

  RXCCL_ALWAYS_INLINE static T Load(T value) { return value; }
  RXCCL_ALWAYS_INLINE static T Store(T value) { return value; }
  RXCCL_ALWAYS_INLINE static T Round(T value) { return value; }
  RXCCL_ALWAYS_INLINE static T Add(T a, T b) { return T(Unsigned(a) + Unsigned(b)); }
  RXCCL_ALWAYS_INLINE static T Mul(T a, T b) { return T(Unsigned(a) * Unsigned(b)); }
  RXCCL_ALWAYS_INLINE static T Min(T a, T b) { return b < a ? b : a; }
  RXCCL_ALWAYS_INLINE static T Max(T a, T b) { return a < b ? b : a; }
  RXCCL_ALWAYS_INLINE static T And(T a, T b) { return T(a & b); }
  RXCCL_ALWAYS_INLINE static T Or(T a, T b) { return T(a | b); }
  RXCCL_ALWAYS_INLINE static T Xor(T a, T b) { return T(a ^ b); }
  // C++ integer division truncates toward zero; the wide types keep any divisor >= 1 in range.
  RXCCL_ALWAYS_INLINE static T DivideBy(T a, uint64_t n) {
    if constexpr (std::is_signed_v<T>) {
      return T(int64_t(a) / int64_t(n));
    } else {
      return T(uint64_t(a) / n);
    }
  }
};

// min/max propagate NaN (as torch.minimum/maximum do): min(a, b) = `a < b || a is NaN ? a : b`,
// the expression lib/kernels/reference.ts uses, so both agree on signed zeros too. A NaN second
// operand fails the comparison and is picked; a NaN first operand is picked by the second select.
// Written as two plain selects, which gcc reliably turns into vector compares and blends.
template <class F>
struct FloatMinMax {
  RXCCL_ALWAYS_INLINE static F Min(F a, F b) {
    const F smaller = a < b ? a : b;
    return a != a ? a : smaller;
  }
  RXCCL_ALWAYS_INLINE static F Max(F a, F b) {
    const F larger = a > b ? a : b;
    return a != a ? a : larger;
  }
};

template <class F>
struct Floating : FloatMinMax<F> {
  using Storage = F;
  using Compute = F;
  static constexpr bool kFloat = true;

  RXCCL_ALWAYS_INLINE static F Load(F value) { return value; }
  RXCCL_ALWAYS_INLINE static F Store(F value) { return value; }
  RXCCL_ALWAYS_INLINE static F Round(F value) { return value; }
  RXCCL_ALWAYS_INLINE static F Add(F a, F b) { return a + b; }
  RXCCL_ALWAYS_INLINE static F Mul(F a, F b) { return a * b; }
  RXCCL_ALWAYS_INLINE static F DivideBy(F a, uint64_t n) { return a / F(n); }
};

// f16 and bf16: stored as 16-bit patterns, computed in float.
template <float (*kWiden)(uint16_t), uint16_t (*kNarrow)(float)>
struct Half : FloatMinMax<float> {
  using Storage = uint16_t;
  using Compute = float;
  static constexpr bool kFloat = true;

  RXCCL_ALWAYS_INLINE static float Load(uint16_t bits) { return kWiden(bits); }
  RXCCL_ALWAYS_INLINE static uint16_t Store(float value) { return kNarrow(value); }
  RXCCL_ALWAYS_INLINE static float Round(float value) { return kWiden(kNarrow(value)); }
  RXCCL_ALWAYS_INLINE static float Add(float a, float b) { return a + b; }
  RXCCL_ALWAYS_INLINE static float Mul(float a, float b) { return a * b; }
  RXCCL_ALWAYS_INLINE static float DivideBy(float a, uint64_t n) { return a / float(n); }
};

using F16 = Half<HalfToFloat, FloatToHalf>;
using BF16 = Half<Bf16ToFloat, FloatToBf16>;

}  // namespace rxccl
