/**
 * arbWorld: a counterexample comes back in the smallest world that fails. The protocol is a
 * two-phase commit whose seeded bug (the coordinator commits when any participant votes yes, not
 * when every one does) needs two participants to show, so the smallest failing world is 3.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { arbWorld, type SimulatedRank, simulateJob } from '../../lib/testing/index.js';

const VOTE_TAG = 1;

/** Rank 0 coordinates, the others vote; every rank returns the decision (1 commit, 0 abort). */
async function twoPhaseCommit(rank: SimulatedRank, vote: boolean, buggy: boolean): Promise<number> {
  if (rank.rank !== 0) {
    await rank.send(0, VOTE_TAG, Int32Array.of(vote ? 1 : 0));
    return (await rank.broadcast(Int32Array.of(0), 0))[0]!;
  }
  const votes: boolean[] = [];
  for (let participant = 1; participant < rank.worldSize; participant++) {
    const [yes] = (await rank.receive(participant, VOTE_TAG, { dtype: 'i32', count: 1 })) as Int32Array;
    votes.push(yes === 1);
  }
  const commit = buggy ? votes.some((yes) => yes) : votes.every((yes) => yes);
  return (await rank.broadcast(Int32Array.of(commit ? 1 : 0), 0))[0]!;
}

/** Every rank decides to commit exactly when every participant voted yes, in any delivery order. */
function twoPhaseCommitProperty(buggy: boolean) {
  return fc.asyncProperty(arbWorld(fc.boolean(), { minWorldSize: 2, maxWorldSize: 8 }), fc.scheduler(), async ({ worldSize, ranks: votes }, scheduler) => {
    const result = await simulateJob({ worldSize, transport: 'tcp_peer', scheduler }, (rank) => twoPhaseCommit(rank, votes[rank.rank]!, buggy));
    const expected = votes.slice(1).every((yes) => yes) ? 1 : 0;
    for (const outcome of result.ranks) {
      if (outcome.status !== 'returned') throw new Error(`rank ${outcome.rank} ${outcome.status}`);
      if (outcome.value !== expected) throw new Error(`rank ${outcome.rank} decided ${outcome.value}, expected ${expected}`);
    }
  });
}

describe('arbWorld', () => {
  it.each([1, 2, 3, 4, 5, 6, 7, 8])('seed %i: the buggy two-phase commit shrinks to world 3, one participant voting yes and one no', async (seed) => {
    const details = await fc.check(twoPhaseCommitProperty(true), { seed, numRuns: 100 });
    expect(details.failed).toBe(true);
    const [world] = details.counterexample!;
    expect(world.worldSize, JSON.stringify(world)).toBe(3);
    expect(world.ranks).toHaveLength(3);
    expect([...world.ranks.slice(1)].sort()).toEqual([false, true]);
  });

  it('the fixed two-phase commit holds in every drawn world and delivery order', async () => {
    const details = await fc.check(twoPhaseCommitProperty(false), { seed: 1, numRuns: 100 });
    expect(details.failed, fc.defaultReportMessage(details)).toBe(false);
  });

  it('draws every world size in its bounds, and refuses bounds that are no world', () => {
    const sizes = new Set(fc.sample(arbWorld(fc.constant(0), { minWorldSize: 2, maxWorldSize: 4 }), { seed: 1, numRuns: 200 }).map((world) => world.worldSize));
    expect([...sizes].sort()).toEqual([2, 3, 4]);
    expect(() => arbWorld(fc.constant(0), { minWorldSize: 0 })).toThrow('arbWorld: minWorldSize 0 and maxWorldSize 8 must be whole numbers with 1 <= minWorldSize <= maxWorldSize');
    expect(() => arbWorld(fc.constant(0), { minWorldSize: 3, maxWorldSize: 2 })).toThrow(/minWorldSize 3 and maxWorldSize 2/);
  });
});
