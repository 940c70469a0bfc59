/**
 * The large all-reduces in real tcp_peer sessions: round the ring at 2 ranks (or asked for), pairwise
 * from 3 ranks on one host (the default here).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_RING_THRESHOLD_BYTES } from '../../lib/collectives/tuning.js';
import type { RankSession } from '../../lib/session/rank-session.js';
import { startCoordinator, type TestJob } from '../helpers/job.js';

const RING_MIN_BYTES = DEFAULT_RING_THRESHOLD_BYTES;

describe('allReduce on tcp_peer from the ring threshold (ring and pairwise)', () => {
  const jobs: TestJob[] = [];
  afterEach(async () => {
    await Promise.all(jobs.splice(0).map((job) => job.dispose()));
  });
  async function peerSessions(worldSize: number, rails: number, algorithm: 'auto' | 'ring' = 'auto'): Promise<{ job: TestJob; sessions: RankSession[] }> {
    const job = await startCoordinator(worldSize, { transport: 'tcp_peer', rails, timeoutMs: 20_000 });
    jobs.push(job);
    return { job, sessions: await Promise.all(Array.from({ length: worldSize }, (_, rank) => job.openRank(rank, { algorithm, dataPlane: 'js' }))) };
  }

  for (const [worldSize, rails, algorithm, runs] of [
    [2, 1, 'auto', 'ring'],
    [3, 2, 'auto', 'pairwise'],
    [5, 1, 'auto', 'pairwise'],
    [3, 2, 'ring', 'ring'],
    [5, 1, 'ring', 'ring'],
  ] as const) {
    it(`world ${worldSize}, ${rails} rail(s), ${algorithm} (${runs}): exact integer sums, identical float results, then a clean end`, async () => {
      const { job, sessions } = await peerSessions(worldSize, rails, algorithm);
      const ran: string[] = [];
      sessions[0]!.events$.subscribe((event) => event.type === 'collective-finished' && ran.push(event.algorithm));
      const count = RING_MIN_BYTES / 4 + 12_345;
      const ints = await Promise.all(sessions.map((session) => session.allReduce(Int32Array.from({ length: count }, (_, index) => index * (session.rank + 1)), 'sum')));
      const factor = (worldSize * (worldSize + 1)) / 2;
      for (const result of ints) {
        expect(result.length).toBe(count);
        for (const index of [0, 1, count >> 1, count - 1]) expect(result[index]).toBe((index * factor) | 0);
      }
      const floats = await Promise.all(sessions.map((session) => session.allReduce(Float32Array.from({ length: count }, (_, index) => Math.sin(index + session.rank)), 'avg')));
      for (const result of floats.slice(1)) expect(Buffer.from(result.buffer).equals(Buffer.from(floats[0]!.buffer))).toBe(true);
      for (const index of [0, 7, count - 1]) {
        const mean = Array.from({ length: worldSize }, (_, rank) => Math.sin(index + rank)).reduce((a, b) => a + b) / worldSize;
        expect(floats[0]![index]).toBeCloseTo(mean, 5);
      }
      // Collectives through the coordinator interleave with ring ones in order.
      const small = await Promise.all(sessions.map((session) => session.allReduce(Int32Array.of(session.rank), 'max')));
      for (const result of small) expect(Array.from(result)).toEqual([worldSize - 1]);
      // The small one takes recursive doubling (one message per step), unless the ring is asked for.
      expect(ran).toEqual([runs, runs, algorithm === 'ring' ? 'ring' : 'recursive-doubling']);
      await Promise.all(sessions.map((session) => session.close()));
      await expect(job.coordinator.done).resolves.toBeUndefined();
    });
  }

  for (const algorithm of ['auto', 'ring'] as const) {
    it(`${algorithm}: bf16 and f64 keep their form; an aborting rank ends a pending large all-reduce on every rank`, async () => {
      const { job, sessions } = await peerSessions(3, 1, algorithm);
      const count = RING_MIN_BYTES / 2;
      const bf16 = await Promise.all(sessions.map((session) => session.allReduce({ dtype: 'bf16', data: new Uint16Array(count).fill(0x3f80) }, 'sum')));
      for (const result of bf16) {
        expect(result.dtype).toBe('bf16');
        expect(result.data[count - 1]).toBe(0x4040); // 1 + 1 + 1 = 3 in bf16
      }
      const [zero, one] = sessions as [RankSession, RankSession];
      const pending = [zero, one].map((session) => session.allReduce(new Float64Array(count)).then(() => null, (error: Error & { code?: string }) => error));
      await sessions[2]!.abort('ring interrupted');
      for (const error of await Promise.all(pending)) {
        expect(error?.code).toBe('REMOTE_ABORT');
        expect(error?.message).toContain('ring interrupted');
      }
      await expect(job.coordinator.done).rejects.toThrow(/ring interrupted/);
    });
  }
});
