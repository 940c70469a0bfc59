/**
 * The native kernels against the TypeScript reference: every (dtype, op) pair, random lengths
 * (0, 1, odd), random slice counts, unaligned byte offsets, output aliasing slice 0, element
 * offsets into larger buffers, and inputs large enough to run on worker threads split in pieces.
 */
import fc from 'fast-check';
import { firstValueFrom } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { loadAddon } from '../../lib/kernels/addon.js';
import { kernelBackend, reduceSlices, scheduleAccumulate, scheduleDivide, scheduleReduceSpans } from '../../lib/kernels/index.js';
import { referenceAccumulate, referenceDivide, referenceReduceSlices, referenceReduceSpans } from '../../lib/kernels/reference.js';
import { elementTypeOfDType, type DType } from '../../lib/protocol/element-type.js';
import { reduceOpCode, type ReduceOp } from '../../lib/protocol/reduce-op.js';
import { dtypeWidth } from '../../lib/tensor.js';
import { elements, firstDifference, placeAt, VALID_PAIRS } from './support.js';

const native = kernelBackend() === 'native';

function expectSame(dtype: DType, actual: Uint8Array, expected: Uint8Array): void {
  const index = firstDifference(dtype, actual, expected);
  expect(index, `first differing ${dtype} element: ${index}`).toBe(-1);
}

/** A reduceSlices case: k slices of `count` elements, placed at a byte offset, with an output mode. */
function reduceCase(dtype: DType) {
  return fc
    .record({ count: fc.oneof(fc.constantFrom(0, 1, 2, 3), fc.integer({ min: 0, max: 300 })), slices: fc.integer({ min: 1, max: 9 }) })
    .chain(({ count, slices }) =>
      fc.record({
        input: elements(dtype, count * slices),
        slices: fc.constant(slices),
        inputOffset: fc.integer({ min: 0, max: 7 }),
        output: fc.constantFrom('allocated', 'separate', 'slice0'),
        outputOffset: fc.integer({ min: 0, max: 7 }),
      }),
    );
}

