/**
 * Hierarchical all-reduce, all-gather and reduce-scatter (GX1_TOPOLOGY_GROUPS with
 * GX1_COLLECTIVE_ALGORITHM=hierarchical) in simulated jobs: real sessions over in-memory links, any
 * interleaving, both planes and both transports. Their results are the staged path's, bit for
 * bit, with random floats (folds in rank order), whatever the groups: uneven, interleaved ranks,
 * listed in any order. The schedules' own invariants are in schedules.spec.ts.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { hierarchicalIdentity } from '../../lib/collectives/hierarchical-family.js';
import { WorldScheduleBuilder } from '../../lib/collectives/schedule/world-schedule-builder.js';
import { ConfigurationError } from '../../lib/errors.js';
import type { ReduceOp } from '../../lib/protocol/reduce-op.js';
import { type Tensor, tensorFromBytes, type TypedArray, viewTensor } from '../../lib/tensor.js';
import { arbTopologyGroups, randomBytes, seededRandom, simulateJob, type SimulateJobOptions } from '../../lib/testing/index.js';

type Case = { worldSize: number; groups: number[][]; dtype: 'f32' | 'f64' | 'f16' | 'i32'; op: ReduceOp; count: number; seed: number; inPlace: boolean };

/** Every rank's results of one all-reduce, all-gather and reduce-scatter of random data, as bytes. */
async function results(options: SimulateJobOptions, { worldSize, dtype, op, count, seed, inPlace }: Case): Promise<number[][][]> {
  // Tagged tensors: f16 travels as { dtype: 'f16', data: Uint16Array }.
  const data = (rank: number, length: number, salt: number): Tensor => ({ dtype, data: tensorFromBytes(dtype, randomBytes(dtype, length, seededRandom(seed * 31 + rank * 7 + salt)), false) as TypedArray });
  const bytes = (tensor: Tensor) => Array.from(viewTensor(tensor).bytes);
  const result = await simulateJob(options, async (rank) => {
    const reduced = await rank.allReduce(data(rank.rank, count, 1), op, { inPlace });
    const gathered = await rank.allGather(data(rank.rank, count, 2));
    const scattered = await rank.reduceScatter(data(rank.rank, count * worldSize, 3), op);
    return [bytes(reduced), bytes(gathered), bytes(scattered)];
  });
  return result.ranks.map((outcome) => {
    if (outcome.status !== 'returned') throw new Error(`rank ${outcome.rank} ${outcome.status}: ${JSON.stringify(outcome)}`);
    return outcome.value;
  });
}

describe('hierarchical collectives in simulated jobs', () => {
  for (const [transport, dataPlane] of [
    ['tcp_peer', 'native'],
    ['tcp_peer', 'js'],
    ['tcp_host_staged', 'js'],
  ] as const) {
    it(`give the staged path's bits at worlds 4..8 with any groups, in any interleaving (${transport}, ${dataPlane} plane)`, async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 4, max: 8 }).chain((worldSize) =>
            fc.record({
              worldSize: fc.constant(worldSize),
              groups: arbTopologyGroups(worldSize, 2),
              dtype: fc.constantFrom('f32' as const, 'f64' as const, 'f16' as const, 'i32' as const),
              op: fc.constantFrom<ReduceOp>('sum', 'avg', 'prod', 'max'),
              count: fc.integer({ min: 0, max: 40 }),
              seed: fc.integer(),
              inPlace: fc.boolean(),
              ringChannels: fc.integer({ min: 1, max: 3 }),
            }),
          ),
          fc.scheduler(),
          async (drawn, scheduler) => {
            const { worldSize, groups, ringChannels } = drawn;
            const drawnCase = drawn.dtype === 'i32' && drawn.op === 'avg' ? { ...drawn, op: 'sum' as const } : drawn;
            const base = { worldSize, transport, dataPlane, ringChannels, scheduler } as const;
            const hierarchical = await results({ ...base, algorithm: 'hierarchical', topologyGroups: groups }, drawnCase);
            const staged = await results({ worldSize, transport, dataPlane, algorithm: 'direct' }, drawnCase);
            expect(hierarchical).toEqual(staged);
          },
        ),
        { numRuns: 25 },
      );
    });
  }

  it('refuse bad groups with the reference texts, after the option they came from', async () => {
    const refusal = (topologyGroups: number[][]) => simulateJob({ worldSize: 4, transport: 'tcp_peer', algorithm: 'hierarchical', topologyGroups }, async () => 0).then(() => 'opened', (error: Error) => error.message);
    expect(await refusal([[0, 1, 2, 3]])).toBe('topologyGroups: invalid collective hierarchy: requires at least two non-empty groups');
    expect(await refusal([[0, 1], [1, 2, 3]])).toBe('topologyGroups: invalid collective hierarchy: rank 1 appears more than once');
    expect(await refusal([[0, 1], [2]])).toBe('topologyGroups: invalid collective hierarchy: does not cover ranks [3]');
    expect(await refusal([[0, 1], [2, 3, 4]])).toBe('topologyGroups: topology rank 4 is outside world size 4');
    expect(await refusal([[0, 1], [], [2, 3]])).toBe('topologyGroups: invalid collective hierarchy: group 1 is empty');
  });

  it('a schedule with more messages on a link than its tags can number is refused with a typed error naming the link', () => {
    const world = new WorldScheduleBuilder(2, hierarchicalIdentity([[0], [1]], 1));
    const bytes = { memory: 'input' as const, offset: 0, bytes: 0 };
    for (let message = 0; message < 4096; message++) world.transfer(0, 1, bytes, bytes, null);
    expect(() => world.transfer(0, 1, bytes, bytes, null)).toThrow(ConfigurationError);
    expect(() => world.transfer(0, 1, bytes, bytes, null)).toThrow(/^hierarchical schedule of 2 ranks puts more than 4096 messages of tag channel 0 on the link from rank 0 to rank 1 .*GX1_RING_CHANNELS/);
  });
});
