/**
 * The default call's fresh results over many calls (docs/architecture.md "Fresh results";
 * native/result_pool.h): a loop of `allReduce(x, 'sum')` on both of tcp_peer's planes leaks
 * nothing (external memory comes back once the results are collected), keeps the pool within its
 * bound, and a world session's close gives the pool's mappings back and leaves no thread of it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { dataPlaneEngine, loadAddon } from '../../lib/kernels/addon.js';
import { resultFillerRunning, settleExternalMemory } from '../helpers/collector.js';
import { startCoordinator, type TestJob } from '../helpers/job.js';

const native = dataPlaneEngine() !== null;
if (!native) console.warn('spec/session/fresh-result-pool.spec.ts: skipped: the native addon is not built here (results are ordinary typed arrays)');

const MiB = 1 << 20;
const jobs: TestJob[] = [];
afterEach(async () => {
  await Promise.all(jobs.splice(0).map((job) => job.dispose()));
});

describe.skipIf(!native)('fresh results over many default calls', () => {
  for (const dataPlane of ['native', 'js'] as const) {
    it(`tcp_peer, the ${dataPlane} plane, 2 ranks, 300 calls of 1 MiB: their memory leaves external memory once collected, the pool within its bound, released at close with no thread left`, async () => {
      const job = await startCoordinator(2, { timeoutMs: 20_000, transport: 'tcp_peer' });
      jobs.push(job);
      const sessions = await Promise.all([0, 1].map((rank) => job.openRank(rank, { dataPlane })));
      const tensors = sessions.map((session) => new Float32Array(MiB / 4).fill(session.rank + 1));
      const pool = loadAddon();
      let most = 0;
      const calls = async (count: number) => {
        for (let call = 0; call < count; call++) {
          const results = await Promise.all(sessions.map((session, rank) => session.allReduce(tensors[rank]!, 'sum')));
          // Every result exact (a result may start on a recycled mapping), then dropped.
          for (const result of results) expect(result[0] === 3 && result[result.length - 1] === 3).toBe(true);
          most = Math.max(most, pool.resultPoolBytes());
        }
      };
      // The first calls allocate what the sessions keep (staging, links' buffers): counted from after them.
      await calls(50);
      const before = await settleExternalMemory();
      await calls(300);
      expect(most).toBeLessThanOrEqual(256 * MiB);
      // Every result's bytes leave external memory once collected: a leak of them would be 600 MiB
      // (300 calls, 2 ranks); what the planes keep for themselves (receive buffers) varies by a few.
      expect((await settleExternalMemory()) - before).toBeLessThan(32 * MiB);
      expect(pool.resultPoolBytes()).toBeGreaterThan(0);
      // A world session's close gives back what the pool keeps, at once (results still referenced
      // somewhere, freed later, come back to it after).
      const closing = sessions.map((session) => session.close());
      expect(pool.resultPoolBytes()).toBe(0);
      await Promise.all(closing);
      const deadline = Date.now() + 5_000;
      while (resultFillerRunning() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
      expect(resultFillerRunning()).toBe(false);
    });
  }
});