describe.skipIf(!native)('native kernels = reference kernels', () => {
  for (const [dtype, op] of VALID_PAIRS) {
    it(`reduceSlices ${op} ${dtype}`, async () => {
      await fc.assert(
        fc.asyncProperty(reduceCase(dtype), async ({ input, slices, inputOffset, output, outputOffset }) => {
          const expected = new Uint8Array(input.length / slices);
          referenceReduceSlices(dtype, op, input, slices, expected);
          const placed = placeAt(input, inputOffset);
          const destination =
            output === 'allocated' ? undefined : output === 'slice0' ? placed.subarray(0, expected.length) : placeAt(new Uint8Array(expected.length), outputOffset);
          const result = await reduceSlices({ dtype, op, input: placed, slices, output: destination });
          if (destination !== undefined) expect(result).toBe(destination);
          expectSame(dtype, result, expected);
        }),
        { numRuns: 25 },
      );
    });

    it(`reduceSpans ${op} ${dtype}: sources anywhere, the output one of them or apart, any divisor`, async () => {
      const arbitrary = fc
        .record({ count: fc.integer({ min: 0, max: 200 }), sources: fc.integer({ min: 1, max: 6 }) })
        .chain(({ count, sources }) =>
          fc.record({
            sources: fc.array(fc.tuple(elements(dtype, count), fc.integer({ min: 0, max: 7 })), { minLength: sources, maxLength: sources }),
            output: fc.integer({ min: -1, max: sources - 1 }),
            divisor: fc.integer({ min: 1, max: 9 }),
            outputOffset: fc.integer({ min: 0, max: 7 }),
          }),
        );
      await fc.assert(
        fc.asyncProperty(arbitrary, async ({ sources, output, divisor, outputOffset }) => {
          const placed = sources.map(([bytes, offset]) => placeAt(bytes, offset));
          const expected = new Uint8Array(placed[0]!.length);
          referenceReduceSpans(dtype, op, placed.map((bytes) => bytes.slice()), expected, divisor);
          const destination = output < 0 ? placeAt(new Uint8Array(expected.length), outputOffset) : placed[output]!;
          const result = await firstValueFrom(scheduleReduceSpans({ dtype, op, sources: placed, output: destination, divisor }));
          expect(result).toBe(destination);
          expectSame(dtype, result, expected);
        }),
        { numRuns: 15 },
      );
    });

    it(`accumulate ${op} ${dtype}, then divide`, async () => {
      const arbitrary = fc.integer({ min: 0, max: 300 }).chain((count) =>
        fc.record({
          accumulator: elements(dtype, count),
          source: elements(dtype, count),
          offsets: fc.tuple(fc.integer({ min: 0, max: 7 }), fc.integer({ min: 0, max: 7 })),
          divisor: fc.integer({ min: 1, max: 10 }),
        }),
      );
      await fc.assert(
        fc.asyncProperty(arbitrary, async ({ accumulator, source, offsets, divisor }) => {
          const expected = accumulator.slice();
          referenceAccumulate(dtype, op, expected, source);
          const actual = placeAt(accumulator, offsets[0]);
          const result = await firstValueFrom(scheduleAccumulate({ dtype, op, accumulator: actual, source: placeAt(source, offsets[1]) }));
          expect(result).toBe(actual);
          expectSame(dtype, actual, expected);
          if (op !== 'avg') return;
          referenceDivide(dtype, expected, divisor);
          await firstValueFrom(scheduleDivide({ dtype, data: actual, divisor }));
          expectSame(dtype, actual, expected);
        }),
        { numRuns: 15 },
      );
    });
  }

  it('accumulates a buffer into itself', async () => {
    const bytes = new Uint8Array(new Int32Array([1, -2, 3, 0x7fffffff]).buffer);
    await firstValueFrom(scheduleAccumulate({ dtype: 'i32', op: 'sum', accumulator: bytes, source: bytes }));
    expect(Array.from(new Int32Array(bytes.buffer))).toEqual([2, -4, 6, -2]);
  });

  // Large enough (over 8 MiB read) to run on a worker thread and be split into pieces across the
  // pool; odd element counts leave partial blocks and vector tails.
  const large: readonly [DType, ReduceOp, number, number][] = [
    ['f32', 'sum', 3, 800_001],
    ['f16', 'avg', 4, 1_100_001],
    ['bf16', 'max', 2, 2_200_003],
    ['i64', 'prod', 5, 220_003],
    ['u8', 'avg', 8, 1_100_001],
  ];
  for (const [dtype, op, slices, count] of large) {
    it(`reduceSlices ${op} ${dtype} over ${slices} x ${count} elements, unaligned`, async () => {
      const raw = fc.sample(elements(dtype, 4096), { numRuns: 1, seed: count })[0]!;
      const input = placeAt(new Uint8Array(count * slices * dtypeWidth(dtype)), 3);
      for (let at = 0; at < input.length; at += raw.length) input.set(raw.subarray(0, Math.min(raw.length, input.length - at)), at);
      const expected = new Uint8Array(input.length / slices);
      referenceReduceSlices(dtype, op, input, slices, expected);
      expectSame(dtype, await reduceSlices({ dtype, op, input, slices }), expected);
      // In place: the output is slice 0.
      expectSame(dtype, await reduceSlices({ dtype, op, input, slices, output: input.subarray(0, expected.length) }), expected);
    });
  }

  it('reduceSpans of 3 separate f16 buffers x 1100001 elements on a worker, avg over a divisor of 5, into the middle one', async () => {
    const count = 1_100_001;
    const raw = fc.sample(elements('f16', 4096), { numRuns: 1, seed: 11 })[0]!;
    const sources = [1, 2, 6].map((offset, index) => {
      const bytes = placeAt(new Uint8Array(count * 2), offset);
      for (let at = 0; at < bytes.length; at += raw.length) bytes.set(raw.subarray(index, Math.min(raw.length, bytes.length - at + index)), at);
      return bytes;
    });
    const expected = new Uint8Array(count * 2);
    referenceReduceSpans('f16', 'avg', sources.map((bytes) => bytes.slice()), expected, 5);
    await firstValueFrom(scheduleReduceSpans({ dtype: 'f16', op: 'avg', sources, output: sources[1]!, divisor: 5 }, 0));
    expectSame('f16', sources[1]!, expected);
  });

  it('accumulates and divides 2 x 1100003 bf16 elements, unaligned, split across the pool', async () => {
    const count = 2 * 1_100_003;
    const raw = fc.sample(elements('bf16', 4096), { numRuns: 1, seed: 7 })[0]!;
    const fill = (offset: number) => {
      const bytes = placeAt(new Uint8Array(count * 2), offset);
      for (let at = 0; at < bytes.length; at += raw.length) bytes.set(raw.subarray(0, Math.min(raw.length, bytes.length - at)), at);
      return bytes;
    };
    const accumulator = fill(1);
    const source = fill(5).reverse();
    const expected = accumulator.slice();
    referenceAccumulate('bf16', 'avg', expected, source);
    referenceDivide('bf16', expected, 3);
    await firstValueFrom(scheduleAccumulate({ dtype: 'bf16', op: 'avg', accumulator, source }));
    await firstValueFrom(scheduleDivide({ dtype: 'bf16', data: accumulator, divisor: 3 }));
    expectSame('bf16', accumulator, expected);
  });

  it('takes element offsets into larger buffers (addon entry points)', () => {
    const addon = loadAddon();
    const f32 = elementTypeOfDType('f32');
    const input = new Uint8Array(new Float32Array([9, 9, 1, 2, 3, 4, 5, 6, 9]).buffer);
    const output = new Uint8Array(5 * 4).fill(0xff);
    addon.reduceSlices(f32, reduceOpCode('sum'), input, 2, 2, 3, output, 1);
    expect(Array.from(new Float32Array(output.buffer, 4, 2))).toEqual([9, 12]);
    expect(Array.from(output.subarray(0, 4))).toEqual([0xff, 0xff, 0xff, 0xff]);
    expect(Array.from(output.subarray(12))).toEqual(new Array(8).fill(0xff));

    const accumulator = new Uint8Array(new Float32Array([1, 1, 1, 1]).buffer);
    addon.accumulate(f32, reduceOpCode('max'), accumulator, 1, input, 5, 2);
    expect(Array.from(new Float32Array(accumulator.buffer))).toEqual([1, 4, 5, 1]);

    const data = new Uint8Array(new Float32Array([8, 8, 8]).buffer);
    addon.divide(f32, data, 2, 1, 4);
    expect(Array.from(new Float32Array(data.buffer))).toEqual([8, 8, 2]);
  });
});
