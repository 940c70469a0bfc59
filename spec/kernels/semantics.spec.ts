/**
 * The documented reduction rules as known values, checked on the active backend (through the
 * public API) and on the reference kernels directly: integer wrap-around, avg truncation, f16/bf16
 * pairwise rounding, NaN and signed-zero rules of min/max, bitwise ops, k = 1, empty tensors.
 */
import { firstValueFrom } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { reduceSlices, scheduleAccumulate, scheduleDivide } from '../../lib/kernels/index.js';
import { referenceReduceSlices } from '../../lib/kernels/reference.js';
import type { DType } from '../../lib/protocol/element-type.js';
import type { ReduceOp } from '../../lib/protocol/reduce-op.js';
import { decode, encode } from './support.js';

type Value = number | bigint;

/** Reduces `slices` (one array per rank) on both backends; both must give `expected`. */
async function expectReduction(dtype: DType, op: ReduceOp, slices: Value[][], expected: Value[]): Promise<void> {
  const input = encode(dtype, slices.flat());
  const viaApi = decode(dtype, await reduceSlices({ dtype, op, input, slices: slices.length }));
  const reference = new Uint8Array(input.length / slices.length);
  referenceReduceSlices(dtype, op, input, slices.length, reference);
  expect(viaApi).toEqual(expected);
  expect(decode(dtype, reference)).toEqual(expected);
}

const I32_MAX = 2 ** 31 - 1;
const I32_MIN = -(2 ** 31);

describe('integers wrap (two\'s complement)', () => {
  it('on sum', async () => {
    await expectReduction('u8', 'sum', [[255, 200], [1, 100]], [0, 44]);
    await expectReduction('i8', 'sum', [[127], [1]], [-128]);
    await expectReduction('u16', 'sum', [[65535], [1]], [0]);
    await expectReduction('i32', 'sum', [[I32_MAX, I32_MIN], [1, -1]], [I32_MIN, I32_MAX]);
    await expectReduction('u32', 'sum', [[2 ** 32 - 1], [2]], [1]);
    await expectReduction('i64', 'sum', [[2n ** 63n - 1n], [1n]], [-(2n ** 63n)]);
    await expectReduction('u64', 'sum', [[2n ** 64n - 1n], [1n]], [0n]);
  });

  it('on prod', async () => {
    await expectReduction('u8', 'prod', [[16], [16]], [0]);
    await expectReduction('u16', 'prod', [[300], [300]], [90000 % 65536]);
    await expectReduction('i16', 'prod', [[-300], [300]], [-90000 + 65536]); // -90000 mod 2^16, as i16
    await expectReduction('i32', 'prod', [[65536, 65537], [65536, 65537]], [0, (65537 * 65537) % 2 ** 32 | 0]);
    await expectReduction('u32', 'prod', [[0xffffffff], [0xffffffff]], [1]);
    await expectReduction('i64', 'prod', [[2n ** 62n], [4n]], [0n]);
    await expectReduction('u64', 'prod', [[2n ** 64n - 1n], [2n ** 64n - 1n]], [1n]);
  });
});

describe('avg', () => {
  it('truncates toward zero on integers', async () => {
    await expectReduction('i32', 'avg', [[-7, 7, -1], [0, 0, 0]], [-3, 3, 0]);
    await expectReduction('i64', 'avg', [[-7n], [0n]], [-3n]);
    await expectReduction('u32', 'avg', [[7], [0]], [3]);
    await expectReduction('i16', 'avg', [[-5], [-5], [-1]], [-3]); // -11 / 3
  });

  it('divides the wrapped sum', async () => {
    await expectReduction('i8', 'avg', [[100], [100]], [-28]); // 200 wraps to -56
    await expectReduction('u8', 'avg', [[200], [100]], [22]); // 300 wraps to 44
    await expectReduction('u64', 'avg', [[2n ** 64n - 1n], [3n]], [1n]); // wraps to 2
  });

  it('divides in the float type', async () => {
    await expectReduction('f32', 'avg', [[1, -1], [2, 1], [2, 0]], [Math.fround(5 / 3), 0]);
    await expectReduction('f64', 'avg', [[1], [2], [2]], [5 / 3]);
    await expectReduction('f16', 'avg', [[1], [2], [2]], [1707 / 1024]); // nearest f16 to 5/3
  });

  it('is an accumulated sum finished by divide', async () => {
    const accumulator = encode('i32', [-3, 10]);
    await firstValueFrom(scheduleAccumulate({ dtype: 'i32', op: 'avg', accumulator, source: encode('i32', [-4, 1]) }));
    expect(decode('i32', accumulator)).toEqual([-7, 11]);
    await firstValueFrom(scheduleDivide({ dtype: 'i32', data: accumulator, divisor: 2 }));
    expect(decode('i32', accumulator)).toEqual([-3, 5]);
  });
});

