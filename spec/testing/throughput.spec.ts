/** The simulator is cheap enough for property tests of long programs: 10,000 collectives at world 8 in seconds. */
import { describe, expect, it } from 'vitest';
import { simulateJob } from '../../lib/testing/index.js';

describe('simulateJob throughput', () => {
  it('runs 10,000 collectives at world 8 in seconds, each with the right result', async () => {
    const collectives = 10_000;
    const started = performance.now();
    const result = await simulateJob({ worldSize: 8, transport: 'tcp_host_staged' }, async (rank) => {
      let wrong = 0;
      const data = Int32Array.of(rank.rank, 1);
      for (let index = 0; index < collectives; index++) {
        const sum = index % 2 === 0 ? await rank.allReduce(data) : await rank.allGather(data);
        if (sum[1] !== (index % 2 === 0 ? 8 : 1)) wrong += 1;
      }
      return wrong;
    });
    const seconds = (performance.now() - started) / 1000;
    for (const outcome of result.ranks) expect(outcome).toMatchObject({ status: 'returned', value: 0 });
    expect(result.traffic.coordinated).toBe(collectives);
    // A generous bound for a noisy shared machine; it takes about a second or two on a quiet one.
    expect(seconds).toBeLessThan(30);
  });
});
