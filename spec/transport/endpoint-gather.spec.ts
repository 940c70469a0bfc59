/**
 * The endpoint gather's rounds (#47 item 4, docs/protocol.md 8.3 "The endpoint gather") against
 * a reference model: whatever the world size (1..64) and whatever order the ranks start, ask and
 * get their answers in (fast-check's scheduler orders every start and every answer), every rank
 * ends with the whole table, the same on every rank, in ceil(log2(W-1)) rounds of O(1) partners,
 * having received W - 2 entries; and a rank that fails fails the partners waiting on it.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EndpointGather } from '../../lib/transport/endpoint-gather.js';

/** The reference: the table is every rank's own entry, by rank. */
const entryOf = (rank: number) => `entry of rank ${rank}`;

describe('the endpoint gather', () => {
  it('gives every rank the full, identical table for any world size 1..64 and any order of arrivals and answers', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 64 }), fc.scheduler(), async (worldSize, s) => {
        const gathers = Array.from({ length: worldSize }, (_, rank) => new EndpointGather(rank, worldSize, entryOf(rank), entryOf((rank + 1) % worldSize)));
        const asked: { asker: number; partner: number; count: number }[][] = gathers.map(() => []);
        const received = new Array<number>(worldSize).fill(0);
        const tables = gathers.map((gather, rank) =>
          // Each rank starts when the scheduler lets it; each answer arrives when the scheduler lets it.
          s.schedule(Promise.resolve(rank), `rank ${rank} starts`).then(() =>
            gather.run(async (distance, count, partnerEntry) => {
              const partner = (rank + distance) % worldSize;
              expect(partnerEntry).toBe(entryOf(partner));
              asked[rank]!.push({ asker: rank, partner, count });
              // The answer travels once the partner has it, and arrives when the scheduler says.
              const entries = await s.schedule(Promise.resolve(await gathers[partner]!.entriesFor(distance)), `${partner} answers ${rank}`);
              received[rank]! += entries.length;
              return entries;
            }),
          ),
        );
        await s.waitFor(Promise.all(tables));
        const reference = Array.from({ length: worldSize }, (_, rank) => entryOf(rank));
        for (const table of await Promise.all(tables)) expect(table).toEqual(reference);
        const rounds = worldSize <= 2 ? 0 : Math.ceil(Math.log2(worldSize - 1));
        for (let rank = 0; rank < worldSize; rank++) {
          expect(asked[rank]!.length).toBe(rounds);
          expect(received[rank]).toBe(Math.max(0, worldSize - 2));
        }
      }),
      { numRuns: 100 },
    );
  });

  it('asks partners at distances 1, 2, 4, ... below W - 1, each for the run up to the end of the ring', () => {
    expect(EndpointGather.distances(1)).toEqual([]);
    expect(EndpointGather.distances(2)).toEqual([]);
    expect(EndpointGather.distances(3)).toEqual([1]);
    expect(EndpointGather.distances(32)).toEqual([1, 2, 4, 8, 16]);
    expect(EndpointGather.distances(33)).toEqual([1, 2, 4, 8, 16]);
    expect(EndpointGather.distances(34)).toEqual([1, 2, 4, 8, 16, 32]);
    expect(EndpointGather.wanted(32, 16)).toBe(15);
    expect(EndpointGather.wanted(34, 32)).toBe(1);
  });

  it('refuses an asker that is no partner, and fails the partners waiting when its own gather fails', async () => {
    const gather = new EndpointGather(0, 8, 'a', 'b');
    await expect(gather.entriesFor(3)).rejects.toThrow('rank 5 is no partner of rank 0 in the endpoint gather of 8 ranks');
    // Distance 4 wants the 3 entries after rank 0, which it does not know yet.
    const waiting = gather.entriesFor(4);
    const failed = gather.run(() => Promise.reject(new Error('rank 1 left')));
    await expect(failed).rejects.toThrow('rank 1 left');
    await expect(waiting).rejects.toThrow('rank 1 left');
  });

  it('refuses a partner that answers with another count of entries than it was asked for', async () => {
    const gather = new EndpointGather(2, 5, 'c', 'd');
    await expect(gather.run(async () => ['e', 'a'])).rejects.toThrow('rank 3 sent 2 endpoint entries to rank 2, which asked for 1');
  });
});
