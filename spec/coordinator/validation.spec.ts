/**
 * Argument validation: every RankSession method rejects bad input with a typed error
 * (INVALID_CONFIGURATION or PROTOCOL) before anything goes on the wire.
 *
 * "Nothing was sent" is proved twice: no socket in this process writes a byte while the bad calls
 * run (net.Socket.prototype.write is counted), and afterwards every rank still runs collectives
 * and point-to-point messages on the same tags and rails, and the coordinator ends cleanly (a
 * stray request would have failed the agreement, been matched by a later receive, or aborted).
 */
import { Socket } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { RankSession } from '../../lib/session/rank-session.js';
import { resolveSessionOptions } from '../../lib/session/session-options.js';
import { MAX_TIMEOUT_MS } from '../../lib/transport/transport-kind.js';
import { rejection, sleep, startJob, type TestJob } from '../helpers/job.js';

const WORLD = 3;
const RAILS = 2;
const TYPED_CODES = ['INVALID_CONFIGURATION', 'PROTOCOL'];

let writes = 0;
const originalWrite = Socket.prototype.write;
beforeAll(() => {
  Socket.prototype.write = function (this: Socket, ...args: unknown[]) {
    writes += 1;
    return (originalWrite as (...a: unknown[]) => boolean).apply(this, args);
  } as typeof Socket.prototype.write;
});
afterAll(() => {
  Socket.prototype.write = originalWrite;
});

const jobs: TestJob[] = [];
afterEach(async () => {
  await Promise.all(jobs.splice(0).map((job) => job.dispose()));
});

