/**
 * Results written into memory the caller already has (`allReduce` and `broadcast` in place or into
 * an `output`, `allGather(..., { output })`, `reduceScatter(..., { output })`, `allToAll(..., { output })`, as torch's in-place and
 * `*_into_tensor` calls): the returned tensor is the caller's own, the values are exact, on every
 * algorithm (small: the trees or the staged path; large: the ring and the chain,
 * written there), and a wrong output is refused before anything is sent.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_RING_THRESHOLD_BYTES } from '../../lib/collectives/tuning.js';
import type { RankSession } from '../../lib/session/rank-session.js';
import { rejection, startCoordinator, type TestJob } from '../helpers/job.js';

const jobs: TestJob[] = [];
afterEach(async () => {
  await Promise.all(jobs.splice(0).map((job) => job.dispose()));
});

async function sessions(worldSize: number, transport: 'tcp_peer' | 'tcp_host_staged'): Promise<RankSession[]> {
  const job = await startCoordinator(worldSize, { timeoutMs: 10_000, ...(transport === 'tcp_peer' ? { transport } : {}) });
  jobs.push(job);
  return Promise.all(Array.from({ length: worldSize }, (_, rank) => job.openRank(rank)));
}

const large = DEFAULT_RING_THRESHOLD_BYTES / 4 + 7; // f32 elements: the ring family (odd count)

describe('results into the caller’s memory', () => {
  it('NCCL’s in-place forms: allGather’s input as this rank’s slot of the output, reduceScatter’s output as this rank’s slot of the input', async () => {
    const ranks = await sessions(2, 'tcp_peer');
    await Promise.all(
      ranks.map(async (session) => {
        const r = session.rank;
        const whole = Float32Array.of(-1, -1, -1, -1);
        const slot = whole.subarray(2 * r, 2 * r + 2);
        slot.set([10 * r, 10 * r + 1]);
        expect(await session.allGather(slot, { output: whole })).toBe(whole);
        expect(Array.from(whole)).toEqual([0, 1, 10, 11]);

        const input = Int32Array.of(1, 2, 3, 4).map((value) => value * (r + 1));
        const shard = input.subarray(2 * r, 2 * r + 2);
        expect(await session.reduceScatter(input, 'sum', { output: shard })).toBe(shard);
        expect(Array.from(shard)).toEqual(r === 0 ? [3, 6] : [9, 12]);
      }),
    );
  });

  for (const [transport, worldSize, count] of [
    ['tcp_peer', 3, 5],
    ['tcp_peer', 3, large],
    ['tcp_host_staged', 2, 5],
  ] as const) {
    it(`${transport}, ${worldSize} ranks, ${count} elements: broadcast in place, allReduce, broadcast, allGather, reduceScatter and allToAll into an output`, async () => {
      const ranks = await sessions(worldSize, transport);
      await Promise.all(
        ranks.map(async (session) => {
          const r = session.rank;
          const data = Float32Array.from({ length: count }, (_, index) => (r === 1 ? index : -1));
          const broadcast = await session.broadcast(data, 1, { inPlace: true });
          expect(broadcast).toBe(data);
          expect(data[count - 1]).toBe(count - 1);

          // Into an output, the input stays as it is.
          const input = Float32Array.from({ length: count }, (_, index) => index + r);
          const sum = new Float32Array(count);
          expect(await session.allReduce(input, 'sum', { output: sum })).toBe(sum);
          const ranksSum = (worldSize * (worldSize - 1)) / 2;
          expect([sum[0], sum[count - 1]]).toEqual([ranksSum, worldSize * (count - 1) + ranksSum]);
          expect([input[0], input[count - 1]]).toEqual([r, count - 1 + r]);
          const copy = new Float32Array(count);
          const root = worldSize - 1;
          expect(await session.broadcast(input, root, { output: copy })).toBe(copy);
          expect([copy[0], copy[count - 1], input[0]]).toEqual([root, count - 1 + root, r]);

          const whole = new Float32Array(count * worldSize);
          const gathered = await session.allGather(Float32Array.from({ length: count }, () => r), { output: whole });
          expect(gathered).toBe(whole);
          expect([whole[0], whole[count], whole[count * worldSize - 1]]).toEqual([0, 1, worldSize - 1]);

          const shard = new Int32Array(count);
          const scattered = await session.reduceScatter(Int32Array.from({ length: count * worldSize }, (_, index) => index), 'sum', { output: shard });
          expect(scattered).toBe(shard);
          expect([shard[0], shard[count - 1]]).toEqual([worldSize * r * count, worldSize * (r * count + count - 1)]);

          // allToAll: rank r's shard s holds 100 * r + s, so its result's shard s is 100 * s + r.
          const outgoing = Int32Array.from({ length: count * worldSize }, (_, index) => 100 * r + Math.floor(index / count));
          const received = new Int32Array(count * worldSize);
          expect(await session.allToAll(outgoing, { output: received })).toBe(received);
          expect(Array.from({ length: worldSize }, (_, s) => received[s * count + count - 1])).toEqual(Array.from({ length: worldSize }, (_, s) => 100 * s + r));
        }),
      );
    });
  }

  it('an output of the wrong length or type is refused, naming what the result is, and nothing is sent', async () => {
    const [zero, one] = (await sessions(2, 'tcp_peer')) as [RankSession, RankSession];
    expect((await rejection(zero.allGather(Float32Array.of(1, 2), { output: new Float32Array(3) }))).message).toBe(
      'allGather output is f32 x 3, its result is f32 x 4',
    );
    expect((await rejection(zero.reduceScatter(Float32Array.of(1, 2), 'sum', { output: new Int32Array(1) as never }))).message).toBe(
      'reduceScatter output is i32 x 1, its result is f32 x 1',
    );
    expect((await rejection(zero.allReduce(Float32Array.of(1), 'sum', { inPlace: true, output: new Float32Array(1) }))).message).toBe(
      'allReduce takes inPlace or an output, not both',
    );
    const shared = new Float32Array(3);
    expect((await rejection(zero.broadcast(shared.subarray(0, 2), 0, { output: shared.subarray(1, 3) }))).message).toBe(
      'broadcast output overlaps its input (to write the result over the input, use { inPlace: true })',
    );
    expect((await rejection(zero.allReduce(shared.subarray(0, 2), 'sum', { output: shared.subarray(1, 3) }))).message).toBe(
      'allReduce output overlaps its input (to write the result over the input, use { inPlace: true })',
    );
    const wide = new Float32Array(4);
    expect((await rejection(zero.reduceScatter(wide, 'sum', { output: wide.subarray(1, 3) }))).message).toBe('reduceScatter output overlaps its input');
    // Nothing was sent: the job goes on with the next collective.
    const [a, b] = await Promise.all([zero.allReduce(Float32Array.of(1)), one.allReduce(Float32Array.of(2))]);
    expect([a[0], b[0]]).toEqual([3, 3]);
  });
});
