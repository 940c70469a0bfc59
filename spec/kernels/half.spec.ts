/**
 * f16/bf16 conversion and rounding: known values of the TypeScript conversions, and every 16-bit
 * pattern through the native kernels against the reference (narrowing of ties, subnormals,
 * overflow and NaN included).
 */
import { describe, expect, it } from 'vitest';
import { loadAddon } from '../../lib/kernels/addon.js';
import { kernelBackend } from '../../lib/kernels/index.js';
import { bf16ToNumber, halfToNumber, numberToBf16, numberToHalf } from '../../lib/kernels/half.js';
import { referenceAccumulate, referenceDivide } from '../../lib/kernels/reference.js';
import { elementTypeOfDType } from '../../lib/protocol/element-type.js';
import { REDUCE_OPS, reduceOpCode } from '../../lib/protocol/reduce-op.js';
import { firstDifference } from './support.js';

describe('f16 conversions', () => {
  it('widens exactly', () => {
    expect(halfToNumber(0x3c00)).toBe(1);
    expect(halfToNumber(0x7bff)).toBe(65504);
    expect(halfToNumber(0x0001)).toBe(2 ** -24);
    expect(halfToNumber(0x03ff)).toBe(1023 * 2 ** -24);
    expect(halfToNumber(0x0400)).toBe(2 ** -14);
    expect(halfToNumber(0x8000)).toBe(-0);
    expect(halfToNumber(0x7c00)).toBe(Infinity);
    expect(halfToNumber(0xfc00)).toBe(-Infinity);
    expect(halfToNumber(0x7e00)).toBeNaN();
    expect(halfToNumber(0x7c01)).toBeNaN();
  });

  it('rounds to nearest, ties to even', () => {
    expect(numberToHalf(1 + 2 ** -11)).toBe(0x3c00); // tie, down to the even 1.0
    expect(numberToHalf(1 + 3 * 2 ** -11)).toBe(0x3c02); // tie, up to the even 1 + 2^-9
    expect(numberToHalf(1 + 2 ** -11 + 2 ** -20)).toBe(0x3c01); // above the tie
    expect(numberToHalf(65519)).toBe(0x7bff);
    expect(numberToHalf(65520)).toBe(0x7c00); // tie above the largest finite value: Inf
    expect(numberToHalf(2 ** -25)).toBe(0x0000); // subnormal tie, down to even 0
    expect(numberToHalf(3 * 2 ** -25)).toBe(0x0002);
    expect(numberToHalf(1023.5 * 2 ** -24)).toBe(0x0400); // largest subnormal rounds up to the smallest normal
    expect(numberToHalf(-0)).toBe(0x8000);
    expect(numberToHalf(-Infinity)).toBe(0xfc00);
    expect(numberToHalf(NaN)).toBe(0x7e00);
  });
});

describe('bf16 conversions', () => {
  it('widens exactly and rounds to nearest, ties to even', () => {
    expect(bf16ToNumber(0x3f80)).toBe(1);
    expect(bf16ToNumber(0xff80)).toBe(-Infinity);
    expect(numberToBf16(1 + 2 ** -8)).toBe(0x3f80);
    expect(numberToBf16(1 + 3 * 2 ** -8)).toBe(0x3f82);
    expect(numberToBf16(3.3895313892515355e38)).toBe(0x7f7f); // largest finite bf16
    expect(numberToBf16(3.4e38)).toBe(0x7f80); // rounds past it: Inf
    expect(numberToBf16(-0)).toBe(0x8000);
    const quiet = numberToBf16(NaN);
    expect(bf16ToNumber(quiet)).toBeNaN();
    expect(quiet & 0x0040).toBe(0x0040);
  });
});

describe.skipIf(kernelBackend() !== 'native')('every 16-bit pattern, native = reference', () => {
  const patterns = new Uint16Array(65536).map((_, i) => i);
  // A partner for each pattern that is far away in the table, so both operands vary.
  const partners = new Uint16Array(65536).map((_, i) => (i * 7919 + 12345) & 0xffff);
  const bytes = (array: Uint16Array) => new Uint8Array(array.buffer.slice(0));

  for (const dtype of ['f16', 'bf16'] as const) {
    const type = elementTypeOfDType(dtype);
    for (const op of REDUCE_OPS.filter((candidate) => !['band', 'bor', 'bxor'].includes(candidate))) {
      it(`${dtype} ${op} of every pattern with a partner`, () => {
        const expected = bytes(patterns);
        referenceAccumulate(dtype, op, expected, bytes(partners));
        const actual = bytes(patterns);
        loadAddon().accumulate(type, reduceOpCode(op), actual, 0, bytes(partners), 0, 65536);
        expect(firstDifference(dtype, actual, expected)).toBe(-1);
      });
    }
    // Dividing every pattern hits exact ties and subnormal results when narrowing back.
    for (const divisor of [1, 2, 3, 10, 4096]) {
      it(`${dtype} every pattern divided by ${divisor}`, () => {
        const expected = bytes(patterns);
        referenceDivide(dtype, expected, divisor);
        const actual = bytes(patterns);
        loadAddon().divide(type, actual, 0, 65536, divisor);
        expect(firstDifference(dtype, actual, expected)).toBe(-1);
      });
    }
  }
});
