/**
 * Bad arguments give a typed RxcclError with the right code, never a crash: through the public
 * API (errors arrive as error notifications, at subscribe time) and straight into the addon.
 */
import { firstValueFrom } from 'rxjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { ConfigurationError, KernelError, RxcclError } from '../../lib/errors.js';
import { type KernelAddon, loadAddon, rethrowNativeError } from '../../lib/kernels/addon.js';
import { kernelBackend, reduceSlices, scheduleAccumulate, scheduleDivide, scheduleReduce, validateReduction } from '../../lib/kernels/index.js';
import type { DType } from '../../lib/protocol/element-type.js';
import type { ReduceOp } from '../../lib/protocol/reduce-op.js';

function detached(length: number): Uint8Array {
  const bytes = new Uint8Array(length);
  structuredClone(bytes.buffer, { transfer: [bytes.buffer] });
  return bytes;
}

async function expectCode(promise: Promise<unknown>, code: 'KERNEL' | 'INVALID_CONFIGURATION', message?: RegExp): Promise<void> {
  const error = await promise.then(
    () => null,
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(RxcclError);
  expect((error as RxcclError).code).toBe(code);
  if (message) expect((error as Error).message).toMatch(message);
}

describe('validateReduction', () => {
  it('rejects bitwise ops on floats, unknown dtypes and ops with ConfigurationError', () => {
    for (const dtype of ['f16', 'bf16', 'f32', 'f64'] as const) {
      for (const op of ['band', 'bor', 'bxor'] as const) expect(() => validateReduction(dtype, op)).toThrow(ConfigurationError);
    }
    expect(() => validateReduction('f8' as DType, 'sum')).toThrow(/unknown dtype "f8"/);
    expect(() => validateReduction('f32', 'mean' as ReduceOp)).toThrow(/unknown reduce op "mean"/);
    expect(() => validateReduction('i64', 'bxor')).not.toThrow();
    expect(() => validateReduction('bf16', 'avg')).not.toThrow();
  });
});

describe('request checks', () => {
  const f32 = (count: number) => new Uint8Array(count * 4);

  it('defers errors to subscription (cold observables)', async () => {
    const observable = scheduleReduce({ dtype: 'f32', op: 'band', input: f32(2), slices: 2 });
    await expectCode(firstValueFrom(observable), 'INVALID_CONFIGURATION', /bitwise/);
  });

  it('rejects undefined reductions with INVALID_CONFIGURATION', async () => {
    await expectCode(reduceSlices({ dtype: 'f16', op: 'bxor', input: f32(2), slices: 1 }), 'INVALID_CONFIGURATION');
    await expectCode(reduceSlices({ dtype: 'x' as DType, op: 'sum', input: f32(2), slices: 1 }), 'INVALID_CONFIGURATION');
    await expectCode(firstValueFrom(scheduleDivide({ dtype: 'q8' as DType, data: f32(1), divisor: 2 })), 'INVALID_CONFIGURATION');
  });

  it('rejects lengths that are not whole elements or whole slices', async () => {
    await expectCode(reduceSlices({ dtype: 'f32', op: 'sum', input: new Uint8Array(7), slices: 1 }), 'KERNEL', /not a multiple of the 4-byte f32/);
    await expectCode(reduceSlices({ dtype: 'f32', op: 'sum', input: f32(3), slices: 2 }), 'KERNEL', /3 f32 elements, which do not split into 2/);
    await expectCode(reduceSlices({ dtype: 'f64', op: 'sum', input: new Uint8Array(16), slices: 2, output: new Uint8Array(7) }), 'KERNEL');
  });

  it('rejects a bad slice count', async () => {
    for (const slices of [0, -1, 1.5, NaN, Infinity, '2' as unknown as number]) {
      await expectCode(reduceSlices({ dtype: 'f32', op: 'sum', input: f32(4), slices }), 'KERNEL', /slices must be a positive integer/);
    }
  });

  it('rejects an output of the wrong size', async () => {
    await expectCode(reduceSlices({ dtype: 'f32', op: 'sum', input: f32(4), slices: 2, output: f32(1) }), 'KERNEL', /output has 4 bytes; one slice of input is 8/);
    await expectCode(reduceSlices({ dtype: 'f32', op: 'sum', input: f32(4), slices: 2, output: f32(3) }), 'KERNEL');
  });

  it('rejects buffers that are not Uint8Arrays', async () => {
    const input = new Float32Array(4) as unknown as Uint8Array;
    await expectCode(reduceSlices({ dtype: 'f32', op: 'sum', input, slices: 2 }), 'KERNEL', /input must be a Uint8Array of f32 bytes, got Float32Array/);
    await expectCode(reduceSlices({ dtype: 'f32', op: 'sum', input: f32(2), slices: 1, output: [0, 0] as unknown as Uint8Array }), 'KERNEL');
    await expectCode(reduceSlices({ dtype: 'u8', op: 'sum', input: new Uint8ClampedArray(2) as unknown as Uint8Array, slices: 1 }), 'KERNEL');
  });

  it('rejects detached buffers', async () => {
    await expectCode(reduceSlices({ dtype: 'f32', op: 'sum', input: detached(8), slices: 1 }), 'KERNEL', /detached/);
    await expectCode(reduceSlices({ dtype: 'f32', op: 'sum', input: f32(0), slices: 1, output: detached(0) }), 'KERNEL', /detached/);
    await expectCode(firstValueFrom(scheduleAccumulate({ dtype: 'u8', op: 'sum', accumulator: detached(4), source: new Uint8Array(4) })), 'KERNEL');
    await expectCode(firstValueFrom(scheduleDivide({ dtype: 'u8', data: detached(4), divisor: 2 })), 'KERNEL');
  });

  it('rejects an output overlapping the input anywhere but slice 0', async () => {
    const input = f32(4);
    await expectCode(reduceSlices({ dtype: 'f32', op: 'sum', input, slices: 2, output: input.subarray(8) }), 'KERNEL', /overlaps/);
    await expectCode(reduceSlices({ dtype: 'f32', op: 'sum', input, slices: 2, output: input.subarray(4, 12) }), 'KERNEL', /overlaps/);
    await expect(reduceSlices({ dtype: 'f32', op: 'sum', input, slices: 2, output: input.subarray(0, 8) })).resolves.toBeDefined();
  });

  it('rejects accumulator and source of different lengths or shifted overlap', async () => {
    const bytes = new Uint8Array(12);
    const accumulate = (accumulator: Uint8Array, source: Uint8Array) => firstValueFrom(scheduleAccumulate({ dtype: 'i32', op: 'sum', accumulator, source }));
    await expectCode(accumulate(bytes.subarray(0, 8), new Uint8Array(4)), 'KERNEL', /must be equal/);
    await expectCode(accumulate(bytes.subarray(0, 8), bytes.subarray(4, 12)), 'KERNEL', /overlap/);
    await expectCode(accumulate(new Uint8Array(6), new Uint8Array(6)), 'KERNEL', /multiple of the 4-byte i32/);
  });

  it('rejects a divisor that is not a positive integer', async () => {
    for (const divisor of [0, -2, 0.5, NaN]) {
      await expectCode(firstValueFrom(scheduleDivide({ dtype: 'f32', data: f32(1), divisor })), 'KERNEL', /divisor/);
    }
  });
});

describe.skipIf(kernelBackend() !== 'native')('addon argument checks', () => {
  // Loaded in beforeAll: a skipped describe block still runs its body, but not its hooks.
  let addon: KernelAddon;
  beforeAll(() => {
    addon = loadAddon();
  });
  const call = (run: () => unknown) => {
    try {
      run();
    } catch (error) {
      rethrowNativeError(error);
    }
  };
  const bytes = new Uint8Array(64);

  it('maps codes onto KernelError and ConfigurationError', () => {
    expect(() => call(() => addon.reduceSlices(0, 1, bytes, 0, 1, 1, bytes, 0))).toThrow(ConfigurationError);
    expect(() => call(() => addon.reduceSlices(13, 1, bytes, 0, 1, 1, bytes, 0))).toThrow(ConfigurationError);
    expect(() => call(() => addon.reduceSlices('f32' as unknown as number, 1, bytes, 0, 1, 1, bytes, 0))).toThrow(ConfigurationError);
    expect(() => call(() => addon.accumulate(11, 9, bytes, 0, bytes, 0, 1))).toThrow(ConfigurationError);
    expect(() => call(() => addon.accumulate(11, 6, bytes, 0, bytes, 0, 1))).toThrow(/bitwise/);
    expect(() => call(() => addon.divide(11, bytes, 0, 1, 0))).toThrow(KernelError);
  });

  it('rejects ranges outside the buffers, overflowing sizes and bad counts', () => {
    expect(() => call(() => addon.reduceSlices(11, 1, bytes, 1, 8, 2, new Uint8Array(32), 0))).toThrow(/input has 64 bytes, too few/);
    expect(() => call(() => addon.reduceSlices(11, 1, bytes, 0, 4, 2, new Uint8Array(32), 5))).toThrow(/output has 32 bytes/);
    expect(() => call(() => addon.reduceSlices(12, 1, bytes, 0, 2 ** 53 - 1, 2 ** 20, bytes, 0))).toThrow(KernelError);
    expect(() => call(() => addon.divide(12, bytes, 2 ** 53 - 1, 1, 1))).toThrow(KernelError);
    expect(() => call(() => addon.divide(11, bytes, -1, 1, 1))).toThrow(/non-negative safe integer/);
    expect(() => call(() => addon.divide(11, bytes, 0.5, 1, 1))).toThrow(/non-negative safe integer/);
    expect(() => call(() => addon.reduceSlices(11, 1, bytes, 0, 1, 0, bytes, 0))).toThrow(/slices must be at least 1/);
  });

  it('rejects wrong buffers, overlap, callbacks and argument counts', () => {
    const clamped = new Uint8ClampedArray(8) as unknown as Uint8Array;
    expect(() => call(() => addon.divide(1, clamped, 0, 1, 1))).toThrow(/data must be a Uint8Array/);
    expect(() => call(() => addon.divide(1, detached(8), 0, 1, 1))).toThrow(/detached/);
    expect(() => call(() => addon.reduceSlices(1, 1, bytes, 0, 8, 2, bytes, 4))).toThrow(/overlaps/);
    expect(() => call(() => addon.accumulate(1, 1, bytes, 0, bytes, 1, 8))).toThrow(/overlap/);
    expect(() => call(() => addon.divide(1, bytes, 0, 1, 1, 'later' as never))).toThrow(/callback must be a function/);
    expect(() => call(() => (addon.divide as (...args: unknown[]) => void)(1, bytes))).toThrow(/expected 5 or 6 arguments, got 2/);
    expect(() => call(() => addon.cancel({} as never))).toThrow(/token/);
  });

  it('leaves non-addon errors alone', () => {
    const error = new TypeError('other');
    expect(() => rethrowNativeError(error)).toThrow(error);
  });
});