/** Lets every pending callback and I/O completion run, so that a late write would be counted. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

// Loosely typed handles for calls that TypeScript would (rightly) refuse.
type Loose = Record<string, (...args: unknown[]) => unknown>;
const loose = (session: RankSession) => session as unknown as Loose;

const f32 = (n: number) => new Float32Array(n);
const i32 = (n: number) => new Int32Array(n);

/** [name, call] pairs; every call is made on rank 1 of a world of 3 ranks with 2 rails. */
const BAD_CALLS: readonly [string, (session: RankSession) => unknown][] = [
  // data that is not a tensor
  ['allReduce(plain array)', (s) => loose(s).allReduce!([1, 2, 3])],
  ['allReduce(null)', (s) => loose(s).allReduce!(null)],
  ['allReduce(string)', (s) => loose(s).allReduce!('abc')],
  ['allReduce(DataView)', (s) => loose(s).allReduce!(new DataView(new ArrayBuffer(8)))],
  ['allReduce(Uint8ClampedArray)', (s) => loose(s).allReduce!(new Uint8ClampedArray(3))],
  ['allReduce({ dtype: f128 })', (s) => loose(s).allReduce!({ dtype: 'f128', data: f32(1) })],
  ['allReduce({ dtype: bf16, data: Float32Array })', (s) => loose(s).allReduce!({ dtype: 'bf16', data: f32(2) })],
  ['broadcast(number)', (s) => loose(s).broadcast!(42, 0)],
  ['allGather(undefined)', (s) => loose(s).allGather!(undefined)],
  ['gather(ArrayBuffer)', (s) => loose(s).gather!(new ArrayBuffer(8), 0)],
  ['allToAll(object)', (s) => loose(s).allToAll!({ length: 3 })],
  ['send(plain array)', (s) => loose(s).send!(0, 1, [1, 2])],
  // reduce ops
  ['allReduce(op mean)', (s) => loose(s).allReduce!(f32(3), 'mean')],
  ['allReduce(op SUM)', (s) => loose(s).allReduce!(i32(3), 'SUM')],
  ['allReduce(f32, bxor)', (s) => s.allReduce(f32(3), 'bxor')],
  ['allReduce(f64, band)', (s) => s.allReduce(new Float64Array(3), 'band')],
  ['allReduce(bf16, bor)', (s) => s.allReduce({ dtype: 'bf16', data: new Uint16Array(3) }, 'bor')],
  ['allReduce(f16, bxor)', (s) => s.allReduce({ dtype: 'f16', data: new Uint16Array(3) }, 'bxor')],
  ['reduce(op undefined)', (s) => loose(s).reduce!(i32(3), undefined, 0)],
  ['reduce(f32, bor)', (s) => s.reduce(f32(3), 'bor', 0)],
  ['reduceScatter(f64, bxor)', (s) => s.reduceScatter(new Float64Array(3), 'bxor')],
  ['reduceScatter(op 7)', (s) => loose(s).reduceScatter!(i32(3), 7)],
  // roots
  ['reduce(root -1)', (s) => s.reduce(i32(3), 'sum', -1)],
  ['reduce(root 3 = world size)', (s) => s.reduce(i32(3), 'sum', 3)],
  ['reduce(root 1.5)', (s) => s.reduce(i32(3), 'sum', 1.5)],
  ['reduce(root NaN)', (s) => s.reduce(i32(3), 'sum', Number.NaN)],
  ['broadcast(root 3)', (s) => s.broadcast(i32(3), 3)],
  ['broadcast(root -1)', (s) => s.broadcast(i32(3), -1)],
  ['broadcast(root "0")', (s) => loose(s).broadcast!(i32(3), '0')],
  ['gather(root 3)', (s) => s.gather(i32(3), 3)],
  ['gather(root 2^32)', (s) => s.gather(i32(3), 2 ** 32)],
  ['scatter(root 3)', (s) => s.scatter(null, 3, 1)],
  ['scatter(root -1)', (s) => s.scatter(i32(3), -1, 1)],
  // lengths
  ['scatter(root passes null)', (s) => s.scatter(null, 1, 2)],
  ['scatter(countPerRank -1)', (s) => s.scatter(null, 0, -1)],
  ['scatter(countPerRank 1.5)', (s) => s.scatter(null, 0, 1.5)],
  ['scatter(root data 5 elements, countPerRank 2)', (s) => s.scatter(i32(5), 1, 2)],
  ['scatter(non-root data 4 elements, countPerRank 2)', (s) => s.scatter(i32(4), 0, 2)],
  ['reduceScatter(4 elements over 3 ranks)', (s) => s.reduceScatter(i32(4))],
  ['reduceScatter(1 element over 3 ranks)', (s) => s.reduceScatter(f32(1), 'max')],
  ['allToAll(4 elements over 3 ranks)', (s) => s.allToAll(i32(4))],
  ['allToAllV(2 counts for 3 ranks)', (s) => s.allToAllV(i32(3), [1, 2])],
  ['allToAllV(4 counts for 3 ranks)', (s) => s.allToAllV(i32(3), [1, 1, 1, 0])],
  ['allToAllV(negative count)', (s) => s.allToAllV(i32(3), [4, -1, 0])],
  ['allToAllV(fractional count)', (s) => s.allToAllV(i32(3), [1.5, 1.5, 0])],
  ['allToAllV(NaN count)', (s) => s.allToAllV(i32(3), [Number.NaN, 3, 0])],
  ['allToAllV(counts sum 4, data 3)', (s) => s.allToAllV(i32(3), [2, 2, 0])],
  ['allToAllV(counts sum 2, data 3)', (s) => s.allToAllV(i32(3), [1, 1, 0])],
  ['allToAllV(counts not an array)', (s) => loose(s).allToAllV!(i32(3), { length: 3, 0: 1, 1: 1, 2: 1 })],
  // point-to-point ranks
  ['send(destination -1)', (s) => s.send(-1, 0, i32(1))],
  ['send(destination 3)', (s) => s.send(3, 0, i32(1))],
  ['send(destination 0.5)', (s) => s.send(0.5, 0, i32(1))],
  ['send(destination NaN)', (s) => s.send(Number.NaN, 0, i32(1))],
  ['receive(source -1)', (s) => s.receive(-1, 0, { dtype: 'i32', count: 1 })],
  ['receive(source 3)', (s) => s.receive(3, 0, { dtype: 'i32', count: 1 })],
  ['receive(source ANY_RANK number)', (s) => s.receive(0xffffffff, 0, { dtype: 'i32', count: 1 })],
  // tags
  ['send(tag -1)', (s) => s.send(0, -1, i32(1))],
  ['send(tag -1n)', (s) => s.send(0, -1n, i32(1))],
  ['send(tag 2^64)', (s) => s.send(0, 2n ** 64n, i32(1))],
  ['send(tag 1.5)', (s) => s.send(0, 1.5, i32(1))],
  ['send(tag NaN)', (s) => s.send(0, Number.NaN, i32(1))],
  ['send(tag Infinity)', (s) => s.send(0, Number.POSITIVE_INFINITY, i32(1))],
  ['send(tag 2^53, unsafe number)', (s) => s.send(0, 2 ** 53, i32(1))],
  ['send(tag "5")', (s) => loose(s).send!(0, '5', i32(1))],
  ['receive(tag -1)', (s) => s.receive(0, -1, { dtype: 'i32', count: 1 })],
  ['receive(tag 2^64)', (s) => s.receive(null, 2n ** 64n, { dtype: 'i32', count: 1 })],
  // rails
  ['send(rail 2 of 2)', (s) => s.send(0, 1, i32(1), { rail: 2 })],
  ['send(rail -1)', (s) => s.send(0, 1, i32(1), { rail: -1 })],
  ['send(rail 0.5)', (s) => s.send(0, 1, i32(1), { rail: 0.5 })],
  ['receive(rail 2 of 2)', (s) => s.receive(0, 1, { dtype: 'i32', count: 1 }, { rail: 2 })],
  ['receive(rail NaN)', (s) => s.receive(0, 1, { dtype: 'i32', count: 1 }, { rail: Number.NaN })],
  // receive shapes
  ['receive(like null)', (s) => loose(s).receive!(0, 1, null)],
  ['receive(like dtype f128)', (s) => loose(s).receive!(0, 1, { dtype: 'f128', count: 1 })],
  ['receive(like count -1)', (s) => s.receive(0, 1, { dtype: 'i32', count: -1 })],
  ['receive(like count 1.5)', (s) => s.receive(0, 1, { dtype: 'i32', count: 1.5 })],
  ['receive(like count missing)', (s) => loose(s).receive!(0, 1, { dtype: 'i32' })],
  // pull-based receive: refused when created
  ['messages(source 3)', (s) => s.messages(3, 1, { dtype: 'i32', count: 1 })],
  ['messages(tag -1)', (s) => s.messages(0, -1, { dtype: 'i32', count: 1 })],
  ['messages(like dtype f128)', (s) => loose(s).messages!(0, 1, { dtype: 'f128', count: 1 })],
  // timeouts and control
  ['heartbeat(0)', (s) => s.heartbeat(0)],
  ['heartbeat(-5)', (s) => s.heartbeat(-5)],
  ['heartbeat(NaN)', (s) => s.heartbeat(Number.NaN)],
  ['setTimeout(0)', (s) => s.setTimeout(0)],
  ['setTimeout(-1)', (s) => s.setTimeout(-1)],
  ['setTimeout(NaN)', (s) => s.setTimeout(Number.NaN)],
  ['setTimeout(Infinity)', (s) => s.setTimeout(Number.POSITIVE_INFINITY)],
  ['setTimeout(2^70 ms, beyond the u64 tag)', (s) => s.setTimeout(2 ** 70)],
  ['setTimeout(MAX_TIMEOUT_MS + 1)', (s) => s.setTimeout(MAX_TIMEOUT_MS + 1)],
  ['heartbeat(2^40 ms)', (s) => s.heartbeat(2 ** 40)],
  ['abort("")', (s) => s.abort('')],
];

