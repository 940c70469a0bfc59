import fc from 'fast-check';
import { lastValueFrom, range, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { RankLostError } from '../../lib/errors.js';
import { retryOnShrink } from '../../lib/session/operators/index.js';
import { simulateJob } from '../../lib/testing/index.js';
import type { CollectiveTransport } from '../../lib/transport/transport-kind.js';

/** rxccl/testing knows communicators: split and group in a simulated job, and rank death with shrink. */
const TRANSPORTS: CollectiveTransport[] = ['tcp_host_staged', 'tcp_peer'];

describe.each(TRANSPORTS)('simulated communicators on %s', (transport) => {
  it('split: every world size and coloring sums over exactly its own members, in virtual time', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 7 }).chain((worldSize) => fc.tuple(fc.constant(worldSize), fc.array(fc.option(fc.integer({ min: 0, max: 2 }), { nil: null }), { minLength: worldSize, maxLength: worldSize }))), async ([worldSize, colors]) => {
        const result = await simulateJob({ worldSize, transport }, async (rank) => {
          const communicator = await rank.split({ color: colors[rank.rank]!, key: -rank.rank });
          if (communicator === null) return null;
          const sum = await communicator.allReduce(Int32Array.of(rank.rank + 1));
          return { members: communicator.jobRanks, sum: sum[0] };
        });
        result.ranks.forEach((outcome, rank) => {
          expect(outcome.status).toBe('returned');
          if (outcome.status !== 'returned') return;
          const color = colors[rank];
          if (color === null) return expect(outcome.value).toBeNull();
          const members = colors.flatMap((other, index) => (other === color ? [index] : [])).reverse();
          expect(outcome.value).toEqual({ members, sum: members.reduce((sum, member) => sum + member + 1, 0) });
        });
      }),
      { numRuns: 15 },
    );
  });

  it('a killed rank fails its communicators with RankLostError; the survivors shrink and go on', async () => {
    const result = await simulateJob({ worldSize: 4, transport, faultTolerant: true, faults: [{ kind: 'kill', rank: 2, atStep: 1 }] }, async (rank) => {
      await rank.barrier();
      let world = await rank.shrink(); // nothing lost yet: all four
      try {
        await rank.allReduce(Int32Array.of(1)); // rank 2 dies here
      } catch (error) {
        if (!(error instanceof RankLostError)) throw error;
        world = await world.shrink();
        // The shrink of a healthy communicator made before the loss is the same kind of thing.
        world = await world.shrink();
      }
      const sum = await world.allReduce(Int32Array.of(rank.rank + 1));
      return { members: world.jobRanks, sum: sum[0] };
    });
    expect(result.ranks.map((outcome) => outcome.status)).toEqual(['returned', 'returned', 'killed', 'returned']);
    for (const outcome of result.ranks) if (outcome.status === 'returned') expect(outcome.value).toEqual({ members: [0, 1, 3], sum: 1 + 2 + 4 });
  });

  it('property: wherever the kill strikes, in any delivery order, a retryOnShrink loop never hangs, and the survivors finish alike or all name the divergence', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 2, max: 5 }).chain((worldSize) => fc.tuple(fc.constant(worldSize), fc.integer({ min: 0, max: worldSize - 1 }), fc.integer({ min: 0, max: 5 }))),
        fc.option(fc.scheduler(), { nil: undefined }),
        async ([worldSize, victim, atValue], scheduler) => {
          const options = { worldSize, transport, faultTolerant: true, faults: [{ kind: 'kill' as const, rank: victim, atStep: 0 }] };
          // Some runs with every delivery (notices included, each rank's its own) in an order fast-check picks.
          const result = await simulateJob(scheduler === undefined ? options : { ...options, scheduler }, async (rank) => {
            const start = await rank.shrink();
            return lastValueFrom(
              range(0, 4).pipe(
                retryOnShrink(start, async (communicator, value) => {
                  // The victim's first call of the world is the step the kill strikes.
                  if (rank.rank === victim && value === atValue) await rank.barrier();
                  return (await communicator.allReduce(Int32Array.of(1)))[0]!;
                }),
                toArray(),
              ),
            );
          });
          const killed = atValue < 4;
          if (killed) expect(result.ranks[victim]!.status).toBe('killed');
          const survivors = result.ranks.filter((outcome) => !(killed && outcome.rank === victim));
          // What the victim sent before it died may arrive after its notice: a step can complete on
          // some survivors and fail on others. Then every survivor names it; else all finish alike.
          if (survivors.some((outcome) => outcome.status === 'threw')) {
            for (const outcome of survivors) {
              expect(outcome.status, JSON.stringify(outcome)).toBe('threw');
              if (outcome.status === 'threw') expect(outcome.error.message, JSON.stringify(survivors)).toMatch(/^retryOnShrink: after rank \d was lost, the ranks left stand at different values/);
            }
            return;
          }
          const sums = survivors.map((outcome) => (outcome.status === 'returned' ? outcome.value : outcome.status));
          for (const each of sums) expect(each).toEqual(sums[0]);
          const first = sums[0] as number[];
          const switched = first.indexOf(worldSize - 1);
          const from = switched < 0 ? 4 : switched;
          expect(first).toEqual(Array.from({ length: 4 }, (_, round) => (round < from ? worldSize : worldSize - 1)));
          expect(from).toBeLessThanOrEqual(killed ? atValue : 4);
        },
      ),
      { numRuns: 40 },
    );
  });
});

describe('retryOnShrink in a simulated job', () => {
  it.each(TRANSPORTS)('a rank killed mid-pipeline: the survivors redo that step on the ranks left and finish (%s)', async (transport) => {
    const result = await simulateJob({ worldSize: 4, transport, faultTolerant: true, faults: [{ kind: 'kill', rank: 1, atStep: 0 }] }, async (rank) => {
      const start = await rank.shrink(); // a communicator of all four
      const shrinks: number[][] = [];
      const sums = await lastValueFrom(
        range(0, 5).pipe(
          retryOnShrink(
            start,
            async (communicator, value) => {
              // Rank 1 dies as it comes to value 2 (its first call of the world: step 0).
              if (rank.rank === 1 && value === 2) await rank.barrier();
              return [value, (await communicator.allReduce(Int32Array.of(1)))[0]!];
            },
            { onShrink: (shrunk) => shrinks.push([...shrunk.jobRanks]) },
          ),
          toArray(),
        ),
      );
      return { sums, shrinks };
    });
    expect(result.ranks.map((outcome) => outcome.status)).toEqual(['returned', 'killed', 'returned', 'returned']);
    for (const outcome of result.ranks) {
      if (outcome.status !== 'returned') continue;
      expect(outcome.value).toEqual({ sums: [[0, 4], [1, 4], [2, 3], [3, 3], [4, 3]], shrinks: [[0, 2, 3]] });
    }
  });
});
