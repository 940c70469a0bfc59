/**
 * Sessions with `dataPlane: 'native'` (tcp_peer, ranks in this process over loopback): the
 * all-reduce, barrier, broadcast, all-gather, gather, all-to-all and reduce-scatter run on the addon's data plane
 * and give every rank the reference result, bit for bit; disagreement, silence, an abort and a rank without the plane end it the way the mesh would,
 * naming ranks.
 */
import { lastValueFrom } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { dataPlaneEngine } from '../../lib/kernels/addon.js';
import type { RankSession } from '../../lib/session/rank-session.js';
import type { SessionEvent } from '../../lib/session/events.js';
import { DTYPES } from '../../lib/protocol/element-type.js';
import { type Tensor, viewTensor } from '../../lib/tensor.js';
import { buildCase, describeCase, hex, modelCollective, numbersOf, opsFor, runCollective, seededRandom, tensorOf } from '../../lib/testing/index.js';
import { openRejections, rejection, sleep, startCoordinator, type TestJob } from '../helpers/job.js';

const available = dataPlaneEngine() !== null;
const reason = available ? '' : ' (skipped: the native addon is not built here)';
if (!available) console.warn('spec/session/native-data-plane.spec.ts: skipped: the native addon is not built here');

const jobs: TestJob[] = [];
afterEach(async () => {
  await Promise.all(jobs.splice(0).map((job) => job.dispose()));
});

async function nativeJob(worldSize: number, timeoutMs = 5_000, rails = 1): Promise<{ job: TestJob; sessions: RankSession[] }> {
  const job = await startCoordinator(worldSize, { transport: 'tcp_peer', timeoutMs, collectiveTimeoutMs: timeoutMs, rails });
  jobs.push(job);
  const sessions = await Promise.all(Array.from({ length: worldSize }, (_, rank) => job.openRank(rank, { dataPlane: 'native' })));
  return { job, sessions };
}

/** The plane each collective ran on, and by which algorithm, as the session's events say. */
function algorithmsOf(session: RankSession): string[] {
  const names: string[] = [];
  session.events$.subscribe((event: SessionEvent) => {
    if (event.type === 'collective-started') names.push(`${event.algorithm} on ${event.plane}`);
  });
  return names;
}

/**
 * A rank's failure where ranks disagree: its call's, or, where its call ended before the abort
 * reached it (it compares headers with its neighbours on the ring and the ranks it exchanges data
 * with, none of which differed: docs/protocol.md 9.9), its next call's.
 */
async function failureOf(session: RankSession, call: Promise<unknown>): Promise<Error> {
  try {
    await call;
  } catch (error) {
    return error as Error;
  }
  return rejection(session.barrier());
}

/** The tree all-reduces `auto` may take (from 8 ranks on one host) and the float types whose bits they round otherwise than rank order. */
const TREE_ALL_REDUCES: ReadonlySet<string> = new Set(['recursive-doubling on native', 'rabenseifner on native']);
const FLOATS: ReadonlySet<string> = new Set(['f16', 'bf16', 'f32', 'f64']);

/**
 * Broadcasts the cost model sends down the chain at 3 ranks and more on one host, and past single
 * copy's 256 KiB, where every rank reads the root's memory once (pairwise; spec/collectives/choice-cost.spec.ts).
 */
const CHAIN_BYTES = 128 << 10;
const READ_FROM_ROOT_BYTES = 1 << 20;

