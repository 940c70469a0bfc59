/** Reductions assemble large responses in recycled memory: results must never see stale bytes. */
import { afterEach, expect, it } from 'vitest';
import { startJob, type TestJob } from '../helpers/job.js';

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
