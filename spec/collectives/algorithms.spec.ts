/**
 * Every algorithm of the table against the reference model, on in-memory links with the real
 * agreement and routing: worlds 1..8, odd counts, every dtype x op, ring orders and channels.
 */
import fc from 'fast-check';
import { lastValueFrom, type Observable, VirtualTimeScheduler } from 'rxjs';
import { describe, expect, it } from 'vitest';
import type { Algorithm, CollectiveName, Collectives } from '../../lib/collectives/algorithm.js';
import { pairwiseAllGather as pairwiseAllGatherSchedule } from '../../lib/collectives/all-gather/pairwise.js';
import { ringAllGather as ringAllGatherSchedule } from '../../lib/collectives/all-gather/ring.js';
import { pairwiseAllReduce as pairwiseAllReduceSchedule } from '../../lib/collectives/all-reduce/pairwise.js';
import { rabenseifnerAllReduce as rabenseifnerAllReduceSchedule } from '../../lib/collectives/all-reduce/rabenseifner.js';
import { ringAllReduce as ringAllReduceSchedule } from '../../lib/collectives/all-reduce/ring.js';
import { chainBroadcast as chainBroadcastSchedule } from '../../lib/collectives/broadcast/chain.js';
import { pairwiseBroadcast as pairwiseBroadcastSchedule } from '../../lib/collectives/broadcast/pairwise.js';
import { pairwiseReduceScatter as pairwiseReduceScatterSchedule } from '../../lib/collectives/reduce-scatter/pairwise.js';
import { ringReduceScatter as ringReduceScatterSchedule } from '../../lib/collectives/reduce-scatter/ring.js';
import { runRow, runScheduled } from '../../lib/collectives/run-scheduled.js';
import type { ScheduleOf } from '../../lib/collectives/schedule/schedule.js';
import type { ScheduledName } from '../../lib/collectives/scheduled-call.js';
import { ALGORITHMS } from '../../lib/collectives/select.js';
import { DTYPES, ElementType } from '../../lib/protocol/element-type.js';
import type { ReduceOp } from '../../lib/protocol/reduce-op.js';
import { viewTensor } from '../../lib/tensor.js';
import {
  arbRingOrder,
  buildCase,
  type CollectiveCase,
  COLLECTIVE_KINDS,
  describeCase,
  hex,
  isFloat,
  memoryJob,
  type MemoryJobOptions,
  type MemoryRank,
  modelCollective,
  opsFor,
  outcomeDifference,
  outcomeOf,
  REDUCING_KINDS,
  seededRandom,
  tensorOf,
} from '../../lib/testing/index.js';

/** A schedule run by the JS plane, as an algorithm of the links (agreement, then the schedule). */
function onLinks<N extends ScheduledName>(collective: N, name: string, schedule: ScheduleOf): Algorithm<Collectives[N][0], Collectives[N][1]> {
  return (links, request, context) => runScheduled(collective, name, schedule, 'js', links, request, context);
}

const ringAllReduce = onLinks('allReduce', 'ring', ringAllReduceSchedule);
const pairwiseAllReduce = onLinks('allReduce', 'pairwise', pairwiseAllReduceSchedule);
const rabenseifnerAllReduce = onLinks('allReduce', 'rabenseifner', rabenseifnerAllReduceSchedule);
const ringAllGather = onLinks('allGather', 'ring', ringAllGatherSchedule);
const pairwiseAllGather = onLinks('allGather', 'pairwise', pairwiseAllGatherSchedule);
const ringReduceScatter = onLinks('reduceScatter', 'ring', ringReduceScatterSchedule);
const pairwiseReduceScatter = onLinks('reduceScatter', 'pairwise', pairwiseReduceScatterSchedule);
const chainBroadcast = onLinks('broadcast', 'chain', chainBroadcastSchedule);
const pairwiseBroadcast = onLinks('broadcast', 'pairwise', pairwiseBroadcastSchedule);

/** A job on a virtual clock: no timeout is ever due here, and virtual timers cost less than real ones. */
const job = (worldSize: number, options: MemoryJobOptions = {}) => memoryJob(worldSize, { scheduler: new VirtualTimeScheduler(), ...options });

/**
 * Float reductions fold in ring (or tree) order, not rank order: equal up to rounding (min/max exactly, but
 * which zero wins between -0 and +0 depends on the order). Everything else: bit for bit.
 */
