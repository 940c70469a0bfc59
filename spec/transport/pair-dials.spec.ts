/**
 * The dial rule of links on demand (#47 item 3, lib/transport/pair-dials.ts) against its promise:
 * whatever the order of two ranks' first uses of their pair (one rank or both, each any number of
 * times) and whatever order the dials arrive in (fast-check's scheduler orders every use and every
 * arrival), each rank dials exactly once, each accepts exactly one link from the other, and every
 * use waiting on the pair is answered: one link each way, never two, even where both dial at once.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PairDials } from '../../lib/transport/pair-dials.js';

const PAIR = 7;

describe('links on demand: the dial rule', () => {
  it('ends with exactly one link each way whatever the order of the two ranks first uses and of the dials arriving', async () => {
    await fc.assert(
      fc.asyncProperty(
        // How many times each rank uses the pair (at least one rank uses it), in an order the scheduler picks.
        fc.tuple(fc.integer({ min: 0, max: 3 }), fc.integer({ min: 0, max: 3 })).filter(([a, b]) => a + b > 0),
        fc.scheduler(),
        async (uses, s) => {
          const dialled = [0, 0];
          /** accepted[r]: the ranks whose link to r came in. */
          const accepted: number[][] = [[], []];
          const ranks: PairDials<number>[] = [];
          for (const rank of [0, 1]) {
            ranks.push(
              new PairDials<number>((key) => {
                expect(key).toBe(PAIR);
                dialled[rank]! += 1;
                // The dial reaches the other rank when the scheduler says; it accepts it, which
                // makes it dial its own link of the pair (if it has not).
                return s.schedule(Promise.resolve(), `rank ${rank} dial arrives`).then(() => {
                  accepted[1 - rank]!.push(rank);
                  ranks[1 - rank]!.accepted(PAIR);
                });
              }),
            );
          }
          const waits = [0, 1].flatMap((rank) =>
            Array.from({ length: uses[rank]! }, (_, use) => s.schedule(Promise.resolve(), `rank ${rank} use ${use}`).then(() => ranks[rank]!.need(PAIR))),
          );
          await s.waitFor(Promise.all(waits));
          await s.waitAll();
          expect(dialled).toEqual([1, 1]);
          expect(accepted).toEqual([[1], [0]]);
          expect(ranks.every((rank) => rank.dialled(PAIR))).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('a dial that fails fails every use waiting on it, and the rank does not dial again', async () => {
    let dials = 0;
    const failure = new Error('cannot reach direct peer rank 3 rail 0 at 127.0.0.1:1');
    const rank = new PairDials<number>(() => {
      dials += 1;
      return Promise.reject(failure);
    });
    await expect(rank.need(PAIR)).rejects.toBe(failure);
    rank.accepted(PAIR);
    await expect(rank.need(PAIR)).rejects.toBe(failure);
    expect(dials).toBe(1);
  });
});