describe.skipIf(!available)(`the native data plane in sessions${reason}`, () => {
  it('all-reduce matches the reference bit for bit (a tree all-reduce of floats within rounding, the same bits on every rank), every dtype x op, worlds 2..8, odd counts on both sides of the pairwise size, fresh, output and in place', async () => {
    const random = seededRandom(7);
    for (let worldSize = 2; worldSize <= 8; worldSize++) {
      const { sessions } = await nativeJob(worldSize);
      const algorithms = algorithmsOf(sessions[0]!);
      const planned: string[] = [];
      let calls = 0;
      for (const [index, dtype] of DTYPES.entries()) {
        for (const op of opsFor(dtype)) {
          // Mostly small; now and then past 64 KiB (pairwise), with a count no world divides evenly.
          const large = (index + op.length + worldSize) % 5 === 0;
          const count = large ? 65_536 / 2 + worldSize * 13 + 1 : ((worldSize * 3 + op.length) % 17) + 1;
          const c = buildCase({ kind: 'allReduce', dtype, op, root: 0, count }, worldSize, random);
          planned.push(`${sessions[0]!.plan('allReduce', c.inputs[0]!.length).algorithm} on native`);
          const memory = (['fresh', 'output', 'inPlace'] as const)[calls++ % 3]!;
          const results = await Promise.all(
            sessions.map(async (session, rank) => {
              const tensor = tensorOf(dtype, c.inputs[rank]!.slice(), false);
              const bytes = (of: Tensor) => viewTensor(of).bytes;
              if (memory === 'inPlace') {
                await session.allReduce(tensor, op, { inPlace: true });
                return bytes(tensor);
              }
              if (memory === 'output') {
                const output = tensorOf(dtype, new Uint8Array(c.inputs[rank]!.length), false);
                await session.allReduce(tensor, op, { output });
                return bytes(output);
              }
              const result = await session.allReduce(tensor, op);
              expect(hex(bytes(tensor)), `${describeCase(c)}: the input of rank ${rank} is untouched`).toBe(hex(c.inputs[rank]!));
              return bytes(result);
            }),
          );
          const expected = modelCollective(c, worldSize);
          // A tree folds pairs of blocks, not in rank order: its floats are the reference's within
          // rounding, and the same bits on every rank (docs/protocol.md 9.6.7); all else is exact.
          if (TREE_ALL_REDUCES.has(planned.at(-1)!) && FLOATS.has(dtype)) {
            results.forEach((bytes, rank) => {
              expect(hex(bytes), `${describeCase(c)} (${memory}) rank ${rank}: rank 0's bits`).toBe(hex(results[0]!));
              const want = numbersOf(dtype, expected[rank]!.bytes!);
              numbersOf(dtype, bytes).forEach((got, index) => expect(Math.abs(got - want[index]!), `${describeCase(c)} rank ${rank} element ${index}`).toBeLessThanOrEqual(0.1 * Math.max(1, Math.abs(want[index]!))));
            });
          } else {
            results.forEach((bytes, rank) => expect(hex(bytes), `${describeCase(c)} (${memory}) rank ${rank}`).toBe(hex(expected[rank]!.bytes!)));
          }
        }
      }
      // A barrier is an all-reduce of nothing on the plane: nobody leaves before everyone came.
      const arrived: number[] = [];
      await Promise.all(
        sessions.map(async (session, rank) => {
          await sleep(rank === worldSize - 1 ? 50 : 0);
          arrived.push(rank);
          await session.barrier();
          expect(arrived, `rank ${rank} left the barrier before every rank came`).toHaveLength(worldSize);
        }),
      );
      // Each call ran the row plan() names for its size (the cost model's cheapest: all-pairs or
      // pairwise at few ranks, recursive doubling or Rabenseifner from 8, spec/collectives/choice-cost.spec.ts).
      planned.push(`${sessions[0]!.plan('barrier', 0).algorithm} on native`);
      expect(algorithms).toEqual(planned);
      if (worldSize <= 4) expect(algorithms).toContain('all-pairs on native');
      await Promise.all(jobs.splice(0).map((job) => job.dispose()));
    }
  }, 240_000);

  it('broadcast (direct; relayed along the chain at 128 KiB and read from the root by every rank at 1 MiB, from 3 ranks), all-gather, gather, all-to-all and reduce-scatter match the reference, worlds 2..8, every dtype, every root; output and in-place forms', async () => {
    const random = seededRandom(11);
    for (let worldSize = 2; worldSize <= 8; worldSize++) {
      const { sessions } = await nativeJob(worldSize, 20_000);
      const algorithms = algorithmsOf(sessions[0]!);
      const broadcasts: string[] = [];
      sessions[0]!.events$.subscribe((event: SessionEvent) => {
        if (event.type === 'collective-started' && event.collective === 'broadcast') broadcasts.push(`${event.bytes} ${event.algorithm}`);
      });
      for (const [index, dtype] of DTYPES.entries()) {
        const root = (index + worldSize) % worldSize;
        // Now and then a larger broadcast, by turns the chain's and one read from the root, with a
        // count no world divides evenly.
        const large = worldSize >= 3 && (index + worldSize) % 4 === 0;
        const relayed = ((index + worldSize) / 4) % 2 === 1;
        const width = viewTensor(tensorOf(dtype, new Uint8Array(8), false)).bytes.length / viewTensor(tensorOf(dtype, new Uint8Array(8), false)).count;
        for (const kind of ['broadcast', 'allGather', 'gather', 'allToAll', 'reduceScatter'] as const) {
          const count = kind === 'broadcast' && large ? Math.ceil((relayed ? CHAIN_BYTES : READ_FROM_ROOT_BYTES) / width) + worldSize * 5 + 1 : ((worldSize * 5 + index) % 13) + 1;
          // Reduce-scatter: every op, and once per world shards of over a MiB (the reduction
          // streamed), in a dtype from the small integers, the wide ones or the floats by turns
          // (one such case per world keeps the test's own data near 200 MiB in all).
          const op = opsFor(dtype)[(worldSize + index) % opsFor(dtype).length]!;
          const streamed = kind === 'reduceScatter' && large && Math.floor(index / 4) === worldSize % 3;
          const shards = streamed ? Math.ceil((1 << 20) / width) + 3 : count;
          const c = buildCase({ kind, dtype, root, op, count: shards }, worldSize, random);
          const outcomes = await Promise.all(sessions.map((session) => runCollective(session, c)));
          const expected = modelCollective(c, worldSize);
          outcomes.forEach((outcome, rank) => expect(outcome.bytes === null ? null : hex(outcome.bytes), `${describeCase(c)} rank ${rank}`).toBe(expected[rank]!.bytes === null ? null : hex(expected[rank]!.bytes!)));
        }
      }
      // The memory forms: a broadcast in place, an all-to-all into an output (not over its input),
      // an all-gather into an output whose own slot is the input, a reduce-scatter into this
      // rank's shard of its input.
      const whole = sessions.map(() => new Int32Array(3 * worldSize).fill(-1));
      const scattered = sessions.map((_, rank) => Int32Array.from({ length: 2 * worldSize }, (_, i) => i * (rank + 1)));
      const broadcastInPlace = sessions.map((_, rank) => Int32Array.of(rank, rank * 2));
      await Promise.all(
        sessions.map(async (session, rank) => {
          const own = whole[rank]!.subarray(3 * rank, 3 * rank + 3);
          own.set([rank, rank + 10, rank + 20]);
          expect(await session.allGather(own, { output: whole[rank]! })).toBe(whole[rank]);
          expect(await session.broadcast(broadcastInPlace[rank]!, worldSize - 1, { inPlace: true })).toBe(broadcastInPlace[rank]);
          const outgoing = Int32Array.from({ length: worldSize }, (_, s) => 10 * rank + s);
          const received = new Int32Array(worldSize);
          expect(await session.allToAll(outgoing, { output: received })).toBe(received);
          expect(Array.from(received)).toEqual(Array.from({ length: worldSize }, (_, s) => 10 * s + rank));
          await expect(session.allToAll(outgoing, { output: outgoing })).rejects.toThrow('allToAll output overlaps its input');
          const shard = scattered[rank]!.subarray(2 * rank, 2 * rank + 2);
          expect(await session.reduceScatter(scattered[rank]!, 'sum', { output: shard })).toBe(shard);
        }),
      );
      const everyRank = Array.from({ length: worldSize }, (_, rank) => rank);
      for (const result of whole) expect(Array.from(result)).toEqual(everyRank.flatMap((rank) => [rank, rank + 10, rank + 20]));
      for (const result of broadcastInPlace) expect(Array.from(result)).toEqual([worldSize - 1, (worldSize - 1) * 2]);
      const factor = (worldSize * (worldSize + 1)) / 2;
      scattered.forEach((tensor, rank) => expect(Array.from(tensor.subarray(2 * rank, 2 * rank + 2))).toEqual([2 * rank * factor, (2 * rank + 1) * factor]));
      expect(algorithms.every((name) => name.endsWith(' on native'))).toBe(true);
      if (worldSize >= 3) {
        const relayedOnes = broadcasts.filter((one) => one.endsWith(' chain')).map((one) => Number.parseInt(one, 10));
        const readOnes = broadcasts.filter((one) => Number.parseInt(one, 10) >= READ_FROM_ROOT_BYTES);
        expect(relayedOnes.length).toBeGreaterThan(0);
        for (const bytes of relayedOnes) expect(bytes).toBeLessThan(256 << 10);
        expect(readOnes.length).toBeGreaterThan(0);
        for (const one of readOnes) expect(one).toMatch(/ pairwise$/);
      }
      await Promise.all(jobs.splice(0).map((job) => job.dispose()));
    }
  }, 240_000);

  it('GX1_COLLECTIVE_ALGORITHM=tree at 5 and 8 ranks: the Rabenseifner all-reduce (from the ring threshold, fresh and in place), the Bruck all-gather and the binomial gather (a root whose subtrees wrap) run on the plane, integers exact', async () => {
    for (const worldSize of [5, 8]) {
      const job = await startCoordinator(worldSize, { transport: 'tcp_peer', timeoutMs: 20_000, collectiveTimeoutMs: 20_000 });
      jobs.push(job);
      const sessions = await Promise.all(Array.from({ length: worldSize }, (_, rank) => job.openRank(rank, { dataPlane: 'native', algorithm: 'tree' })));
      const algorithms = algorithmsOf(sessions[0]!);
      // Past the ring threshold (256 KiB), in a count no world divides evenly; sums that wrap.
      const count = (256 << 10) / 4 + 13 * worldSize + 1;
      const tensorOf = (rank: number) => Int32Array.from({ length: count }, (_, i) => Math.imul(i + 1, 0x9e3779b1 + rank));
      const root = worldSize - 2;
      const results = await Promise.all(
        sessions.map(async (session, rank) => {
          const sum = await session.allReduce(tensorOf(rank), 'sum');
          const inPlace = tensorOf(rank);
          await session.allReduce(inPlace, 'max', { inPlace: true });
          const gathered = await session.allGather(Int32Array.of(rank, rank * 10, rank - 100));
          const atRoot = await session.gather(Int32Array.of(rank + 100, rank), root);
          return { sum, inPlace, gathered, atRoot };
        }),
      );
      const inputs = sessions.map((_, rank) => tensorOf(rank));
      const sum = Int32Array.from({ length: count }, (_, i) => inputs.reduce((total, input) => (total + input[i]!) | 0, 0));
      const max = Int32Array.from({ length: count }, (_, i) => Math.max(...inputs.map((input) => input[i]!)));
      results.forEach(({ sum: summed, inPlace, gathered, atRoot }, rank) => {
        expect(hex(new Uint8Array(summed.buffer)), `${worldSize} ranks, rank ${rank}: sum`).toBe(hex(new Uint8Array(sum.buffer)));
        expect(hex(new Uint8Array(inPlace.buffer)), `${worldSize} ranks, rank ${rank}: max in place`).toBe(hex(new Uint8Array(max.buffer)));
        expect(Array.from(gathered)).toEqual(sessions.flatMap((_, r) => [r, r * 10, r - 100]));
        expect(atRoot === null ? null : Array.from(atRoot)).toEqual(rank === root ? sessions.flatMap((_, r) => [r + 100, r]) : null);
      });
      expect(new Set(algorithms)).toEqual(new Set(['rabenseifner on native', 'bruck on native', 'binomial on native']));
      await Promise.all(jobs.splice(0).map((each) => each.dispose()));
    }
  }, 120_000);

  it('ranks naming different roots, or one in a relayed broadcast and one in an all-gather, fail at once naming both descriptors', async () => {
    // f32 elements the chain relays (128 KiB).
    const large = CHAIN_BYTES / 4;
    for (const [calls, first, second] of [
      [[(s: RankSession) => s.broadcast(Float32Array.of(1, 2), 0), (s: RankSession) => s.broadcast(Float32Array.of(1, 2), 1), (s: RankSession) => s.broadcast(Float32Array.of(1, 2), 0)], '{Broadcast F32 root 0 count 2 op none layout "pairwise"}', '{Broadcast F32 root 1 count 2 op none layout "pairwise"}'],
      [[(s: RankSession) => s.broadcast(new Float32Array(large), 0), (s: RankSession) => s.broadcast(new Float32Array(large), 0), (s: RankSession) => s.allGather(new Float32Array(large))], `{Broadcast F32 root 0 count ${large} op none layout "chain 0,1,2"}`, `{AllGather F32 root ANY count ${large} op none layout "pairwise"}`],
    ] as const) {
      const { sessions } = await nativeJob(3);
      const started = Date.now();
      const errors = await Promise.all(sessions.map((session, rank) => failureOf(session, calls[rank]!(session))));
      for (const error of errors) {
        expect(error.message).toMatch(/collective sequence 0 mismatch: rank \d submitted \{/);
        expect(error.message).toContain(first);
        expect(error.message).toContain(second);
      }
      expect(Date.now() - started).toBeLessThan(2_000);
      await Promise.all(jobs.splice(0).map((job) => job.dispose()));
    }
  });

  it('at 8 ranks, one rank broadcasting from another root than the rest (ranks that are not neighbours differ too) is named at once (with both descriptors where a ring neighbour finds it), by the tree rows and the default ones', async () => {
    for (const [algorithm, layout] of [
      ['tree', 'binomial'],
      ['auto', 'pairwise'],
    ] as const) {
      const job = await startCoordinator(8, { transport: 'tcp_peer', timeoutMs: 10_000, collectiveTimeoutMs: 10_000 });
      jobs.push(job);
      const sessions = await Promise.all(Array.from({ length: 8 }, (_, rank) => job.openRank(rank, { dataPlane: 'native', algorithm })));
      const started = Date.now();
      const errors = await Promise.all(sessions.map((session, rank) => failureOf(session, session.broadcast(Float32Array.of(rank, 2), rank === 5 ? 1 : 0))));
      expect(Date.now() - started, algorithm).toBeLessThan(5_000);
      // Named at once on every rank (a rank that finds it aborts the job with its finding): by a
      // ring neighbour of rank 5, with both descriptors; or, where a rank that finished its own
      // view of the broadcast (it compared only with ranks that agree) reaches rank 5 with its
      // next call first, as that call's number (docs/protocol.md 9.9, "The agreement").
      for (const error of errors) {
        if (/collective sequence 0 mismatch/.test(error.message)) {
          expect(error.message).toMatch(/collective sequence 0 mismatch: rank [4-6] submitted \{Broadcast F32 root [01] count 2 op none layout "[a-z]+"\}, rank [5-6] submitted \{/);
          expect(error.message).toContain(`{Broadcast F32 root 0 count 2 op none layout "${layout}"}`);
          expect(error.message).toContain(`{Broadcast F32 root 1 count 2 op none layout "${layout}"}`);
        } else {
          expect(error.message).toMatch(/rank \d sent mesh collective 1 where rank 5 is at 0$/);
        }
      }
      await Promise.all(jobs.splice(0).map((one) => one.dispose()));
    }
  }, 60_000);

  it('a large all-reduce reduces its segments piece by piece as they arrive: exact at several MiB a segment, fresh and in place', async () => {
    for (const worldSize of [2, 3]) {
      const { sessions } = await nativeJob(worldSize, 20_000);
      const count = 3 * (1 << 20) + 7;
      const inputOf = (rank: number) => Int32Array.from({ length: count }, (_, i) => (i % 1009) * (rank + 1) - rank);
      const expected = Int32Array.from({ length: count }, (_, i) => sessions.reduce((sum, _, rank) => sum + (i % 1009) * (rank + 1) - rank, 0));
      const fresh = await Promise.all(sessions.map((session, rank) => session.allReduce(inputOf(rank))));
      const inPlace = sessions.map((_, rank) => inputOf(rank));
      await Promise.all(sessions.map((session, rank) => session.allReduce(inPlace[rank]!, 'sum', { inPlace: true })));
      for (const result of [...fresh, ...inPlace]) {
        const wrong = result.findIndex((value, i) => value !== expected[i]);
        expect(wrong, `world ${worldSize}: element ${wrong} is ${result[wrong]}, expected ${expected[wrong]}`).toBe(-1);
      }
      await Promise.all(jobs.splice(0).map((job) => job.dispose()));
    }
  }, 60_000);

  it('over 3 rails (data links each way per rail and pair, messages of a MiB or more striped over them): all-reduce, broadcast and all-gather past a MiB, and a small all-reduce, exact', async () => {
    for (const worldSize of [2, 3]) {
      const { sessions } = await nativeJob(worldSize, 20_000, 3);
      const algorithms = algorithmsOf(sessions[0]!);
      const count = (7 << 20) / 4 + 5;
      const inputOf = (rank: number) => Int32Array.from({ length: count }, (_, i) => (i % 1013) * (rank + 1) - rank);
      const sum = Int32Array.from({ length: count }, (_, i) => sessions.reduce((total, _, rank) => total + (i % 1013) * (rank + 1) - rank, 0));
      const results = await Promise.all(
        sessions.map(async (session, rank) => {
          const reduced = await session.allReduce(inputOf(rank));
          const broadcast = await session.broadcast(rank === 1 ? inputOf(1) : new Int32Array(count), 1, { inPlace: true });
          const gathered = await session.allGather(inputOf(rank).subarray(0, (3 << 20) / 4));
          const small = await session.allReduce(Int32Array.of(rank, 1));
          return { reduced, broadcast, gathered, small };
        }),
      );
      const first = (array: Int32Array, expected: Int32Array) => array.findIndex((value, i) => value !== expected[i]);
      results.forEach(({ reduced, broadcast, gathered, small }, rank) => {
        const what = `world ${worldSize} rank ${rank}`;
        expect(first(reduced, sum), `${what} all-reduce`).toBe(-1);
        expect(first(broadcast, inputOf(1)), `${what} broadcast`).toBe(-1);
        sessions.forEach((_, from) => expect(first(gathered.subarray(from * ((3 << 20) / 4), (from + 1) * ((3 << 20) / 4)), inputOf(from)), `${what} all-gather from ${from}`).toBe(-1));
        expect(Array.from(small)).toEqual([(worldSize * (worldSize - 1)) / 2, worldSize]);
      });
      expect(algorithms.every((name) => name.endsWith(' on native'))).toBe(true);
      await Promise.all(jobs.splice(0).map((job) => job.dispose()));
    }
  }, 60_000);

  it('ranks calling different all-reduces fail at once, naming both ranks and both descriptors; the job is aborted', async () => {
    const { job, sessions } = await nativeJob(3);
    const [zero, one, two] = sessions as [RankSession, RankSession, RankSession];
    const errors = await Promise.all([
      rejection(zero.allReduce(Float32Array.of(1, 2, 3, 4))),
      rejection(one.allReduce(Float32Array.of(1, 2, 3, 4, 5))),
      rejection(two.allReduce(Float32Array.of(1, 2, 3, 4))),
    ]);
    const mismatch = /collective sequence 0 mismatch: rank (0|1) submitted \{AllReduce F32 root ANY count [45] op sum layout "all-pairs"\}, rank (1|2) submitted \{AllReduce F32 root ANY count [45] op sum layout "all-pairs"\}/;
    // The ranks that saw rank 1's header name it; any rank may instead end with the abort that carries it.
    for (const error of errors) expect(error.message).toMatch(mismatch);
    await expect(job.coordinator.done).rejects.toThrow(mismatch);
  });

  it('over 2 rails, ranks whose rail orders differ (1,0 and the default) are told apart at open, both named, not left to meet on different rails', async () => {
    const job = await startCoordinator(2, { transport: 'tcp_peer', timeoutMs: 10_000, collectiveTimeoutMs: 10_000, rails: 2 });
    jobs.push(job);
    const errors = await openRejections(job, (rank) => ({ dataPlane: 'native', ...(rank === 0 ? { railOrder: [1, 0] } : {}) }));
    for (const error of errors) expect(error).toMatchObject({ code: 'SETTINGS_DIFFER', message: 'GX1_RAIL_ORDER differs: rank 0 has 1,0, rank 1 has auto (the default); every rank must choose collectives alike' });
  });

  it('a barrier on one rank and an all-reduce on another: both named, with both descriptors', async () => {
    const { sessions } = await nativeJob(2);
    const errors = await Promise.all([rejection(sessions[0]!.barrier()), rejection(sessions[1]!.allReduce(Float32Array.of(1, 2)))]);
    // Each rank names it, unless the other's abort, which carries the same text, came first.
    for (const error of errors) {
      expect(error.message).toContain('collective sequence 0 mismatch: rank 0 submitted {Barrier None root ANY count 0 op none layout "pairwise"}, rank 1 submitted {AllReduce F32 root ANY count 2 op sum layout "all-pairs"}');
    }
  });

  it('a rank in a native collective and a rank in another (a reduce, on the plane too; a scatter or setTimeout at the coordinator; 2 or 3 ranks) are named as a mismatch, at once', async () => {
    for (const [worldSize, other, described] of [
      [2, (session: RankSession) => session.reduce(Float32Array.of(1, 2), 'sum', 0), '{Reduce F32 root 0 count 2 op sum layout "pairwise"}'],
      [3, (session: RankSession) => session.reduce(Float32Array.of(1, 2), 'sum', 0), '{Reduce F32 root 0 count 2 op sum layout "pairwise"}'],
      [3, (session: RankSession) => session.reduce(new Float32Array(1000), 'max', 2), '{Reduce F32 root 2 count 1000 op max layout'],
      // Agreed at the coordinator (staged): its opcode and root meet the others on the data links first.
      [2, (session: RankSession) => session.scatter(Float32Array.of(1, 2), 0, 1), '{Scatter None root 0 count 0 op none layout'],
      [3, (session: RankSession) => session.setTimeout(5_000), '{SetTimeout None root ANY count 0 op none layout'],
    ] as const) {
      const { sessions } = await nativeJob(worldSize);
      const started = Date.now();
      // Rank 0 runs the other collective, the rest all-reduce.
      const errors = await Promise.all(sessions.map((session, rank) => rejection(rank === 0 ? other(session) : session.allReduce(Float32Array.of(1, 2)))));
      for (const error of errors) {
        expect(error.message).toContain(`collective sequence 0 mismatch: rank 0 submitted ${described}`);
        expect(error.message).toContain('submitted {AllReduce F32 root ANY count 2 op sum layout "all-pairs"}');
      }
      expect(Date.now() - started).toBeLessThan(2_000);
      await Promise.all(jobs.splice(0).map((job) => job.dispose()));
    }
  });

  it('every collective works beside the native ones: small and large, mixed in one session', async () => {
    const { sessions } = await nativeJob(3);
    const results = await Promise.all(
      sessions.map(async (session, rank) => {
        const small = await session.allGather(Float32Array.of(rank));
        const large = await session.allGather(new Float32Array(1 << 16).fill(rank));
        const sum = await session.allReduce(Float32Array.of(rank, 1));
        const root = await session.broadcast(Float32Array.of(rank === 2 ? 7 : 0), 2);
        await session.barrier();
        return { small: Array.from(small), large: [large[0], large[(1 << 16) * 2]], sum: Array.from(sum), root: Array.from(root) };
      }),
    );
    for (const result of results) expect(result).toEqual({ small: [0, 1, 2], large: [0, 2], sum: [3, 3], root: [7] });
  });

  it('calls issued at once, their shapes alternating (8 B and 1 KiB, in place and fresh, all-reduce and broadcast), settle in call order, each exact', async () => {
    const { sessions } = await nativeJob(2);
    const counts = [2, 256, 2, 2, 256, 256, 2];
    const results = await Promise.all(
      sessions.map(async (session, rank) => {
        const settled: number[] = [];
        const calls = counts.map((count, call) => {
          const tensor = new Float32Array(count).fill(rank + call);
          const result = call === 3 ? session.broadcast(tensor, 1) : session.allReduce(tensor, 'sum', { inPlace: call % 2 === 0 });
          return result.then((value) => {
            settled.push(call);
            return [value.length, value[0], value[count - 1]];
          });
        });
        return { values: await Promise.all(calls), settled };
      }),
    );
    const expected = counts.map((count, call) => (call === 3 ? [count, 1 + call, 1 + call] : [count, 1 + 2 * call, 1 + 2 * call]));
    for (const result of results) expect(result).toEqual({ values: expected, settled: counts.map((_, call) => call) });
  });

  it('a rank that never comes: the others time out after the session timeout, naming it as missing', async () => {
    const { sessions } = await nativeJob(3, 600);
    const started = Date.now();
    const errors = await Promise.all([rejection(sessions[0]!.allReduce(Float32Array.of(1))), rejection(sessions[1]!.allReduce(Float32Array.of(1)))]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(590);
    // One of them times out naming rank 2; its abort may reach the other first.
    expect(errors.map((error) => error.message).join('\n')).toMatch(/collective 0 \(AllReduce\) on the native data plane; missing ranks \[2\]/);
    for (const error of errors) expect(error.message).toMatch(/missing ranks \[2\]/);
  });

  it('an abort from another rank wakes ranks waiting in a native all-reduce in under 1 s, with its reason', async () => {
    const { job, sessions } = await nativeJob(3, 30_000);
    const waiting = [rejection(sessions[0]!.allReduce(new Float32Array(100_000))), rejection(sessions[1]!.allReduce(new Float32Array(100_000)))];
    await sleep(50);
    const started = Date.now();
    await sessions[2]!.abort('collective failure reason');
    for (const error of await Promise.all(waiting)) {
      expect(error.code).toBe('REMOTE_ABORT');
      expect(error.message).toContain('collective failure reason');
    }
    expect(Date.now() - started).toBeLessThan(1_000);
    await expect(job.coordinator.done).rejects.toThrow(/collective failure reason/);
  });

  it('closing a session with a native all-reduce pending ends it, and leaves no engine thread behind to keep the process up', async () => {
    const { sessions } = await nativeJob(2, 30_000);
    const pending = rejection(sessions[0]!.allReduce(Float32Array.of(1)));
    await sleep(20);
    await sessions[0]!.close();
    expect((await pending).message).toMatch(/closed|left|abort/i);
  });

  it('a rank asking for the native data plane where another does not offer it fails at set-up, naming it, and so does the job: it does not hang', async () => {
    const job = await startCoordinator(2, { transport: 'tcp_peer', timeoutMs: 5_000 });
    jobs.push(job);
    const started = Date.now();
    // Rank 1 may finish its own mesh first: then its session fails with rank 0's setup abort.
    const [native, js] = await Promise.all([
      rejection(job.openRank(0, { dataPlane: 'native' })),
      job.openRank(1, { dataPlane: 'js' }).then(
        (session) => lastValueFrom(session.failure$).then(() => new Error('rank 1 session did not fail'), (error: unknown) => error as Error),
        (error: unknown) => error as Error,
      ),
    ]);
    const refusal = /ranks \[0\] ask for the native data plane \(GX1_DATA_PLANE=native\), but ranks \[1\] do not offer it/;
    expect(native.message).toMatch(refusal);
    expect(js.message).toMatch(refusal);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('by default (auto) every collective goes native, on one host or across hosts (there, at 4 MiB, the hierarchy where a host holds several ranks, else pairwise)', async () => {
    const allReduceOf = async (sessions: RankSession[]) => {
      const algorithms = algorithmsOf(sessions[0]!);
      await Promise.all(sessions.map((session) => session.allReduce(Float32Array.of(1))));
      return algorithms;
    };
    const together = await startCoordinator(3, { transport: 'tcp_peer', timeoutMs: 5_000 });
    jobs.push(together);
    expect(await allReduceOf(await Promise.all([0, 1, 2].map((rank) => together.openRank(rank))))).toEqual(['all-pairs on native']);
    // Ranks 0 and 1 on one "host" (127.0.0.1), rank 2 on another; then each on its own.
    for (const [hostOf, large] of [
      [(rank: number) => (rank === 2 ? 2 : 1), 'hierarchical on native'],
      [(rank: number) => rank + 1, 'pairwise on native'],
    ] as const) {
      const apart = await startCoordinator(3, { transport: 'tcp_peer', timeoutMs: 5_000 });
      jobs.push(apart);
      const sessions = await Promise.all([0, 1, 2].map((rank) => apart.openRank(rank, { peerEndpoints: { listen: `127.0.0.${hostOf(rank)}:0`, advertise: `127.0.0.${hostOf(rank)}` } })));
      expect(await allReduceOf(sessions)).toEqual(['all-pairs on native']);
      // Large tensors across hosts (pairwise where every rank shares one host).
      const algorithms = algorithmsOf(sessions[0]!);
      const tensor = (rank: number) => new Float32Array(1 << 20).fill(rank + 1);
      const results = await Promise.all(sessions.map((session, rank) => session.allReduce(tensor(rank))));
      expect(algorithms).toEqual([large]);
      for (const result of results) expect(result.every((value) => value === 6)).toBe(true);
    }
  });

  it('dataPlane: a bad value, or native with TLS, is refused by name', async () => {
    const { resolveDataPlane, usesNativeDataPlane } = await import('../../lib/session/data-plane-setting.js');
    const { readSettings } = await import('../../lib/settings/read-settings.js');
    // GX1_DATA_PLANE as the settings read it: `auto` where unset.
    const variable = (text?: string) => readSettings(text === undefined ? {} : { GX1_DATA_PLANE: text }).GX1_DATA_PLANE;
    expect(() => resolveDataPlane('fast', variable(), false)).toThrow('dataPlane must be one of auto, native, js, got "fast"');
    expect(() => resolveDataPlane(undefined, variable('c++'), false)).toThrow('GX1_DATA_PLANE must be one of auto, native, js, got "c++"');
    expect(() => resolveDataPlane('native', variable(), true)).toThrow(/cannot be used with TLS/);
    expect(() => resolveDataPlane('native', variable(), false, () => false)).toThrow(/needs the native addon/);
    expect(() => resolveDataPlane(undefined, variable('native'), true)).toThrow('GX1_DATA_PLANE=native cannot be used with TLS: its data links are plain TCP (use js, or no TLS)');
    expect(resolveDataPlane(undefined, variable('native'), false, () => true)).toEqual({ setting: 'native', reason: 'asked for (GX1_DATA_PLANE=native): every rank must offer it' });
    // auto: js with TLS or without the addon, else decided once the endpoint table is known; each with its reason.
    expect(resolveDataPlane(undefined, variable(), false, () => true)).toEqual({ setting: 'auto', reason: 'offered: the job runs it where every rank offers it' });
    expect(resolveDataPlane(undefined, variable(), true)).toEqual({ setting: 'js', reason: 'TLS is set: the data links would carry the data in the clear' });
    expect(resolveDataPlane('auto', variable(), false, () => false)).toEqual({
      setting: 'js',
      reason: process.platform === 'linux' ? 'the native addon does not load' : `the native data plane is Linux's; this is ${process.platform}`,
    });
    expect(resolveDataPlane('js', variable('native'), false)).toEqual({ setting: 'js', reason: 'dataPlane=js' });
    expect(resolveDataPlane(undefined, variable('js'), false)).toEqual({ setting: 'js', reason: 'GX1_DATA_PLANE=js' });
    // Decided from every rank's offer alike on every rank, wherever the ranks are.
    expect(usesNativeDataPlane(['auto', 'auto', 'auto', 'auto'])).toBe(true);
    expect(usesNativeDataPlane(['auto', 'native', 'auto', 'auto'])).toBe(true);
    expect(usesNativeDataPlane(['auto', null, 'auto', 'auto'])).toBe(false);
    expect(() => usesNativeDataPlane(['native', null, 'auto', null])).toThrow(
      'ranks [0] ask for the native data plane (GX1_DATA_PLANE=native), but ranks [1,3] do not offer it (GX1_DATA_PLANE=js, TLS, no native addon, or another GX1 implementation): use auto or js on every rank',
    );
  });
});