function toleranceOf(c: CollectiveCase): number | undefined {
  if (!isFloat(c.dtype) || !REDUCING_KINDS.includes(c.kind)) return undefined;
  if (c.op === 'min' || c.op === 'max') return 0;
  return c.dtype === 'f16' || c.dtype === 'bf16' ? 0.1 : 1e-4;
}

/** Compares a rank's result bytes with the oracle's, up to the case's rounding tolerance. */
function expectReference(c: CollectiveCase, bytes: Uint8Array, expected: Uint8Array, rank: number): void {
  const tensor = (data: Uint8Array) => outcomeOf(tensorOf(c.dtype, data, false));
  expect(outcomeDifference(tensor(bytes), tensor(expected), toleranceOf(c)), `${describeCase(c)} rank ${rank}`).toBeNull();
}

/**
 * Where an all-reduce writes its result: fresh memory, an output of the caller's, the input
 * itself, or another view of the input's memory (in place, unrecognised).
 */
type ResultMemory = 'fresh' | 'output' | 'inPlace' | 'alias';

/** An all-reduce algorithm of the table (ring or pairwise). */
type AllReduceAlgorithm = typeof ringAllReduce;

/**
 * Runs `algorithm` on every rank of an in-memory job; checks that an input that is not the output
 * stays as it was and that a given output is the result itself. Returns each rank's result bytes.
 */
async function runAllReduce(algorithm: AllReduceAlgorithm, c: CollectiveCase, worldSize: number, options: MemoryJobOptions, memory: ResultMemory = 'fresh'): Promise<Uint8Array[]> {
  const { ranks } = job(worldSize, options);
  const views = ranks.map((_, rank) => viewTensor(tensorOf(c.dtype, c.inputs[rank]!, false)));
  const before = views.map((view) => view.bytes.slice());
  const outputs = views.map((view) => {
    if (memory === 'output') return new Uint8Array(view.bytes.length);
    if (memory === 'alias') return new Uint8Array(view.bytes.buffer, view.bytes.byteOffset, view.bytes.length);
    return memory === 'inPlace' ? view.bytes : undefined;
  });
  const results = await Promise.all(
    ranks.map(({ links, context }, rank) => {
      const output = outputs[rank];
      return lastValueFrom(algorithm(links, { view: views[rank]!, op: c.op, ...(output ? { output } : {}) }, context));
    }),
  );
  results.forEach((result, rank) => {
    if (outputs[rank] !== undefined) expect(result).toBe(outputs[rank]);
    if (memory === 'fresh' || memory === 'output') expect(views[rank]!.bytes).toEqual(before[rank]);
  });
  return results;
}

