/**
 * The reduction kernels in plain TypeScript: the oracle the native kernels are tested against, and
 * the fallback when the addon cannot be loaded. Results match native/ bit for bit (NaN payloads
 * aside); the rules are in ./README.md. Buffers at an unaligned byte offset are copied into
 * aligned arrays here (speed matters less than obviousness in this file).
 */
import { ConfigurationError } from '../errors.js';
import type { DType } from '../protocol/element-type.js';
import type { ReduceOp } from '../protocol/reduce-op.js';
import { arrayClassOf } from '../tensor.js';
import { bf16DecodeTable, halfDecodeTable, numberToBf16, numberToHalf } from './half.js';

type SmallIntegerArray = Uint8Array | Int8Array | Uint16Array | Int16Array | Uint32Array | Int32Array;
type BigIntegerArray = BigUint64Array | BigInt64Array;
type FloatArray = Float32Array | Float64Array;
type ElementArray = SmallIntegerArray | BigIntegerArray | FloatArray | Uint16Array;

/** output = op over the `slices` equal slices of input, folded left in slice order. */
export function referenceReduceSlices(dtype: DType, op: ReduceOp, input: Uint8Array, slices: number, output: Uint8Array): void {
  const sliceBytes = input.length / slices;
  const sources = Array.from({ length: slices }, (_, slice) => input.subarray(slice * sliceBytes, (slice + 1) * sliceBytes));
  referenceReduceSpans(dtype, op, sources, output, slices);
}

/** output = op over `sources`, folded left in their order; avg divides the sum by `divisor`. */
export function referenceReduceSpans(dtype: DType, op: ReduceOp, sources: readonly Uint8Array[], output: Uint8Array, divisor: number): void {
  // A fresh running array, so the output may alias any one source.
  const running = copyElements(dtype, sources[0]!);
  for (let index = 1; index < sources.length; index++) combineInto(dtype, op, running, elementsOf(dtype, sources[index]!).array);
  if (op === 'avg') divideInto(dtype, running, divisor);
  output.set(new Uint8Array(running.buffer, running.byteOffset, running.byteLength));
}

/** accumulator = op(accumulator, source), element-wise; avg accumulates a sum. */
export function referenceAccumulate(dtype: DType, op: ReduceOp, accumulator: Uint8Array, source: Uint8Array): void {
  const target = elementsOf(dtype, accumulator);
  combineInto(dtype, op, target.array, elementsOf(dtype, source).array);
  target.writeBack();
}

/** data = data / divisor, element-wise: avg's finishing step. */
export function referenceDivide(dtype: DType, data: Uint8Array, divisor: number): void {
  const target = elementsOf(dtype, data);
  divideInto(dtype, target.array, divisor);
  target.writeBack();
}

interface Elements {
  readonly array: ElementArray;
  /** Copies the array back into the bytes it was read from when it is not a view of them. */
  writeBack(): void;
}

/** The bytes as a typed array of the dtype's class: a view when aligned, else an aligned copy. */
function elementsOf(dtype: DType, bytes: Uint8Array): Elements {
  const Class = arrayClassOf(dtype);
  if (bytes.byteOffset % Class.BYTES_PER_ELEMENT === 0) {
    return { array: new Class(bytes.buffer, bytes.byteOffset, bytes.length / Class.BYTES_PER_ELEMENT), writeBack: () => {} };
  }
  const array = copyElements(dtype, bytes);
  return { array, writeBack: () => bytes.set(new Uint8Array(array.buffer)) };
}

function copyElements(dtype: DType, bytes: Uint8Array): ElementArray {
  const Class = arrayClassOf(dtype);
  const array = new Class(bytes.length / Class.BYTES_PER_ELEMENT);
  new Uint8Array(array.buffer).set(bytes);
  return array;
}

function combineInto(dtype: DType, op: ReduceOp, target: ElementArray, source: ElementArray): void {
  switch (dtype) {
    case 'u8':
    case 'i8':
    case 'u16':
    case 'i16':
    case 'u32':
    case 'i32':
      return combineSmallIntegers(op, target as SmallIntegerArray, source as SmallIntegerArray);
    case 'u64':
    case 'i64':
      return combineBigIntegers(op, target as BigIntegerArray, source as BigIntegerArray);
    case 'f32':
    case 'f64':
      return combineFloats(op, target as FloatArray, source as FloatArray);
    case 'f16':
      return combineHalves(op, target as Uint16Array, source as Uint16Array, halfDecodeTable(), numberToHalf);
    case 'bf16':
      return combineHalves(op, target as Uint16Array, source as Uint16Array, bf16DecodeTable(), numberToBf16);
  }
}

// Storing into a typed array wraps integers modulo 2^bits (ToInt8, ToUint32, ...), which is the
// two's-complement rule. Sums of two 32-bit values are exact in a double before that; products
// are not, so they use Math.imul (the low 32 bits, the same for signed and unsigned).
function combineSmallIntegers(op: ReduceOp, t: SmallIntegerArray, s: SmallIntegerArray): void {
  const n = t.length;
  switch (op) {
    case 'sum':
    case 'avg':
      for (let i = 0; i < n; i++) t[i] = t[i]! + s[i]!;
      return;
    case 'prod':
      for (let i = 0; i < n; i++) t[i] = Math.imul(t[i]!, s[i]!);
      return;
    case 'min':
      for (let i = 0; i < n; i++) t[i] = Math.min(t[i]!, s[i]!);
      return;
    case 'max':
      for (let i = 0; i < n; i++) t[i] = Math.max(t[i]!, s[i]!);
      return;
    case 'band':
      for (let i = 0; i < n; i++) t[i] = t[i]! & s[i]!;
      return;
    case 'bor':
      for (let i = 0; i < n; i++) t[i] = t[i]! | s[i]!;
      return;
    case 'bxor':
      for (let i = 0; i < n; i++) t[i] = t[i]! ^ s[i]!;
      return;
  }
}

