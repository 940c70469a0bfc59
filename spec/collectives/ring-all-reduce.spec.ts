/** The ring all-reduce over the direct peer mesh (tcp_peer, large tensors). */
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { ringAllReduce, type RingLinks } from '../../lib/collectives/ring-all-reduce.js';
import type { RankSession } from '../../lib/rank/rank-session.js';
import { RING_MIN_BYTES } from '../../lib/rank/rank-session.js';
import { startCoordinator, type TestJob } from '../helpers/job.js';

/** In-memory links: a mailbox per (source, destination, rail, tag), FIFO. */
function fakeRing(worldSize: number, rails: number): RingLinks[] {
  const boxes = new Map<string, { messages: Uint8Array[]; waiting: ((bytes: Uint8Array) => void)[] }>();
  const box = (key: string) => boxes.get(key) ?? boxes.set(key, { messages: [], waiting: [] }).get(key)!;
  return Array.from({ length: worldSize }, (_, rank) => ({
    rank,
    worldSize,
    rails,
    async send(rail, destination, tag, bytes) {
      const target = box(`${rank}>${destination}/${rail}/${tag}`);
      const copy = bytes.slice();
      const waiter = target.waiting.shift();
      if (waiter) waiter(copy);
      else target.messages.push(copy);
    },
    receive(rail, source, tag, count) {
      const target = box(`${source}>${rank}/${rail}/${tag}`);
      return new Promise<Uint8Array>((resolve) => {
        const check = (bytes: Uint8Array) => {
          expect(bytes.length / 4).toBe(count);
          resolve(bytes);
        };
        const message = target.messages.shift();
        if (message) check(message);
        else target.waiting.push(check);
      });
    },
  }));
}

describe('ringAllReduce (in-memory links)', () => {
  it('sums exactly for any world size, element count and chunk size; every rank gets the same bytes', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 6 }),
        fc.integer({ min: 1, max: 3 }),
        fc.integer({ min: 0, max: 300 }),
        fc.integer({ min: 4, max: 64 }),
        fc.integer(),
        async (worldSize, rails, count, chunkBytes, seed) => {
          const inputs = Array.from({ length: worldSize }, (_, rank) => Int32Array.from({ length: count }, (_, index) => (seed ^ (rank * 7919 + index * 31)) | 0));
          const links = fakeRing(worldSize, rails);
          const results = await Promise.all(
            links.map((link, rank) =>
              ringAllReduce(link, { dtype: 'i32', op: 'sum', data: new Uint8Array(inputs[rank]!.buffer), sequence: 5n, chunkBytes }),
            ),
          );
          const expected = Int32Array.from({ length: count }, (_, index) => inputs.reduce((sum, input) => (sum + input[index]!) | 0, 0));
          for (const result of results) expect(Array.from(new Int32Array(result.buffer, result.byteOffset, count))).toEqual(Array.from(expected));
          for (const input of inputs) expect(input.length).toBe(count);
        },
      ),
      { numRuns: 60 },
    );
  });

  it('avg divides the owned segment once: integers truncate toward zero like the staged path', async () => {
    const links = fakeRing(3, 1);
    const inputs = [Int32Array.of(-7, 1, 2, 9), Int32Array.of(0, 1, 2, 0), Int32Array.of(0, 0, 1, 0)];
    const results = await Promise.all(links.map((link, rank) => ringAllReduce(link, { dtype: 'i32', op: 'avg', data: new Uint8Array(inputs[rank]!.buffer), sequence: 0n, chunkBytes: 4 })));
    for (const result of results) expect(Array.from(new Int32Array(result.buffer))).toEqual([-2, 0, 1, 3]);
  });
});

describe('allReduce on tcp_peer above RING_MIN_BYTES', () => {
  const jobs: TestJob[] = [];
  afterEach(async () => {
    await Promise.all(jobs.splice(0).map((job) => job.dispose()));
  });
  async function peerSessions(worldSize: number, rails: number): Promise<{ job: TestJob; sessions: RankSession[] }> {
    const job = await startCoordinator(worldSize, { transport: 'tcp_peer', rails, timeoutMs: 20_000 });
    jobs.push(job);
    return { job, sessions: await Promise.all(Array.from({ length: worldSize }, (_, rank) => job.openRank(rank))) };
  }

  for (const [worldSize, rails] of [
    [2, 1],
    [3, 2],
    [5, 1],
  ] as const) {
    it(`world ${worldSize}, ${rails} rail(s): exact integer sums, identical float results, then a clean end`, async () => {
      const { job, sessions } = await peerSessions(worldSize, rails);
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
      await Promise.all(sessions.map((session) => session.close()));
      await expect(job.coordinator.done).resolves.toBeUndefined();
    });
  }

  it('bf16 and f64 keep their form; an aborting rank ends a pending ring all-reduce on every rank', async () => {
    const { job, sessions } = await peerSessions(3, 1);
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
});