describe('ring all-reduce (lib/collectives/all-reduce/ring.ts)', () => {
  it('matches the reference for every dtype x op, worlds 1..8, odd counts, any ring order, channels and rails, into fresh memory, an output or in place', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 8 }).chain((worldSize) =>
          fc.record({
            worldSize: fc.constant(worldSize),
            order: arbRingOrder(worldSize),
            dtype: fc.constantFrom(...DTYPES),
            opIndex: fc.nat(),
            count: fc.integer({ min: 0, max: 97 }),
            rails: fc.integer({ min: 1, max: 3 }),
            channels: fc.integer({ min: 1, max: 3 }),
            pieceBytes: fc.integer({ min: 1, max: 64 }),
            memory: fc.constantFrom<ResultMemory>('fresh', 'output', 'inPlace', 'alias'),
            seed: fc.integer(),
          }),
        ),
        async ({ worldSize, order, dtype, opIndex, count, rails, channels, pieceBytes, memory, seed }) => {
          const ops = opsFor(dtype);
          const op = ops[opIndex % ops.length] as ReduceOp;
          const c = buildCase({ kind: 'allReduce', dtype, op, count }, worldSize, seededRandom(seed));
          const results = await runAllReduce(ringAllReduce, c, worldSize, { rails, ringOrder: order, ringChannels: channels, pieceBytes }, memory);
          const expected = modelCollective(c, worldSize)[0]!.bytes!;
          // Every rank ends with identical bits.
          for (const result of results) expect(hex(result)).toBe(hex(results[0]!));
          expectReference(c, results[0]!, expected, 0);
        },
      ),
      { numRuns: 150 },
    );
  });

  it('follows the ring order: each rank sends only to its successor in that order', async () => {
    const order = [0, 2, 1, 3];
    const { ranks, traffic } = job(4, { ringOrder: order, pieceBytes: 8 });
    await Promise.all(ranks.map(({ links, context }) => lastValueFrom(ringAllReduce(links, { view: viewTensor(new Int32Array(40).fill(links.rank)), op: 'sum' }, context))));
    const pairs = new Set(traffic.messages.map((message) => `${message.from}>${message.to}`));
    expect([...pairs].sort()).toEqual(['0>2', '1>3', '2>1', '3>0']);
    // Only the agreement went through the coordinator.
    expect(traffic.coordinated).toBe(1);
  });

  it('agrees on the mesh when the session does: no coordinator round, same result', async () => {
    const { ranks, traffic } = job(2, { agreement: 'mesh', pieceBytes: 8 });
    const results = await Promise.all(ranks.map(({ links, context }) => lastValueFrom(ringAllReduce(links, { view: viewTensor(Int32Array.of(1, 2, 3, links.rank)), op: 'sum' }, context))));
    for (const result of results) expect(Array.from(new Int32Array(result.buffer))).toEqual([2, 4, 6, 1]);
    expect(traffic.coordinated).toBe(0);
  });

  it('ranks configured with different rings fail at the agreement, naming both ranks', async () => {
    const { ranks } = job(3, { contextOf: (rank) => ({ ringOrder: rank === 2 ? [0, 2, 1] : [0, 1, 2] }) });
    const outcomes = await Promise.allSettled(
      ranks.map(({ links, context }) => lastValueFrom(ringAllReduce(links, { view: viewTensor(new Float32Array(8)), op: 'sum' }, context))),
    );
    for (const outcome of outcomes) {
      expect(outcome.status).toBe('rejected');
      expect(String((outcome as PromiseRejectedResult).reason.message)).toMatch(/collective sequence 0 mismatch: rank 0 submitted .* rank 2 submitted/);
    }
  });
});

describe('pairwise all-reduce (lib/collectives/all-reduce/pairwise.ts), and Rabenseifner\'s (all-reduce/rabenseifner.ts) on the JS plane', () => {
  it.each([
    ['pairwise', pairwiseAllReduce],
    ['rabenseifner', rabenseifnerAllReduce],
  ])('%s matches the reference for every dtype x op, worlds 1..8, odd counts, rails and pieces, into fresh memory, an output or in place, every rank the same bits', async (_, algorithm) => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          worldSize: fc.integer({ min: 1, max: 8 }),
          dtype: fc.constantFrom(...DTYPES),
          opIndex: fc.nat(),
          count: fc.integer({ min: 0, max: 97 }),
          rails: fc.integer({ min: 1, max: 3 }),
          pieceBytes: fc.integer({ min: 1, max: 64 }),
          memory: fc.constantFrom<ResultMemory>('fresh', 'output', 'inPlace', 'alias'),
          seed: fc.integer(),
        }),
        async ({ worldSize, dtype, opIndex, count, rails, pieceBytes, memory, seed }) => {
          const ops = opsFor(dtype);
          const op = ops[opIndex % ops.length] as ReduceOp;
          const c = buildCase({ kind: 'allReduce', dtype, op, count }, worldSize, seededRandom(seed));
          const results = await runAllReduce(algorithm, c, worldSize, { rails, pieceBytes }, memory);
          for (const result of results) expect(hex(result)).toBe(hex(results[0]!));
          expectReference(c, results[0]!, modelCollective(c, worldSize)[0]!.bytes!, 0);
        },
      ),
      { numRuns: 150 },
    );
  });

  it('folds in rank order: the result does not depend on the order contributions arrive in', async () => {
    // Float sums round differently in another order: every delivery order must give the same bits.
    const c = buildCase({ kind: 'allReduce', dtype: 'f32', op: 'sum', count: 33 }, 5, seededRandom(7));
    const bits = new Set<string>();
    await fc.assert(
      fc.asyncProperty(fc.scheduler(), async (interleave) => {
        const { ranks } = job(5, { interleave, pieceBytes: 12 });
        const views = ranks.map((_, rank) => viewTensor(tensorOf('f32', c.inputs[rank]!, false)));
        const results = await interleave.waitFor(Promise.all(ranks.map(({ links, context }, rank) => lastValueFrom(pairwiseAllReduce(links, { view: views[rank]!, op: 'sum' }, context)))));
        for (const result of results) bits.add(hex(result));
      }),
      { numRuns: 20 },
    );
    expect(bits.size).toBe(1);
  });

  it('sends each owner its segment, then the owner sends it reduced to every rank: 2(W-1)/W of the tensor from each rank', async () => {
    const { ranks, traffic } = job(4, { pieceBytes: 8 });
    const results = await Promise.all(ranks.map(({ links, context }) => lastValueFrom(pairwiseAllReduce(links, { view: viewTensor(new Int32Array(40).fill(links.rank + 1)), op: 'sum' }, context))));
    for (const result of results) expect(Array.from(new Int32Array(result.buffer))).toEqual(new Array(40).fill(10));
    for (let rank = 0; rank < 4; rank++) {
      const sent = traffic.messages.filter((message) => message.from === rank);
      expect(sent.reduce((sum, message) => sum + message.bytes, 0)).toBe(2 * 3 * 40);
      expect(new Set(sent.map((message) => message.to))).toEqual(new Set([0, 1, 2, 3].filter((peer) => peer !== rank)));
    }
    expect(traffic.coordinated).toBe(1);
  });

  it('ranks running the ring and the pairwise all-reduce fail at the agreement, naming both ranks', async () => {
    const { ranks } = job(3);
    const outcomes = await Promise.allSettled(
      ranks.map(({ links, context }) => lastValueFrom((links.rank === 1 ? ringAllReduce : pairwiseAllReduce)(links, { view: viewTensor(new Float32Array(8)), op: 'sum' }, context))),
    );
    for (const outcome of outcomes) {
      expect(outcome.status).toBe('rejected');
      expect(String((outcome as PromiseRejectedResult).reason.message)).toMatch(/collective sequence 0 mismatch: rank 0 submitted .* rank 1 submitted/);
    }
  });
});