/** Calls `call` and returns what it threw or rejected with (a synchronous throw counts). */
async function failureOf(call: () => unknown): Promise<Error & { code?: string }> {
  return rejection(Promise.resolve().then(call));
}

/** Every rank runs a collective and a message on rank 1's rails and tags; then all close cleanly. */
async function provesNothingWasSent(job: TestJob & { sessions: RankSession[] }): Promise<void> {
  await Promise.all(
    job.sessions.map(async (session) => {
      const sum = await session.allReduce(Int32Array.of(session.rank + 1));
      expect(Array.from(sum)).toEqual([6]);
      const gathered = await session.allGather(Int32Array.of(session.rank));
      expect(Array.from(gathered)).toEqual([0, 1, 2]);
      if (session.rank === 1) {
        for (const rail of [0, 1]) await session.send(0, 1, Int32Array.of(10 + rail), { rail });
        await session.send(0, 0, Int32Array.of(20));
      }
      if (session.rank === 0) {
        for (const rail of [0, 1]) expect(Array.from((await session.receive(1, 1, { dtype: 'i32', count: 1 }, { rail })) as Int32Array)).toEqual([10 + rail]);
        expect(Array.from((await session.receive(null, 0, { dtype: 'i32', count: 1 })) as Int32Array)).toEqual([20]);
      }
      await session.barrier();
      expect(session.error).toBeUndefined();
      await session.close();
    }),
  );
  await expect(job.coordinator.done).resolves.toBeUndefined();
}