// BigInt arithmetic is exact; storing into a BigInt64Array/BigUint64Array wraps modulo 2^64, and
// BigInt bitwise operators act on the two's-complement form.
function combineBigIntegers(op: ReduceOp, t: BigIntegerArray, s: BigIntegerArray): void {
  const n = t.length;
  switch (op) {
    case 'sum':
    case 'avg':
      for (let i = 0; i < n; i++) t[i] = t[i]! + s[i]!;
      return;
    case 'prod':
      for (let i = 0; i < n; i++) t[i] = t[i]! * s[i]!;
      return;
    case 'min':
      for (let i = 0; i < n; i++) t[i] = s[i]! < t[i]! ? s[i]! : t[i]!;
      return;
    case 'max':
      for (let i = 0; i < n; i++) t[i] = t[i]! < s[i]! ? s[i]! : t[i]!;
      return;
    case 'band':
      for (let i = 0; i < n; i++) t[i] = t[i]! & s[i]!;
      return;
    case 'bor':
      for (let i = 0; i < n; i++) t[i] = t[i]! | s[i]!;
      return;
    case 'bxor':
      for (let i = 0; i < n; i++) t[i] = t[i]! ^ s[i]!;
      return;
  }
}

// min/max propagate NaN with exactly the expressions of native/elements.h (FloatMinMax), so
// signed zeros also come out the same: the first operand unless the comparison picks the second.
function floatMin(a: number, b: number): number {
  return a < b || a !== a ? a : b;
}

function floatMax(a: number, b: number): number {
  return a > b || a !== a ? a : b;
}

// A double result stored into a Float32Array is the correctly rounded f32 result: double
// rounding is harmless for +, * and / of two f32 values (53 >= 2 * 24 + 2 bits).
function combineFloats(op: ReduceOp, t: FloatArray, s: FloatArray): void {
  const n = t.length;
  switch (op) {
    case 'sum':
    case 'avg':
      for (let i = 0; i < n; i++) t[i] = t[i]! + s[i]!;
      return;
    case 'prod':
      for (let i = 0; i < n; i++) t[i] = t[i]! * s[i]!;
      return;
    case 'min':
      for (let i = 0; i < n; i++) t[i] = floatMin(t[i]!, s[i]!);
      return;
    case 'max':
      for (let i = 0; i < n; i++) t[i] = floatMax(t[i]!, s[i]!);
      return;
    default:
      throw new ConfigurationError(`reduce op ${op} is not defined on floating-point types`);
  }
}

// f16/bf16: widen both, compute, round to f32 (Math.fround), then round to 16 bits: every
// pairwise step rounds, as the native kernels do.
function combineHalves(op: ReduceOp, t: Uint16Array, s: Uint16Array, widen: Float32Array, narrow: (value: number) => number): void {
  const n = t.length;
  switch (op) {
    case 'sum':
    case 'avg':
      for (let i = 0; i < n; i++) t[i] = narrow(Math.fround(widen[t[i]!]! + widen[s[i]!]!));
      return;
    case 'prod':
      for (let i = 0; i < n; i++) t[i] = narrow(Math.fround(widen[t[i]!]! * widen[s[i]!]!));
      return;
    case 'min':
      for (let i = 0; i < n; i++) t[i] = narrow(floatMin(widen[t[i]!]!, widen[s[i]!]!));
      return;
    case 'max':
      for (let i = 0; i < n; i++) t[i] = narrow(floatMax(widen[t[i]!]!, widen[s[i]!]!));
      return;
    default:
      throw new ConfigurationError(`reduce op ${op} is not defined on floating-point types`);
  }
}

// Integers divide truncating toward zero (Math.trunc of an exact-enough double quotient for
// 32-bit values; BigInt division truncates). Floats divide by the divisor as the native code
// converts it: to f32 for f32/f16/bf16, to f64 for f64.
function divideInto(dtype: DType, t: ElementArray, divisor: number): void {
  const n = t.length;
  switch (dtype) {
    case 'u64':
    case 'i64': {
      const big = t as BigIntegerArray;
      const d = BigInt(divisor);
      for (let i = 0; i < n; i++) big[i] = big[i]! / d;
      return;
    }
    case 'f16':
    case 'bf16': {
      const halves = t as Uint16Array;
      const widen = dtype === 'f16' ? halfDecodeTable() : bf16DecodeTable();
      const narrow = dtype === 'f16' ? numberToHalf : numberToBf16;
      const d = Math.fround(divisor);
      for (let i = 0; i < n; i++) halves[i] = narrow(Math.fround(widen[halves[i]!]! / d));
      return;
    }
    case 'f32':
    case 'f64': {
      const floats = t as FloatArray;
      const d = dtype === 'f32' ? Math.fround(divisor) : divisor;
      for (let i = 0; i < n; i++) floats[i] = floats[i]! / d;
      return;
    }
    default: {
      const integers = t as SmallIntegerArray;
      for (let i = 0; i < n; i++) integers[i] = Math.trunc(integers[i]! / divisor);
    }
  }
}
