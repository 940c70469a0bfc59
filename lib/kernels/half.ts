/**
 * f16 and bf16 conversions for the reference kernels, bit-exact with native/half.h: widening is
 * exact; narrowing rounds a float32 value to nearest even; overflow gives Inf; a NaN becomes
 * 0x7e00 with its sign (f16) or keeps its top bits and is made quiet (bf16). Written
 * independently of the native bit tricks (plain case analysis), so the two check each other.
 */

const f32 = new Float32Array(1);
const f32Bits = new Uint32Array(f32.buffer);

/** The float32 bit pattern of `value`, after rounding it to float32. */
function float32Bits(value: number): number {
  f32[0] = value;
  return f32Bits[0]!;
}

function roundHalfToEven(value: number): number {
  const floor = Math.floor(value);
  const fraction = value - floor;
  if (fraction > 0.5) return floor + 1;
  if (fraction < 0.5) return floor;
  return floor % 2 === 0 ? floor : floor + 1;
}

export function halfToNumber(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exponent = (bits >> 10) & 0x1f;
  const mantissa = bits & 0x3ff;
  if (exponent === 0) return sign * mantissa * 2 ** -24;
  if (exponent === 31) return mantissa === 0 ? sign * Infinity : NaN;
  return sign * (1 + mantissa / 1024) * 2 ** (exponent - 15);
}

/** Rounds a number that is already a float32 value (the result of an f32 step) to f16 bits. */
export function numberToHalf(value: number): number {
  const bits = float32Bits(value);
  const sign = (bits >>> 16) & 0x8000;
  const magnitude = bits & 0x7fffffff;
  if (magnitude > 0x7f800000) return sign | 0x7e00;
  if (magnitude >= 0x47800000) return sign | 0x7c00; // >= 2^16: beyond the largest f16 (65504) even after rounding
  if (magnitude < 0x38800000) {
    // Below 2^-14: a subnormal f16, counted in steps of 2^-24 (exact: scaling by a power of two).
    return sign | roundHalfToEven(Math.abs(value) * 2 ** 24);
  }
  const exponent = (magnitude >>> 23) - 127 + 15;
  const mantissa = magnitude & 0x7fffff;
  const kept = (exponent << 10) | (mantissa >>> 13);
  const dropped = mantissa & 0x1fff;
  // A carry out of the mantissa moves to the next exponent, up to Inf: the format makes that right.
  const roundUp = dropped > 0x1000 || (dropped === 0x1000 && (kept & 1) === 1);
  return sign | (kept + (roundUp ? 1 : 0));
}

export function bf16ToNumber(bits: number): number {
  f32Bits[0] = bits << 16;
  return f32[0]!;
}

/** Rounds a number that is already a float32 value to bf16 bits. */
export function numberToBf16(value: number): number {
  const bits = float32Bits(value);
  if ((bits & 0x7fffffff) > 0x7f800000) return (bits >>> 16) | 0x0040;
  const dropped = bits & 0xffff;
  const kept = bits >>> 16;
  const roundUp = dropped > 0x8000 || (dropped === 0x8000 && (kept & 1) === 1);
  return kept + (roundUp ? 1 : 0);
}

/** Every 16-bit pattern widened once, so the reference loops decode with a table lookup. */
function widenAll(widen: (bits: number) => number): Float32Array {
  const table = new Float32Array(65536);
  for (let bits = 0; bits < 65536; bits++) table[bits] = widen(bits);
  return table;
}

let halfTable: Float32Array | undefined;
let bf16Table: Float32Array | undefined;

export function halfDecodeTable(): Float32Array {
  halfTable ??= widenAll(halfToNumber);
  return halfTable;
}

export function bf16DecodeTable(): Float32Array {
  bf16Table ??= widenAll(bf16ToNumber);
  return bf16Table;
}
