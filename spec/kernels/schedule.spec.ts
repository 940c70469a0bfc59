/**
 * Scheduling: cold observables, many kernels in flight at once, cancellation by unsubscribing,
 * and the synchronous path below SYNC_CROSSOVER_BYTES.
 */
import fc from 'fast-check';
import { firstValueFrom, lastValueFrom, merge, tap, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { loadAddon } from '../../lib/kernels/addon.js';
import { kernelBackend, reduceSlices, scheduleAccumulate, scheduleReduce, SYNC_CROSSOVER_BYTES } from '../../lib/kernels/index.js';
import { referenceReduceSlices } from '../../lib/kernels/reference.js';
import { FOLD_IN_PLACE_BYTES } from '../../lib/collectives/schedule/links-executor.js';
import type { DType } from '../../lib/protocol/element-type.js';
import type { ReduceOp } from '../../lib/protocol/reduce-op.js';
import { elements, firstDifference } from './support.js';

interface Case {
  dtype: DType;
  op: ReduceOp;
  slices: number;
  input: Uint8Array;
}

/** Inputs just above the crossover (so they are queued on worker threads), all different. */
function largeCases(count: number): Case[] {
  const kinds: [DType, ReduceOp, number][] = [
    ['f32', 'sum', 4],
    ['f16', 'avg', 3],
    ['i32', 'prod', 2],
    ['u8', 'max', 5],
    ['f64', 'min', 2],
  ];
  const block = fc.sample(elements('u8', 8192), { numRuns: 1, seed: 42 })[0]!;
  return Array.from({ length: count }, (_, i) => {
    const [dtype, op, slices] = kinds[i % kinds.length]!;
    const sliceBytes = 8 * (Math.ceil(SYNC_CROSSOVER_BYTES / slices / 8) + i + 1);
    const input = new Uint8Array(slices * sliceBytes);
    for (let at = 0; at < input.length; at += block.length) input.set(block.subarray(0, input.length - at), at);
    input[i] = i;
    return { dtype, op, slices, input };
  });
}

function referenceResult(c: Case): Uint8Array {
  const expected = new Uint8Array(c.input.length / c.slices);
  referenceReduceSlices(c.dtype, c.op, c.input, c.slices, expected);
  return expected;
}

/** Results one kernel at a time: the baseline that concurrency must not change. */
async function sequentialResults(cases: Case[]): Promise<Uint8Array[]> {
  const results: Uint8Array[] = [];
  for (const c of cases) results.push(await reduceSlices(c));
  return results;
}

describe('scheduling', () => {
  it('is cold: nothing runs until subscription, and each subscription runs again', async () => {
    const accumulator = new Uint8Array([1, 2]);
    const observable = scheduleAccumulate({ dtype: 'u8', op: 'sum', accumulator, source: new Uint8Array([10, 10]) });
    expect(Array.from(accumulator)).toEqual([1, 2]);
    await firstValueFrom(observable);
    await firstValueFrom(observable);
    expect(Array.from(accumulator)).toEqual([21, 22]);
  });

  it('emits once, then completes', async () => {
    const small = await lastValueFrom(scheduleReduce({ dtype: 'u8', op: 'sum', input: new Uint8Array([1, 2]), slices: 2 }).pipe(toArray()));
    expect(small.map((bytes) => Array.from(bytes))).toEqual([[3]]);
    const [large] = largeCases(1);
    const emitted = await lastValueFrom(scheduleReduce(large!).pipe(toArray()));
    expect(emitted).toHaveLength(1);
  });

  it('runs small kernels synchronously on subscribe', () => {
    let result: Uint8Array | undefined;
    scheduleReduce({ dtype: 'i16', op: 'min', input: new Uint8Array(new Int16Array([5, -3]).buffer), slices: 2 }).subscribe((value) => (result = value));
    expect(result && Array.from(new Int16Array(result.buffer))).toEqual([-3]);
  });

  it('runs large kernels off the JS thread: subscribe returns before the result', async () => {
    const [large] = largeCases(1);
    let result: Uint8Array | undefined;
    const done = new Promise<void>((resolve) =>
      scheduleReduce(large!).subscribe({
        next: (value) => (result = value),
        complete: resolve,
      }),
    );
    expect(result).toBeUndefined();
    await done;
    expect(firstDifference(large!.dtype, result!, referenceResult(large!))).toBe(-1);
  });

  it("follows a caller's own crossover: a 2 MiB-read accumulate runs in place with the ring's, queued without", async () => {
    const count = (1 << 20) / 4;
    const accumulator = new Uint8Array(new Float32Array(count).fill(1).buffer);
    const source = new Uint8Array(new Float32Array(count).fill(2).buffer);
    let inPlace: Uint8Array | undefined;
    scheduleAccumulate({ dtype: 'f32', op: 'sum', accumulator, source }, FOLD_IN_PLACE_BYTES).subscribe((value) => (inPlace = value));
    expect(inPlace).toBe(accumulator);
    expect(new Float32Array(accumulator.buffer)[count - 1]).toBe(3);
    let queued: Uint8Array | undefined;
    const done = lastValueFrom(scheduleAccumulate({ dtype: 'f32', op: 'sum', accumulator, source }).pipe(tap((value) => (queued = value))));
    expect(queued).toBeUndefined();
    await done;
    expect(new Float32Array(accumulator.buffer)[0]).toBe(5);
  });

  it('gives the same results with 100 kernels in flight as one at a time', async () => {
    const cases = largeCases(100);
    const sequential = await sequentialResults(cases);
    const concurrent = await Promise.all(cases.map((c) => reduceSlices(c)));
    cases.forEach((c, i) => expect(firstDifference(c.dtype, concurrent[i]!, sequential[i]!), `case ${i}`).toBe(-1));
    // The baseline itself is right (one case of each kind; native.spec.ts covers the rest).
    cases.slice(0, 5).forEach((c, i) => expect(firstDifference(c.dtype, sequential[i]!, referenceResult(c)), `case ${i}`).toBe(-1));
  });

  it('merges concurrent kernels as an RxJS stream', async () => {
    const cases = largeCases(10);
    const results = await lastValueFrom(merge(...cases.map((c) => scheduleReduce(c))).pipe(toArray()));
    expect(results).toHaveLength(10);
  });

  it('cancelling half (unsubscribe) leaves the rest correct, and cancelled ones never emit', async () => {
    const cases = largeCases(100);
    const expected = await sequentialResults(cases);
    const outputs = cases.map((c) => new Uint8Array(c.input.length / c.slices));
    const emitted = new Set<number>();
    const finished = cases.map(
      (c, i) =>
        new Promise<void>((resolve, reject) => {
          const subscription = scheduleReduce({ ...c, output: outputs[i] }).subscribe({
            next: () => emitted.add(i),
            error: reject,
            complete: resolve,
          });
          if (i % 2 === 1) {
            subscription.unsubscribe();
            resolve();
          }
        }),
    );
    await Promise.all(finished);
    // Let any cancelled kernel that had already started finish (and try to emit).
    await reduceSlices({ dtype: 'f32', op: 'sum', input: new Uint8Array(SYNC_CROSSOVER_BYTES * 4), slices: 4 });
    await new Promise((resolve) => setTimeout(resolve, 50));
    cases.forEach((c, i) => {
      if (i % 2 === 0) {
        expect(emitted.has(i), `case ${i} emitted`).toBe(true);
        expect(firstDifference(c.dtype, outputs[i]!, expected[i]!), `case ${i}`).toBe(-1);
      } else {
        expect(emitted.has(i), `cancelled case ${i} emitted`).toBe(false);
        // Cancelled before it started (untouched) or after (it completed its writes).
        const untouched = outputs[i]!.every((byte) => byte === 0);
        expect(untouched || firstDifference(c.dtype, outputs[i]!, expected[i]!) === -1, `cancelled case ${i} output`).toBe(true);
      }
    });
  });

  // Retried: a worker frees up if this thread is descheduled for longer than a busy kernel runs
  // between queueing them and the cancel (seen once in a full suite on 2 loaded cores); a cancel
  // that does not work fails every try.
  it.skipIf(kernelBackend() !== 'native')('a kernel cancelled while queued never runs', { retry: 2 }, async () => {
    const addon = loadAddon();
    const poolSize = Number(process.env.UV_THREADPOOL_SIZE ?? 4);
    // Occupy every libuv worker with a long kernel, so the next one can only wait in the queue.
    const big = new Uint8Array(64 << 20);
    const busy = Array.from(
      { length: poolSize },
      () => new Promise<boolean>((resolve) => addon.reduceSlices(12, 2, big, 0, big.length / 16, 2, new Uint8Array(big.length / 2), 0, (_error, ran) => resolve(ran))),
    );
    const data = new Uint8Array([8, 8]);
    const cancelled = new Promise<boolean>((resolve) => {
      const token = addon.divide(1, data, 0, 2, 2, (_error, ran) => resolve(ran));
      addon.cancel(token!);
      addon.cancel(token!); // repeated cancels are harmless
    });
    expect(await cancelled).toBe(false);
    expect(Array.from(data)).toEqual([8, 8]);
    expect(await Promise.all(busy)).toEqual(new Array(poolSize).fill(true));
  });
});
