/** Shared helpers for the kernel specs: element encoding, generators, NaN-aware comparison. */
import fc from 'fast-check';
import { bf16ToNumber, halfToNumber, numberToBf16, numberToHalf } from '../../lib/kernels/half.js';
import { DTYPES, type DType } from '../../lib/protocol/element-type.js';
import { isBitwise, REDUCE_OPS, type ReduceOp } from '../../lib/protocol/reduce-op.js';
import { dtypeWidth } from '../../lib/tensor.js';

export const FLOAT_DTYPES: readonly DType[] = ['f16', 'bf16', 'f32', 'f64'];

/** Every (dtype, op) pair the kernels define. */
export const VALID_PAIRS: readonly (readonly [DType, ReduceOp])[] = DTYPES.flatMap((dtype) =>
  REDUCE_OPS.filter((op) => !(isBitwise(op) && FLOAT_DTYPES.includes(dtype))).map((op) => [dtype, op] as const),
);

/** Little-endian bytes of `values` as `dtype` (f16/bf16 values are rounded from f32). */
export function encode(dtype: DType, values: readonly (number | bigint)[]): Uint8Array {
  const bytes = new Uint8Array(values.length * dtypeWidth(dtype));
  const view = new DataView(bytes.buffer);
  values.forEach((value, i) => {
    const at = i * dtypeWidth(dtype);
    const n = Number(value);
    switch (dtype) {
      case 'u8': return view.setUint8(at, n);
      case 'i8': return view.setInt8(at, n);
      case 'u16': return view.setUint16(at, n, true);
      case 'i16': return view.setInt16(at, n, true);
      case 'u32': return view.setUint32(at, n, true);
      case 'i32': return view.setInt32(at, n, true);
      case 'u64': return view.setBigUint64(at, BigInt(value), true);
      case 'i64': return view.setBigInt64(at, BigInt(value), true);
      case 'f16': return view.setUint16(at, numberToHalf(n), true);
      case 'bf16': return view.setUint16(at, numberToBf16(n), true);
      case 'f32': return view.setFloat32(at, n, true);
      case 'f64': return view.setFloat64(at, n, true);
    }
  });
  return bytes;
}

/** The elements of little-endian `bytes` (any byte offset) as numbers, or bigints for 64-bit ints. */
export function decode(dtype: DType, bytes: Uint8Array): (number | bigint)[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const width = dtypeWidth(dtype);
  return Array.from({ length: bytes.length / width }, (_, i) => {
    const at = i * width;
    switch (dtype) {
      case 'u8': return view.getUint8(at);
      case 'i8': return view.getInt8(at);
      case 'u16': return view.getUint16(at, true);
      case 'i16': return view.getInt16(at, true);
      case 'u32': return view.getUint32(at, true);
      case 'i32': return view.getInt32(at, true);
      case 'u64': return view.getBigUint64(at, true);
      case 'i64': return view.getBigInt64(at, true);
      case 'f16': return halfToNumber(view.getUint16(at, true));
      case 'bf16': return bf16ToNumber(view.getUint16(at, true));
      case 'f32': return view.getFloat32(at, true);
      case 'f64': return view.getFloat64(at, true);
    }
  });
}

/**
 * Index of the first element where `actual` and `expected` differ, or -1. Bits must match,
 * except that any NaN equals any NaN: NaN payloads and signs are not specified.
 */
export function firstDifference(dtype: DType, actual: Uint8Array, expected: Uint8Array): number {
  if (actual.length !== expected.length) return 0;
  if (Buffer.compare(actual, expected) === 0) return -1;
  const width = dtypeWidth(dtype);
  const a = decode(dtype, actual);
  const e = decode(dtype, expected);
  for (let i = 0; i < a.length; i++) {
    const bothNaN = typeof a[i] === 'number' && Number.isNaN(a[i]) && Number.isNaN(e[i]);
    if (bothNaN) continue;
    for (let b = 0; b < width; b++) {
      if (actual[i * width + b] !== expected[i * width + b]) return i;
    }
  }
  return -1;
}

/** `bytes` copied to byte offset `offset` of a fresh buffer with slack on both sides. */
export function placeAt(bytes: Uint8Array, offset: number): Uint8Array {
  const buffer = new Uint8Array(offset + bytes.length + 7);
  buffer.set(bytes, offset);
  return buffer.subarray(offset, offset + bytes.length);
}

const SPECIAL_FLOATS = [0, -0, 1, -1, 0.5, Infinity, -Infinity, NaN, 65504, -65504, 2 ** -24, 6e-8, 1e-40, 3.4e38, 1 + 2 ** -11, 1 + 2 ** -8];

/** One element of `dtype`: raw random bits, small values (which sum without saturating), or edge cases. */
export function element(dtype: DType): fc.Arbitrary<number | bigint> {
  switch (dtype) {
    case 'u8': return fc.integer({ min: 0, max: 0xff });
    case 'i8': return fc.integer({ min: -0x80, max: 0x7f });
    case 'u16': return fc.integer({ min: 0, max: 0xffff });
    case 'i16': return fc.integer({ min: -0x8000, max: 0x7fff });
    case 'u32': return fc.oneof(fc.integer({ min: 0, max: 0xffffffff }), fc.constantFrom(0, 1, 0xffffffff, 0x80000000));
    case 'i32': return fc.oneof(fc.integer({ min: -0x80000000, max: 0x7fffffff }), fc.integer({ min: -9, max: 9 }));
    case 'u64': return fc.oneof(fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }), fc.bigInt({ min: 0n, max: 9n }));
    case 'i64': return fc.oneof(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), fc.bigInt({ min: -9n, max: 9n }));
    case 'f16':
    case 'bf16':
    case 'f32':
    case 'f64':
      return fc.oneof(
        fc.constantFrom(...SPECIAL_FLOATS),
        fc.integer({ min: -20, max: 20 }).map((n) => n / 4),
        fc.double({ noDefaultInfinity: false }),
        fc.float(),
      );
  }
}

/** `count` elements of `dtype`, encoded; sometimes raw random bytes (NaN payloads, subnormals, ...). */
export function elements(dtype: DType, count: number): fc.Arbitrary<Uint8Array> {
  const bytes = count * dtypeWidth(dtype);
  return fc.oneof(
    { weight: 3, arbitrary: fc.array(element(dtype), { minLength: count, maxLength: count }).map((values) => encode(dtype, values)) },
    { weight: 1, arbitrary: fc.uint8Array({ minLength: bytes, maxLength: bytes }) },
  );
}
