import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RankLostError } from '../../lib/errors.js';
import { simulateJob } from '../../lib/testing/index.js';
import type { Communicator } from '../../lib/session/rank-session.js';
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

  it('property: wherever the kill strikes, a recovery loop never hangs and ends on the survivors, every survivor alike', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 2, max: 5 }).chain((worldSize) => fc.tuple(fc.constant(worldSize), fc.integer({ min: 0, max: worldSize - 1 }), fc.integer({ min: 0, max: 5 }))),
        async ([worldSize, victim, atStep]) => {
          const result = await simulateJob({ worldSize, transport, faultTolerant: true, faults: [{ kind: 'kill', rank: victim, atStep }] }, async (rank) => {
            let communicator: Communicator | null = null;
            const sums: number[] = [];
            for (let round = 0; round < 4; round++) {
              for (;;) {
                try {
                  sums.push((await (communicator ?? rank).allReduce(Int32Array.of(1)))[0]!);
                  break;
                } catch (error) {
                  if (!(error instanceof RankLostError)) throw error;
                  communicator = await (communicator ?? rank).shrink();
                }
              }
            }
            return sums;
          });
          const killed = atStep < 4;
          result.ranks.forEach((outcome, rank) => {
            if (killed && rank === victim) return expect(outcome.status).toBe('killed');
            expect(outcome.status).toBe('returned');
            if (outcome.status !== 'returned') return;
            const expected = Array.from({ length: 4 }, (_, round) => (killed && round >= atStep ? worldSize - 1 : worldSize));
            expect(outcome.value).toEqual(expected);
          });
        },
      ),
      { numRuns: 20 },
    );
  });
});