describe('argument validation', () => {
  it.each(['tcp_host_staged', 'tcp_peer'] as const)(`%s: rejects ${BAD_CALLS.length} kinds of bad input with a typed error, sending nothing`, async (transport) => {
    const job = await startJob(WORLD, { transport, rails: RAILS, timeoutMs: 10_000 });
    jobs.push(job);
    const rank1 = job.sessions[1]!;
    await settle();
    const before = writes;
    const problems: string[] = [];
    for (const [name, call] of BAD_CALLS) {
      let error: Error & { code?: string };
      try {
        error = await failureOf(() => call(rank1));
      } catch {
        problems.push(`${name}: was accepted`);
        continue;
      }
      if (!TYPED_CODES.includes(error.code ?? '')) problems.push(`${name}: ${error.name} code ${String(error.code)}: ${error.message}`);
      else if (error.message.length < 10) problems.push(`${name}: unhelpful message ${JSON.stringify(error.message)}`);
      await settle();
      if (writes !== before) problems.push(`${name}: wrote to a socket`);
    }
    expect(problems).toEqual([]);
    expect(rank1.error).toBeUndefined();
    await provesNothingWasSent(job);
  });

  it('messages name what was wrong', async () => {
    const job = await startJob(WORLD, { rails: RAILS, timeoutMs: 10_000 });
    jobs.push(job);
    const s = job.sessions[1]!;
    const message = async (call: () => unknown) => (await failureOf(call)).message;
    expect(await message(() => s.reduce(i32(3), 'sum', 3))).toMatch(/root rank 3 is outside world size 3/);
    expect(await message(() => s.send(5, 0, i32(1)))).toMatch(/destination rank 5/);
    expect(await message(() => s.receive(7, 0, { dtype: 'i32', count: 1 }))).toMatch(/source rank 7/);
    expect(await message(() => s.send(0, -1, i32(1)))).toMatch(/tag -1/);
    expect(await message(() => s.send(0, 1, i32(1), { rail: 2 }))).toMatch(/rail 2/);
    expect(await message(() => s.allReduce(f32(1), 'bxor'))).toMatch(/bxor.*f32|f32.*bxor/);
    expect(await message(() => loose(s).allReduce!(f32(1), 'mean'))).toMatch(/mean/);
    expect(await message(() => s.reduceScatter(i32(4)))).toMatch(/4 is not divisible by world size 3/);
    expect(await message(() => s.allToAll(i32(4)))).toMatch(/4 is not divisible by world size 3/);
    expect(await message(() => s.allToAllV(i32(3), [1, 2]))).toMatch(/3 send counts, got 2/);
    expect(await message(() => s.allToAllV(i32(3), [2, 2, 0]))).toMatch(/sum to 4, data has 3/);
    expect(await message(() => loose(s).allReduce!([1, 2]))).toMatch(/typed array/);
    await provesNothingWasSent(job);
  });

  it('a bad call is refused at once, even while an earlier collective of the same rank is pending', async () => {
    const job = await startJob(WORLD, { rails: RAILS, timeoutMs: 10_000 });
    jobs.push(job);
    const [zero, one, two] = job.sessions as [RankSession, RankSession, RankSession];
    const pending = one.allReduce(Int32Array.of(1));
    const error = await failureOf(() => one.allReduce(f32(2), 'band'));
    expect(error.code).toBe('INVALID_CONFIGURATION');
    // The pending allReduce was not disturbed and is completed by the other ranks.
    const [a, b, c] = await Promise.all([zero.allReduce(Int32Array.of(1)), pending, two.allReduce(Int32Array.of(1))]);
    for (const result of [a, b, c]) expect(Array.from(result)).toEqual([3]);
    await provesNothingWasSent(job);
  });

  it('accepts the edge values that are valid: rank/root/tag/rail bounds, zero counts, huge timeouts', async () => {
    const job = await startJob(2, { rails: 2, timeoutMs: 10_000 });
    jobs.push(job);
    await Promise.all(
      job.sessions.map(async (session) => {
        const other = 1 - session.rank;
        // The largest tag, on the last rail, passed as a bigint; and tag 0 as a number.
        const sent = session.send(other, 2n ** 64n - 1n, Uint8Array.of(session.rank), { rail: 1 });
        const received = await session.receive(other, 2n ** 64n - 1n, { dtype: 'u8', count: 1 }, { rail: 1 });
        await sent;
        expect(Array.from(received as Uint8Array)).toEqual([other]);
        await Promise.all([session.send(session.rank, 0, new Float64Array(0)), session.receive(session.rank, 0, { dtype: 'f64', count: 0 })]);
        expect(await session.reduce(Int32Array.of(1), 'sum', 1)).toEqual(session.rank === 1 ? Int32Array.of(2) : null);
        expect(Array.from(await session.allToAllV(Int32Array.of(), [0, 0]).then((r) => r.counts))).toEqual([0, 0]);
        // The longest timeouts a Node timer can hold (about 24.8 days).
        await session.setTimeout(MAX_TIMEOUT_MS);
        expect(await session.heartbeat(MAX_TIMEOUT_MS)).toBeGreaterThanOrEqual(0);
        await session.close();
      }),
    );
    await expect(job.coordinator.done).resolves.toBeUndefined();
  });

  it('the longest timeouts do not fire at once (no Node timer overflow on rank or coordinator)', async () => {
    const job = await startJob(2, { timeoutMs: MAX_TIMEOUT_MS, collectiveTimeoutMs: MAX_TIMEOUT_MS });
    jobs.push(job);
    const [early, late] = job.sessions as [RankSession, RankSession];
    await Promise.all([early.setTimeout(MAX_TIMEOUT_MS), late.setTimeout(MAX_TIMEOUT_MS)]);
    // The early rank waits in a barrier while the late one is still busy (well beyond 1 ms, which
    // is what an overflowing timer would wait).
    const waiting = early.barrier().then(() => 'done' as const, (error: unknown) => error);
    await sleep(60);
    await late.barrier();
    expect(await waiting).toBe('done');
    await Promise.all([early.close(), late.close()]);
    await expect(job.coordinator.done).resolves.toBeUndefined();
  });

  it('session and coordinator options beyond the longest timeout are refused up front', async () => {
    const options = { coordinator: '127.0.0.1:1', uniqueId: '00'.repeat(16), rank: 0, worldSize: 1 };
    expect(() => resolveSessionOptions({ ...options, timeoutMs: MAX_TIMEOUT_MS + 1 })).toThrow(
      expect.objectContaining({ code: 'INVALID_CONFIGURATION' }),
    );
    expect(() => resolveSessionOptions({ ...options, timeoutMs: 0 })).toThrow(expect.objectContaining({ code: 'INVALID_CONFIGURATION' }));
    const refused = await rejection(startJob(1, { collectiveTimeoutMs: 2 ** 32 }));
    expect(refused.code).toBe('INVALID_CONFIGURATION');
  });
});
