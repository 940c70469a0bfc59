/** Reductions assemble large responses in recycled memory: results must never see stale bytes. */
import { afterEach, expect, it } from 'vitest';
import { startCoordinator, startJob, type TestJob } from '../helpers/job.js';

let job: TestJob | null = null;
afterEach(async () => {
  await job?.dispose();
  job = null;
});

it('back-to-back large reductions (pooled response memory) give exact results', async () => {
  const started = await startJob(3);
  job = started;
  const count = 300_000; // 1.2 MB per rank, 3.6 MB responses: they span many socket chunks
  for (let round = 0; round < 4; round++) {
    const results = await Promise.all(
      started.sessions.map(async (session) => {
        const data = Float64Array.from({ length: count }, (_, index) => index * (round + 1) + session.rank);
        const [sum, max, shard] = [await session.allReduce(data, 'sum'), await session.allReduce(data, 'max'), await session.reduceScatter(data, 'min')];
        return { sum, max, shard, rank: session.rank };
      }),
    );
    for (const { sum, max, shard, rank } of results) {
      for (const index of [0, 1, 12_345, count - 1]) {
        expect(sum[index]).toBe(3 * index * (round + 1) + 3);
        expect(max[index]).toBe(index * (round + 1) + 2);
      }
      const shardStart = rank * (count / 3);
      expect(shard[0]).toBe(shardStart * (round + 1));
      expect(shard[shard.length - 1]).toBe((shardStart + count / 3 - 1) * (round + 1));
    }
  }
});

it.each([2, 3])(
  'tcp_peer at %i ranks: mid-size collectives back to back reuse their message memory (sent and received) and every result stays exact',
  async (worldSize) => {
    // 96 KiB tensors run a schedule on the session's plane, and every piece it sends or receives
    // is over the pools' floor (DEFAULT_POOLED_BYTES), so each call reuses the memory the one
    // before gave back.
    const started = await startJob(worldSize, { transport: 'tcp_peer' });
    job = started;
    const count = 24 * 1024;
    const W = worldSize;
    const value = (round: number, rank: number, index: number) => ((index * 7 + round * 13 + rank * 101) % 1000) - 500;
    const calls = started.sessions.map((session) => {
      const rounds: Promise<void>[] = [];
      // Started without waiting: each collective begins the moment the one before it ends.
      for (let round = 0; round < 6; round++) {
        const data = Float32Array.from({ length: count }, (_, index) => value(round, session.rank, index));
        const sum = session.allReduce(data, 'sum');
        const gathered = session.allGather(data);
        const shard = session.reduceScatter(data, 'max');
        const root = round % W;
        // In place on odd rounds (the part is copied into the caller's tensor), fresh on even ones.
        const broadcast = session.broadcast(session.rank === root ? data.slice() : new Float32Array(count), root, { inPlace: round % 2 === 1 });
        rounds.push(
          Promise.all([sum, gathered, shard, broadcast]).then(([s, g, m, b]) => {
            for (const index of [0, 1, 4_321, count - 1]) {
              let total = 0;
              for (let rank = 0; rank < W; rank++) total += value(round, rank, index);
              expect(s[index]).toBe(total);
              for (let rank = 0; rank < W; rank++) expect(g[rank * count + index]).toBe(value(round, rank, index));
              expect(b[index]).toBe(value(round, root, index));
            }
            const shardStart = session.rank * (count / W);
            for (const offset of [0, count / W - 1]) {
              let max = -Infinity;
              for (let rank = 0; rank < W; rank++) max = Math.max(max, value(round, rank, shardStart + offset));
              expect(m[offset]).toBe(max);
            }
          }),
        );
      }
      return Promise.all(rounds);
    });
    await Promise.all(calls);
  },
  60_000,
);

it.each([
  ['ring all-reduce', 16 * 1024],
  ['ring all-reduce', 512 * 1024],
  ['chain broadcast', 16 * 1024],
  ['chain broadcast', 512 * 1024],
] as const)(
  'tensors received point to point and then used in place by the %s (%i bytes) stay the caller\'s: later messages never land in them',
  async (algorithm, bytes) => {
    // A point-to-point result may sit in the mesh's pooled memory; a ring or chain that receives
    // straight into the caller's tensor must not give that tensor back to the pool. Each rank
    // receives its tensor from the other, so whichever receives in place at offset 0 is checked.
    const started = await startCoordinator(2, { transport: 'tcp_peer', timeoutMs: 10_000 });
    job = started;
    const sessions = await Promise.all([0, 1].map((rank) => started.openRank(rank, { algorithm: 'ring' })));
    const count = bytes / 4;
    const like = { dtype: 'f32', count } as const;
    const exchange = (tag: number, fill: (rank: number) => number) =>
      Promise.all(sessions.map((session) => Promise.all([session.send(1 - session.rank, tag, new Float32Array(count).fill(fill(session.rank))), session.receive(1 - session.rank, tag, like)]).then(([, received]) => received)));
    // Rank 0 ends up with 2s, rank 1 with 1s.
    const tensors = await exchange(1, (rank) => rank + 1);
    if (algorithm === 'ring all-reduce') await Promise.all(sessions.map((session) => session.allReduce(tensors[session.rank]!, 'sum', { inPlace: true })));
    else await Promise.all(sessions.map((session) => session.broadcast(tensors[session.rank]!, 0, { inPlace: true })));
    const expected = algorithm === 'ring all-reduce' ? 3 : 2;
    const ends = () => tensors.map((tensor) => [tensor[0], tensor[count - 1]]);
    expect(ends()).toEqual([
      [expected, expected],
      [expected, expected],
    ]);
    // Messages of the same size class after it: none may be written into a caller's tensor.
    for (let round = 0; round < 4; round++) {
      const later = await exchange(2, () => 10 + round);
      for (const rank of [0, 1]) {
        expect(later[rank]!.buffer).not.toBe(tensors[rank]!.buffer);
        expect(later[rank]![0]).toBe(10 + round);
      }
    }
    expect(ends()).toEqual([
      [expected, expected],
      [expected, expected],
    ]);
  },
  60_000,
);