describe('ring and pairwise all-gather and reduce-scatter (lib/collectives/{all-gather,reduce-scatter}/{ring,pairwise}.ts)', () => {
  it('match the reference for every dtype x op, worlds 1..8, odd shards, any ring order, channels, rails and pieces', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 8 }).chain((worldSize) =>
          fc.record({
            worldSize: fc.constant(worldSize),
            kind: fc.constantFrom('allGather' as const, 'reduceScatter' as const),
            algorithm: fc.constantFrom('ring' as const, 'pairwise' as const),
            order: arbRingOrder(worldSize),
            dtype: fc.constantFrom(...DTYPES),
            opIndex: fc.nat(),
            count: fc.integer({ min: 0, max: 41 }),
            rails: fc.integer({ min: 1, max: 3 }),
            channels: fc.integer({ min: 1, max: 3 }),
            pieceBytes: fc.integer({ min: 1, max: 48 }),
            into: fc.constantFrom('fresh' as const, 'output' as const, 'ownSlot' as const),
            seed: fc.integer(),
          }),
        ),
        async ({ worldSize, kind, algorithm, order, dtype, opIndex, count, rails, channels, pieceBytes, into, seed }) => {
          const ops = opsFor(dtype);
          const c = buildCase({ kind, dtype, op: ops[opIndex % ops.length]!, count }, worldSize, seededRandom(seed));
          const { ranks, traffic } = job(worldSize, { rails, ringOrder: order, ringChannels: channels, pieceBytes });
          const views = ranks.map((_, rank) => viewTensor(tensorOf(dtype, c.inputs[rank]!, false)));
          const before = views.map((view) => view.bytes.slice());
          // A reduce-scatter's output may be fresh memory, the caller's, or this rank's slot of its input (NCCL's in-place form).
          const outputs = views.map((view, rank) => {
            const shard = view.bytes.length / worldSize;
            if (kind !== 'reduceScatter' || into === 'fresh') return undefined;
            return into === 'output' ? new Uint8Array(shard) : view.bytes.subarray(rank * shard, (rank + 1) * shard);
          });
          const results = await Promise.all(
            ranks.map(({ links, context }, rank) => {
              const view = views[rank]!;
              const output = outputs[rank];
              const [allGather, reduceScatter] = algorithm === 'ring' ? [ringAllGather, ringReduceScatter] : [pairwiseAllGather, pairwiseReduceScatter];
              return lastValueFrom(kind === 'allGather' ? allGather(links, { view }, context) : reduceScatter(links, { view, op: c.op, ...(output ? { output } : {}) }, context));
            }),
          );
          const expected = modelCollective(c, worldSize);
          results.forEach((result, rank) => expectReference(c, result, expected[rank]!.bytes!, rank));
          // The inputs are read only (but for a slot given as the output), and a given output is the result itself.
          if (into !== 'ownSlot' || kind === 'allGather') views.forEach((view, rank) => expect(view.bytes).toEqual(before[rank]));
          results.forEach((result, rank) => outputs[rank] !== undefined && expect(result).toBe(outputs[rank]));
          // Each rank sends (W-1)/W of the data it holds: round the ring only to its successor,
          // pairwise an equal share to every other rank.
          const bytesPerRank = kind === 'allGather' ? (worldSize - 1) * c.inputs[0]!.length : ((worldSize - 1) * c.inputs[0]!.length) / worldSize;
          for (let rank = 0; rank < worldSize; rank++) {
            const sent = traffic.messages.filter((message) => message.from === rank);
            expect(sent.reduce((sum, message) => sum + message.bytes, 0)).toBe(bytesPerRank);
            const next = order[(order.indexOf(rank) + 1) % worldSize];
            if (algorithm === 'ring') expect(sent.every((message) => message.to === next)).toBe(true);
            else {
              for (let peer = 0; peer < worldSize; peer++) {
                const share = sent.filter((message) => message.to === peer).reduce((sum, message) => sum + message.bytes, 0);
                expect(share).toBe(peer === rank ? 0 : bytesPerRank / (worldSize - 1));
              }
            }
          }
        },
      ),
      { numRuns: 150 },
    );
  });
});