describe('f16 and bf16 round to nearest even after every pairwise step', () => {
  it('rounds ties to even', async () => {
    await expectReduction('f16', 'sum', [[1, 1 + 2 ** -10], [2 ** -11, 2 ** -11]], [1, 1 + 2 ** -9]);
    await expectReduction('bf16', 'sum', [[1, 1 + 2 ** -7], [2 ** -8, 2 ** -8]], [1, 1 + 2 ** -6]);
  });

  it('rounds each step, not once at the end', async () => {
    // In f32 the three would sum to 1 + 2^-10; rounding after each step drops both halves.
    await expectReduction('f16', 'sum', [[1], [2 ** -11], [2 ** -11]], [1]);
    await expectReduction('bf16', 'sum', [[1], [2 ** -8], [2 ** -8]], [1]);
  });

  it('overflows to Inf and keeps subnormals', async () => {
    await expectReduction('f16', 'sum', [[65504, 2 ** -24], [65504, 2 ** -24]], [Infinity, 2 ** -23]);
    await expectReduction('f16', 'prod', [[2 ** -12], [2 ** -12]], [2 ** -24]);
  });
});

describe('min and max propagate NaN', () => {
  for (const dtype of ['f16', 'bf16', 'f32', 'f64'] as const) {
    it(`on ${dtype}`, async () => {
      await expectReduction(dtype, 'max', [[NaN, 1, 2], [1, NaN, 1]], [NaN, NaN, 2]);
      await expectReduction(dtype, 'min', [[NaN, 1, 2], [1, NaN, 1]], [NaN, NaN, 1]);
      await expectReduction(dtype, 'max', [[-Infinity, 0], [NaN, -0], [3, -1]], [NaN, -0]); // max(0, -0) is -0, the second
    });
  }

  it('and return the second operand when both compare equal (+0 and -0)', async () => {
    await expectReduction('f32', 'max', [[-0, 0], [0, -0]], [0, -0]);
    await expectReduction('f32', 'min', [[-0, 0], [0, -0]], [0, -0]);
  });

  it('sum and prod propagate NaN too', async () => {
    await expectReduction('f32', 'sum', [[NaN], [1]], [NaN]);
    await expectReduction('f64', 'prod', [[Infinity], [0]], [NaN]);
  });
});

describe('other rules', () => {
  it('bitwise ops act on the two\'s-complement bits', async () => {
    await expectReduction('u8', 'band', [[0b1100], [0b1010]], [0b1000]);
    await expectReduction('i16', 'bor', [[0b1100], [-0x8000]], [-0x8000 | 0b1100]);
    await expectReduction('i64', 'bxor', [[-1n], [5n]], [-6n]);
    await expectReduction('u32', 'bxor', [[0xffffffff], [1]], [0xfffffffe]);
  });

  it('signed min/max compare as signed, unsigned as unsigned', async () => {
    await expectReduction('i8', 'max', [[-1], [1]], [1]);
    await expectReduction('u8', 'max', [[255], [1]], [255]);
    await expectReduction('i64', 'min', [[-(2n ** 63n)], [0n]], [-(2n ** 63n)]);
  });

  it('one slice is the input itself (avg divides by 1)', async () => {
    await expectReduction('i32', 'avg', [[-7, 3]], [-7, 3]);
    await expectReduction('f16', 'max', [[1.5, -2]], [1.5, -2]);
  });

  it('zero-length tensors reduce to empty results', async () => {
    for (const dtype of ['u8', 'f16', 'f64', 'i64'] as const) await expectReduction(dtype, 'sum', [[], [], []], []);
  });
});
