/**
 * Communicators on the native data plane (lib/communicator/communicator-plane.ts; docs/architecture.md
 * "Communicators"): where the world runs the native plane, a communicator from `split` or `group`
 * opens data links and an engine of its own between its members, so its collectives run natively,
 * beside the world's and every other communicator's, in its own order: calls on two communicators
 * issued without awaiting, in different orders on different ranks, all complete with exact results.
 * Its links open on demand, as the world's: a pair no schedule of it names is never dialled, and a
 * dial that fails names the member and its endpoint on every rank of the job.
 * Ranks in this process; spec/communicator/split-processes.spec.ts runs communicators as processes.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { RankLostError } from '../../lib/errors.js';
import { dataPlaneEngine } from '../../lib/kernels/addon.js';
import type { RankSession } from '../../lib/session/rank-session.js';
import { rejection, sleep, startCoordinator, type TestJob } from '../helpers/job.js';

const native = dataPlaneEngine() !== null;
if (!native) console.warn('spec/communicator/communicator-plane.spec.ts: skipped: the native addon is not built here');

const jobs: TestJob[] = [];
afterEach(async () => {
  await Promise.all(jobs.splice(0).map((job) => job.dispose()));
});

async function world(worldSize: number, dataPlane: 'native' | 'js'): Promise<RankSession[]> {
  const job = await startCoordinator(worldSize, { timeoutMs: 10_000, transport: 'tcp_peer' });
  jobs.push(job);
  return Promise.all(Array.from({ length: worldSize }, (_, rank) => job.openRank(rank, { dataPlane })));
}

const MiB = 1 << 20;

describe.skipIf(!native)('communicators on the native data plane', () => {
  it('4 ranks split into pairs: each pair runs natively; pair and world calls issued together, in opposite orders on odd and even ranks, all exact; closing the pairs closes every socket they opened', async () => {
    const ranks = await world(4, 'native');
    const sockets = () => process.getActiveResourcesInfo().filter((kind) => kind === 'TCPSocketWrap' || kind === 'TCPServerWrap').length;
    // The world's links open on demand: its first all-reduce of the shape the test ends with opens
    // its data links, a message to each partner the links the split trades endpoints on.
    await Promise.all(ranks.map((session) => session.allReduce(Int32Array.of(1))));
    await Promise.all(ranks.map((session) => Promise.all([session.send(session.rank ^ 1, 1, Uint8Array.of(1)), session.receive(session.rank ^ 1, 1, { dtype: 'u8', count: 1 })])));
    const before = sockets();
    await Promise.all(
      ranks.map(async (session) => {
        const r = session.rank;
        const pair = (await session.split({ color: r >> 1 }))!;
        expect(pair.worldSize).toBe(2);
        expect(pair.plan('allReduce', MiB).plane).toBe('native');
        expect(pair.plan('allReduce', 8).plane).toBe('native');
        const big = Float32Array.from({ length: MiB / 4 }, (_, at) => r * 10 + (at % 7));
        const small = Int32Array.of(r + 1);
        // No await between them: the pair's engine and the world's move at once.
        const pairCall = () => pair.allReduce(big, 'sum');
        const worldCall = () => session.allReduce(small, 'sum');
        const [pairSum, worldSum] = r % 2 === 0 ? await Promise.all([pairCall(), worldCall()]) : (await Promise.all([worldCall(), pairCall()])).reverse();
        const partner = r ^ 1;
        expect((pairSum as Float32Array)[0]).toBe(r * 10 + partner * 10);
        expect((pairSum as Float32Array)[MiB / 4 - 1]).toBe(r * 10 + partner * 10 + 2 * ((MiB / 4 - 1) % 7));
        expect(Array.from(worldSum as Int32Array)).toEqual([10]);
        // Every collective of the pair, small and large, on its plane.
        expect(Array.from(await pair.broadcast(Int32Array.of(r), 1))).toEqual([(r >> 1) * 2 + 1]);
        expect(Array.from(await pair.allGather(Int32Array.of(r)))).toEqual([(r >> 1) * 2, (r >> 1) * 2 + 1]);
        await pair.barrier();
        await pair.close();
        // The world goes on after the pair closed its links.
        expect(Array.from(await session.allReduce(Int32Array.of(1)))).toEqual([4]);
      }),
    );
    // (Sockets end on the next turns of the loop.)
    for (let turn = 0; turn < 50 && sockets() > before; turn++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(sockets()).toBeLessThanOrEqual(before);
  });

  it("a communicator's links open on demand: a ring all-reduce on 4 members dials the ring's 4 pairs, never the 2 across it", async () => {
    const job = await startCoordinator(4, { timeoutMs: 10_000, transport: 'tcp_peer' });
    jobs.push(job);
    const ranks = await Promise.all(Array.from({ length: 4 }, (_, rank) => job.openRank(rank, { dataPlane: 'native', algorithm: 'ring' })));
    const connections = () => process.getActiveResourcesInfo().filter((kind) => kind === 'TCPSocketWrap').length;
    // The count that stays: links of the set-up (the endpoint gather's) close a few turns later.
    const steady = async () => {
      let count = connections();
      for (let sample = 0; sample < 10; sample++) count = Math.min(count, await sleep(50).then(connections));
      return count;
    };
    // Every pair of the world trades a message first, and the world all-reduces (the split's
    // agreement takes the ring's data links), so the job's links the split uses are all open
    // before the count: what it adds is the communicator's plane's alone.
    await Promise.all(ranks.map((session) => Promise.all([1, 2, 3].flatMap((step) => [session.send((session.rank + step) % 4, 2, Uint8Array.of(1)), session.receive((session.rank + 4 - step) % 4, 2, { dtype: 'u8', count: 1 })]))));
    await Promise.all(ranks.map((session) => session.allReduce(Int32Array.of(1))));
    const before = await steady();
    const sums = await Promise.all(
      ranks.map(async (session) => {
        const all = (await session.split({ color: 0 }))!;
        expect(all.plan('allReduce', 8)).toMatchObject({ algorithm: 'ring', plane: 'native' });
        return Array.from(await all.allReduce(Int32Array.of(session.rank, 1)));
      }),
    );
    expect(sums).toEqual(Array.from({ length: 4 }, () => [6, 4]));
    // The ring's pairs (0-1, 1-2, 2-3, 3-0), a data link each way: 4 pairs x 2 links x 2 ends in
    // this process (a plane that opened every pair at its creation counted 24 here).
    expect((await steady()) - before).toBe(16);
  });

  it('a dial of its plane that fails names the member and its endpoint, and the abort reaches every rank of the job', async () => {
    const ranks = await world(3, 'native');
    const all = await Promise.all(ranks.map(async (session) => (await session.split({ color: 0 }))!));
    // Rank 2 closes its communicator, and its listeners with it, before anything dialled them.
    await all[2]!.close();
    const failures = await Promise.all([rejection(all[0]!.allReduce(Int32Array.of(1))), rejection(all[1]!.allReduce(Int32Array.of(1))), rejection(ranks[2]!.barrier())]);
    for (const error of failures) expect(error.message).toMatch(/cannot reach direct peer rank 2 data link at 127\.0\.0\.1:\d+/);
    // The world of every rank ended with it (a communicator's abort is the job's).
    for (const session of ranks) await expect(session.allReduce(Int32Array.of(1))).rejects.toThrow(/cannot reach direct peer rank 2/);
  });

  it('group([2, 0]) runs natively in the order listed; a communicator of one rank, and any of a JS-plane world, not', async () => {
    const ranks = await world(3, 'native');
    await Promise.all(
      ranks.map(async (session) => {
        if (session.rank === 1) {
          const alone = (await session.split({ color: 1 }))!;
          expect(alone.plan('allReduce', MiB).plane).not.toBe('native');
          return;
        }
        await session.split({ color: 0 }).then((two) => two!.close());
        const group = await session.group([2, 0]);
        expect(group.jobRanks).toEqual([2, 0]);
        expect(group.plan('allReduce', MiB).plane).toBe('native');
        expect(Array.from(await group.allGather(Int32Array.of(session.rank)))).toEqual([2, 0]);
      }),
    );
    const js = await world(2, 'js');
    await Promise.all(
      js.map(async (session) => {
        const both = (await session.split({ color: 0 }))!;
        expect(both.plan('allReduce', MiB).plane).toBe('js');
        expect(Array.from(await both.allReduce(Int32Array.of(1)))).toEqual([2]);
      }),
    );
  });

  it('a fault-tolerant job: a rank lost mid-collective on its pair fails that pair (named), never the job; the other pair goes on natively', async () => {
    const job = await startCoordinator(4, { transport: 'tcp_peer', faultTolerant: true, timeoutMs: 10_000 });
    jobs.push(job);
    const ranks = await Promise.all(Array.from({ length: 4 }, (_, rank) => job.openRank(rank, { dataPlane: 'native', faultTolerant: true })));
    const pairs = await Promise.all(ranks.map(async (session) => (await session.split({ color: session.rank >> 1 }))!));
    expect(pairs.map((pair) => pair.plan('allReduce', MiB).plane)).toEqual(['native', 'native', 'native', 'native']);
    // Rank 2 waits in a 1 MiB all-reduce on its pair's engine; rank 3 leaves instead of joining it.
    const pending = rejection(pairs[2]!.allReduce(new Float32Array(MiB / 4).fill(1)));
    await sleep(50);
    await ranks[3]!.close();
    const error = await pending;
    expect(error).toBeInstanceOf(RankLostError);
    expect((error as RankLostError).rank).toBe(3);
    // Pair 0 has no lost rank: it goes on, on its own plane.
    const sums = await Promise.all([pairs[0]!, pairs[1]!].map((pair) => pair.allReduce(Float32Array.of(pair.rank + 1, 5))));
    expect(sums.map((sum) => Array.from(sum))).toEqual([
      [3, 10],
      [3, 10],
    ]);
  });
});