describe('chain and pairwise broadcast (lib/collectives/broadcast/{chain,pairwise}.ts)', () => {
  it('every rank gets the root tensor exactly, worlds 1..8, any root, ring order, dtype, odd counts and pieces; each link carries it once', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 8 }).chain((worldSize) =>
          fc.record({
            worldSize: fc.constant(worldSize),
            algorithm: fc.constantFrom('chain' as const, 'pairwise' as const),
            root: fc.integer({ min: 0, max: worldSize - 1 }),
            order: arbRingOrder(worldSize),
            dtype: fc.constantFrom(...DTYPES),
            count: fc.integer({ min: 0, max: 131 }),
            rails: fc.integer({ min: 1, max: 3 }),
            pieceBytes: fc.integer({ min: 1, max: 100 }),
            seed: fc.integer(),
          }),
        ),
        async ({ worldSize, algorithm, root, order, dtype, count, rails, pieceBytes, seed }) => {
          const c = buildCase({ kind: 'broadcast', dtype, root, count }, worldSize, seededRandom(seed));
          const { ranks, traffic } = job(worldSize, { rails, ringOrder: order, pieceBytes });
          const broadcast = algorithm === 'chain' ? chainBroadcast : pairwiseBroadcast;
          const results = await Promise.all(
            ranks.map(({ links, context }, rank) => lastValueFrom(broadcast(links, { view: viewTensor(tensorOf(dtype, c.inputs[rank]!, false)), root }, context))),
          );
          const expected = modelCollective(c, worldSize);
          results.forEach((result, rank) => expect(hex(result), describeCase(c)).toBe(hex(expected[rank]!.bytes!)));
          // W - 1 copies of the tensor, none into the root: the chain's line hop by hop, the
          // pairwise broadcast from the root to every rank.
          const bytes = traffic.messages.reduce((sum, message) => sum + message.bytes, 0);
          expect(bytes).toBe((worldSize - 1) * c.inputs[root]!.length);
          expect(traffic.messages.every((message) => message.to !== root)).toBe(true);
          if (algorithm === 'pairwise') expect(traffic.messages.every((message) => message.from === root)).toBe(true);
        },
      ),
      { numRuns: 150 },
    );
  });
});

