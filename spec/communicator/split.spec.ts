import { afterEach, describe, expect, it } from 'vitest';
import type { Communicator } from '../../lib/session/rank-session.js';
import type { CollectiveTransport } from '../../lib/transport/transport-kind.js';
import { rejection, sleep, startJob, type TestJob } from '../helpers/job.js';

/**
 * Communicators in one process over real sockets: split and group on both transports, concurrent
 * collectives per communicator, one idle communicator never holding another back, mismatches named.
 */
const TRANSPORTS: CollectiveTransport[] = ['tcp_host_staged', 'tcp_peer'];

let job: (TestJob & { sessions: Communicator[] }) | null = null;
afterEach(async () => {
  await job?.dispose();
  job = null;
});

/** The sum over `ranks` of each rank's tensor [rank + 1, 10 * (rank + 1)]. */
function expectedSum(ranks: readonly number[]): number[] {
  return [ranks.reduce((sum, rank) => sum + rank + 1, 0), ranks.reduce((sum, rank) => sum + 10 * (rank + 1), 0)];
}

describe.each(TRANSPORTS)('communicators on %s', (transport) => {
  it.each([
    { groups: 2, size: 4 },
    { groups: 4, size: 2 },
  ])('split 8 ranks into $groups x $size: concurrent all-reduces on every group are right', async ({ groups, size }) => {
    job = await startJob(8, { transport });
    const sessions = job.sessions;
    // Colors by block; keys reverse each block, so new rank 0 is the block's last old rank.
    const communicators = await Promise.all(sessions.map((session) => session.split({ color: Math.floor(session.rank / size), key: -session.rank })));
    for (const [rank, communicator] of communicators.entries()) {
      const block = Math.floor(rank / size);
      const members = Array.from({ length: size }, (_, index) => block * size + size - 1 - index);
      expect(communicator!.worldSize).toBe(size);
      expect(communicator!.jobRanks).toEqual(members);
      expect(communicator!.rank).toBe(members.indexOf(rank));
      expect(communicator!.communicatorId).not.toBe(0n);
    }
    expect(new Set(communicators.map((communicator) => communicator!.communicatorId)).size).toBe(groups);
    // Every group at once, twice, and the world in between: each sums its own ranks.
    for (let round = 0; round < 2; round++) {
      const results = await Promise.all(communicators.map((communicator, rank) => communicator!.allReduce(Float64Array.of(rank + 1, 10 * (rank + 1)))));
      results.forEach((result, rank) => expect([...result]).toEqual(expectedSum(communicators[rank]!.jobRanks)));
      const world = await Promise.all(sessions.map((session) => session.allReduce(Int32Array.of(1))));
      expect(world.map((result) => result[0])).toEqual(new Array(8).fill(8));
    }
    // The rest of the API on a communicator: p2p by communicator rank, staged collectives, a split of a split.
    const [first] = communicators.filter((communicator) => communicator!.jobRanks[0] === size - 1);
    expect(first).toBeDefined();
    const gathered = await Promise.all(communicators.map((communicator, rank) => communicator!.allGather(Int32Array.of(rank))));
    gathered.forEach((result, rank) => expect([...result]).toEqual(communicators[rank]!.jobRanks));
    const scattered = await Promise.all(communicators.map((communicator) => communicator!.scatter(communicator!.rank === 0 ? Int32Array.from({ length: size }, (_, index) => 100 + index) : null, 0, 1)));
    scattered.forEach((result, rank) => expect(result[0]).toBe(100 + communicators[rank]!.rank));
    await Promise.all(
      communicators.map(async (communicator) => {
        const peer = (communicator!.rank + 1) % size;
        const from = (communicator!.rank + size - 1) % size;
        const [, received] = await Promise.all([communicator!.send(peer, 7, Int32Array.of(communicator!.jobRanks[communicator!.rank]!)), communicator!.receive(from, 7, { dtype: 'i32', count: 1 })]);
        expect(received[0]).toBe(communicator!.jobRanks[from]);
      }),
    );
    const halves = await Promise.all(communicators.map((communicator) => communicator!.split({ color: communicator!.rank % 2 })));
    const sums = await Promise.all(halves.map((half) => half!.allReduce(Int32Array.of(1))));
    sums.forEach((sum, rank) => expect(sum[0]).toBe(halves[rank]!.worldSize));
    expect(halves[0]!.worldSize).toBe(size / 2);
  });

  it('a group collective does not wait for another group, idle or busy', async () => {
    job = await startJob(4, { transport, timeoutMs: 10_000 });
    const sessions = job.sessions;
    const communicators = await Promise.all(sessions.map((session) => session.split({ color: session.rank < 2 ? 0 : 1 })));
    // Group 1 (ranks 2, 3) stays idle; one of group 0 is in a world barrier that cannot end yet.
    const pendingWorld = sessions[0]!.barrier();
    const started = performance.now();
    for (let index = 0; index < 20; index++) {
      await Promise.all([communicators[0]!.allReduce(Int32Array.of(index)), communicators[1]!.allReduce(Int32Array.of(index))]);
    }
    expect(performance.now() - started).toBeLessThan(5_000);
    await Promise.all([pendingWorld, ...sessions.slice(1).map((session) => session.barrier())]);
  });

  it('null color joins none; group() of listed ranks; a communicator closes without closing the session', async () => {
    job = await startJob(4, { transport });
    const sessions = job.sessions;
    const split = await Promise.all(sessions.map((session) => session.split({ color: session.rank === 3 ? null : 0 })));
    expect(split[3]).toBeNull();
    expect(split.slice(0, 3).map((communicator) => communicator!.worldSize)).toEqual([3, 3, 3]);
    const pair = await Promise.all([sessions[3]!.group([3, 1]), sessions[1]!.group([3, 1])]);
    expect(pair.map((communicator) => communicator.rank)).toEqual([0, 1]);
    const broadcast = await Promise.all(pair.map((communicator) => communicator.broadcast(Int32Array.of(communicator.rank === 0 ? 42 : 0), 0)));
    expect(broadcast.map((result) => result[0])).toEqual([42, 42]);
    // One rank per communicator works too (every collective staged at itself).
    const alone = await sessions[2]!.group([2]);
    expect([...(await alone.allReduce(Float32Array.of(1.5)))]).toEqual([1.5]);
    await alone.close();
    await Promise.all(pair.map((communicator) => communicator.close()));
    const closed = await rejection(pair[0].barrier());
    expect(closed.code).toBe('CHANNEL_CLOSED');
    expect(closed.message).toMatch(/^rank 0 of communicator 0x[0-9a-f]{16} closed$/);
    const world = await Promise.all(sessions.map((session) => session.allReduce(Int32Array.of(2))));
    expect(world.map((result) => result[0])).toEqual([8, 8, 8, 8]);
  });

  it('a rank that calls something else where the others split is named on every rank', async () => {
    job = await startJob(3, { transport });
    const sessions = job.sessions;
    const outcomes = await Promise.all([
      rejection(sessions[0]!.split({ color: 0 })),
      rejection(sessions[1]!.split({ color: 0 })),
      rejection(sessions[2]!.allGather(BigInt64Array.of(0n, 0n))),
    ]);
    // Named as any mismatch is (on tcp_peer's native plane the ranks first meet there, before the coordinator).
    for (const error of outcomes) expect(error.message).toMatch(/collective sequence 0 mismatch: rank \d submitted \{AllGather .*\}, rank 2 submitted \{AllGather I64 root ANY count 2/);
  });

  it('group() with the ranks listed in another order is named', async () => {
    job = await startJob(3, { transport, timeoutMs: 1_000 });
    const sessions = job.sessions;
    const orders = await Promise.all([rejection(sessions[0]!.group([0, 1])), rejection(sessions[1]!.group([1, 0]))]);
    for (const error of orders) expect(error.message).toMatch(/layout "group 0,1"|layout "group 1,0"/);
  });

  it('group() called with other ranks on different ranks is named at once, with both lists, on every rank', async () => {
    // A timeout far beyond the test's: the ranks are on different meetings, and only their announcements can tell.
    job = await startJob(3, { transport, timeoutMs: 120_000 });
    const sessions = job.sessions;
    const started = performance.now();
    const errors = await Promise.all([rejection(sessions[0]!.group([0, 1, 2])), rejection(sessions[1]!.group([1, 0])), rejection(sessions[2]!.group([2, 1, 0]))]);
    expect(performance.now() - started).toBeLessThan(20_000);
    const text = 'group mismatch: rank 0 called group with ranks [0,1,2], rank 1 with ranks [0,1]: every rank listed calls group with the same ranks';
    // Ranks 0 and 1 find it (PROTOCOL), unless the other's abort came first; rank 2 hears of it.
    for (const error of errors.slice(0, 2)) expect([error.code, error.message.endsWith(text)]).toEqual([expect.stringMatching(/^(PROTOCOL|REMOTE_ABORT)$/), true]);
    expect(errors.slice(0, 2).map((error) => error.code)).toContain('PROTOCOL');
    expect([errors[2]!.code, errors[2]!.message.endsWith(text)]).toEqual(['REMOTE_ABORT', true]);
  });
});

describe('a group with a missing rank', () => {
  it.each(TRANSPORTS)('is named by the leader on %s', async (transport) => {
    job = await startJob(3, { transport, timeoutMs: 800 });
    const sessions = job.sessions;
    const started = performance.now();
    const errors = await Promise.all([rejection(sessions[0]!.group([0, 2])), sleep(1).then(() => rejection(sessions[1]!.barrier()))]);
    expect(errors[0].code).toBe('TIMEOUT');
    expect(errors[0].message).toMatch(/communicator 0x[0-9a-f]{16} collective sequence 0; missing ranks \[1\] \(job ranks \[2\]\)/);
    expect(performance.now() - started).toBeLessThan(5_000);
  });
});