describe('memory a send still holds (the schedules of lib/collectives/{all-reduce,all-gather,reduce-scatter,broadcast}, run on the links)', () => {
  /** A pipelined algorithm's run on one rank, with the result memory a test chooses. */
  type Pipelined = 'allReduce' | 'pairwiseAllReduce' | 'allGather' | 'pairwiseAllGather' | 'reduceScatter' | 'pairwiseReduceScatter' | 'broadcast' | 'pairwiseBroadcast';
  /** The collective each pipelined algorithm runs. */
  const collectiveOf: Record<Pipelined, 'allReduce' | 'allGather' | 'reduceScatter' | 'broadcast'> = {
    allReduce: 'allReduce',
    pairwiseAllReduce: 'allReduce',
    allGather: 'allGather',
    pairwiseAllGather: 'allGather',
    reduceScatter: 'reduceScatter',
    pairwiseReduceScatter: 'reduceScatter',
    broadcast: 'broadcast',
    pairwiseBroadcast: 'broadcast',
  };
  const run = (kind: Pipelined, rank: MemoryRank, view: ReturnType<typeof viewTensor>, op: ReduceOp, root: number, output: Uint8Array | undefined) => {
    const into = output === undefined ? {} : { output };
    if (kind === 'allReduce') return ringAllReduce(rank.links, { view, op, ...into }, rank.context);
    if (kind === 'pairwiseAllReduce') return pairwiseAllReduce(rank.links, { view, op, ...into }, rank.context);
    if (kind === 'pairwiseReduceScatter') return pairwiseReduceScatter(rank.links, { view, op, ...into }, rank.context);
    if (kind === 'pairwiseAllGather') return pairwiseAllGather(rank.links, { view, ...into }, rank.context);
    if (kind === 'reduceScatter') return ringReduceScatter(rank.links, { view, op, ...into }, rank.context);
    if (kind === 'allGather') return ringAllGather(rank.links, { view, ...into }, rank.context);
    if (kind === 'pairwiseBroadcast') return pairwiseBroadcast(rank.links, { view, root, ...into }, rank.context);
    return chainBroadcast(rank.links, { view, root, ...into }, rank.context);
  };

  it('the check: a send completes on arrival, and one whose memory was written before is recorded', async () => {
    await fc.assert(
      fc.asyncProperty(fc.scheduler(), async (interleave) => {
        const { ranks, traffic } = job(2, { interleave, sendsCompleteOnArrival: true });
        const [zero, one] = ranks as [MemoryRank, MemoryRank];
        const bytes = Uint8Array.of(1, 2, 3);
        let sent = false;
        zero.links.send(0, 1, 7n, bytes, { elementType: ElementType.U8, count: 3 }).subscribe({ complete: () => (sent = true) });
        expect(sent).toBe(false);
        bytes[0] = 9;
        const received = await interleave.waitFor(lastValueFrom(one.links.receive(0, 0, 7n, { elementType: ElementType.U8, count: 3 })));
        expect(sent).toBe(true);
        expect(Array.from(received)).toEqual([1, 2, 3]);
        expect(traffic.overwrittenSends).toEqual(['0>1 rail 0 tag 7 #0 u8 [1, 2, 3]']);
        // A send its caller gave up on is not checked: its memory is the caller's again.
        const withdrawn = Uint8Array.of(4);
        zero.links.send(0, 1, 8n, withdrawn, { elementType: ElementType.U8, count: 1 }).subscribe().unsubscribe();
        withdrawn[0] = 5;
        await interleave.waitFor(lastValueFrom(one.links.receive(0, 0, 8n, { elementType: ElementType.U8, count: 1 })));
        expect(traffic.overwrittenSends).toHaveLength(1);
      }),
      { numRuns: 5 },
    );
  });

  it('without it, a send started by another’s completion on the same link still arrives after it', async () => {
    const { ranks } = job(2);
    const [zero, one] = ranks as [MemoryRank, MemoryRank];
    const shape = { elementType: ElementType.U8, count: 1 };
    zero.links.send(0, 1, 5n, Uint8Array.of(1), shape).subscribe({ complete: () => zero.links.send(0, 1, 5n, Uint8Array.of(2), shape).subscribe() });
    const first = await lastValueFrom(one.links.receive(0, 0, 5n, shape));
    const second = await lastValueFrom(one.links.receive(0, 0, 5n, shape));
    expect([first[0], second[0]]).toEqual([1, 2]);
  });

  it('no algorithm writes memory it sent from before that send completed, in any delivery order, into any result memory', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 6 }).chain((worldSize) =>
          fc.record({
            worldSize: fc.constant(worldSize),
            kind: fc.constantFrom<Pipelined>('allReduce', 'pairwiseAllReduce', 'allGather', 'pairwiseAllGather', 'reduceScatter', 'pairwiseReduceScatter', 'broadcast', 'pairwiseBroadcast'),
            into: fc.constantFrom('fresh' as const, 'output' as const, 'input' as const),
            order: arbRingOrder(worldSize),
            root: fc.integer({ min: 0, max: worldSize - 1 }),
            count: fc.integer({ min: 0, max: 30 }),
            channels: fc.integer({ min: 1, max: 2 }),
            pieceBytes: fc.integer({ min: 1, max: 24 }),
            seed: fc.integer(),
          }),
        ),
        fc.scheduler(),
        async ({ worldSize, kind, into, order, root, count, channels, pieceBytes, seed }, interleave) => {
          const collective = collectiveOf[kind];
          const c = buildCase({ kind: collective, dtype: 'i32', op: 'sum', root, count: collective === 'reduceScatter' ? count * worldSize : count }, worldSize, seededRandom(seed));
          const { ranks, traffic } = job(worldSize, { ringOrder: order, ringChannels: channels, pieceBytes, interleave, sendsCompleteOnArrival: true });
          const views = ranks.map((_, rank) => viewTensor(tensorOf('i32', c.inputs[rank]!, false)));
          // 'input': all-reduce and broadcast in place, reduce-scatter into this rank's slot of its
          // input, all-gather from this rank's slot of its output.
          const resultBytes = (length: number) => (collective === 'reduceScatter' ? length / worldSize : collective === 'allGather' ? length * worldSize : length);
          const outputs = views.map((view, rank) => {
            if (into === 'fresh') return undefined;
            if (into === 'output') return new Uint8Array(resultBytes(view.bytes.length));
            if (collective === 'allReduce' || collective === 'broadcast') return view.bytes;
            const shard = collective === 'reduceScatter' ? view.bytes.length / worldSize : view.bytes.length;
            if (collective === 'reduceScatter') return view.bytes.subarray(rank * shard, (rank + 1) * shard);
            const whole = new Uint8Array(shard * worldSize);
            whole.set(view.bytes, rank * shard);
            views[rank] = viewTensor(new Int32Array(whole.buffer, rank * shard, shard / 4));
            return whole;
          });
          const results = await interleave.waitFor(Promise.all(ranks.map((rank, index) => lastValueFrom(run(kind, rank, views[index]!, 'sum', root, outputs[index])))));
          expect(traffic.overwrittenSends).toEqual([]);
          const expected = modelCollective(c, worldSize);
          results.forEach((result, rank) => expect(hex(result), `${describeCase(c)} rank ${rank}`).toBe(hex(expected[rank]!.bytes!)));
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('every algorithm in the table', () => {
  const names = Object.keys(ALGORITHMS) as CollectiveName[];
  it('has one staged row per collective, last', () => {
    for (const name of names) {
      const planes = ALGORITHMS[name].map((row) => row.plane);
      expect(planes.indexOf('coordinator'), name).toBe(planes.length - 1);
      expect(planes.lastIndexOf('coordinator'), name).toBe(planes.length - 1);
    }
  });

  it('every row, on its plane, matches the reference for every collective, worlds 1..9 (in memory; the native plane modelled)', async () => {
    const random = seededRandom(42);
    for (let worldSize = 1; worldSize <= 9; worldSize++) {
      for (const kind of COLLECTIVE_KINDS) {
        for (const row of ALGORITHMS[kind] as readonly (typeof ALGORITHMS)[CollectiveName][number][]) {
          const dtype = DTYPES[(worldSize * 7 + kind.length) % DTYPES.length]!;
          const ops = opsFor(dtype);
          const c = buildCase({ kind, dtype, op: ops[worldSize % ops.length]!, root: worldSize - 1, count: (worldSize % 3) + 1 }, worldSize, random);
          const { ranks } = job(worldSize, { dataPlane: row.plane === 'native' ? 'native' : 'js', agreement: 'mesh' });
          const results = await Promise.all(
            ranks.map(({ links, context }, rank) => lastValueFrom(runRow(kind, row as never, links, requestFor(c, rank) as never, context) as Observable<unknown>, { defaultValue: undefined })),
          );
          const expected = modelCollective(c, worldSize);
          results.forEach((result, rank) => {
            const bytes = result === undefined || result === null ? null : result instanceof Uint8Array ? result : (result as { bytes: Uint8Array }).bytes;
            const want = expected[rank]!.bytes;
            // A ring folds in ring order, a tree in tree order: floats equal up to rounding. Every other row: bit for bit.
            if ((row.family === 'ring' || row.family === 'tree') && bytes !== null && want !== null) expectReference(c, bytes, want, rank);
            else expect(bytes === null ? null : hex(bytes), `${row.name} on ${row.plane}: ${describeCase(c)} rank ${rank}`).toBe(want === null ? null : hex(want));
          });
        }
      }
    }
  });
});

describe('the tree rows whose sends forward several producers (Rabenseifner all-reduce, Bruck all-gather, binomial gather)', () => {
  const rows = (['allReduce', 'allGather', 'gather'] as const).flatMap((kind) =>
    (ALGORITHMS[kind] as readonly (typeof ALGORITHMS)[CollectiveName][number][]).filter((row) => ['rabenseifner', 'bruck', 'binomial'].includes(row.name)).map((row) => ({ kind, row })),
  );

  it('are on both planes', () => {
    expect(rows.map(({ kind, row }) => `${kind} ${row.name} ${row.plane}`)).toEqual([
      'allReduce rabenseifner native',
      'allReduce rabenseifner js',
      'allGather bruck native',
      'allGather bruck js',
      'gather binomial native',
      'gather binomial js',
    ]);
  });

  it('match the reference, worlds 1..9, counts 0..97, every dtype x op, any root, tiny pieces (JS plane) and 1..3 rails', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          at: fc.nat({ max: rows.length - 1 }),
          worldSize: fc.integer({ min: 1, max: 9 }),
          dtype: fc.constantFrom(...DTYPES),
          opIndex: fc.nat(),
          rootIndex: fc.nat(),
          count: fc.integer({ min: 0, max: 97 }),
          pieceBytes: fc.integer({ min: 1, max: 64 }),
          rails: fc.integer({ min: 1, max: 3 }),
          seed: fc.integer(),
        }),
        async ({ at, worldSize, dtype, opIndex, rootIndex, count, pieceBytes, rails, seed }) => {
          const { kind, row } = rows[at]!;
          const ops = opsFor(dtype);
          const c = buildCase({ kind, dtype, op: ops[opIndex % ops.length]!, root: rootIndex % worldSize, count }, worldSize, seededRandom(seed));
          const { ranks } = job(worldSize, { dataPlane: row.plane === 'native' ? 'native' : 'js', agreement: 'mesh', pieceBytes, rails });
          const results = await Promise.all(
            ranks.map(({ links, context }, rank) => lastValueFrom(runRow(kind, row as never, links, requestFor(c, rank) as never, context) as Observable<unknown>, { defaultValue: undefined })),
          );
          const expected = modelCollective(c, worldSize);
          const outputs = results.map((result) => (result === undefined || result === null ? null : result instanceof Uint8Array ? result : (result as { bytes: Uint8Array }).bytes));
          outputs.forEach((bytes, rank) => {
            const want = expected[rank]!.bytes;
            // Rabenseifner folds in tree order: floats within rounding, integers and min/max exact; the gathers bit for bit.
            if (kind === 'allReduce' && bytes !== null && want !== null) expectReference(c, bytes, want, rank);
            else expect(bytes === null ? null : hex(bytes), `${row.name} on ${row.plane}: ${describeCase(c)} rank ${rank}`).toBe(want === null ? null : hex(want));
          });
          // Every rank of an all-reduce ends with the same bits.
          if (kind === 'allReduce') for (const bytes of outputs) expect(hex(bytes!)).toBe(hex(outputs[0]!));
        },
      ),
      { numRuns: 150 },
    );
  });
});

/** The request a session would build for rank `rank` of case `c`. */
function requestFor(c: CollectiveCase, rank: number): unknown {
  const input = c.inputs[rank] ?? null;
  const view = input === null ? null : viewTensor(tensorOf(c.dtype, input, false));
  switch (c.kind) {
    case 'barrier':
      return {};
    case 'scatter':
      return { view, root: c.root, countPerRank: c.countPerRank };
    case 'allToAllV':
      return { view, sendCounts: c.sendCounts![rank] };
    default:
      return { view, op: c.op, root: c.root };
  }
}
