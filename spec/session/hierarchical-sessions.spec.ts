/**
 * Hierarchical collectives in real sessions on loopback (GX1_TOPOLOGY_GROUPS with
 * GX1_COLLECTIVE_ALGORITHM=hierarchical): both transports, both planes, tensors of several
 * pieces; the staged path's bits; `events$` names the algorithm; ranks configured with different
 * groups are named at the agreement, not hung. Separate processes: spec/process/hierarchical-processes.spec.ts.
 */
import { filter, firstValueFrom, map, toArray } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import type { SessionEvent } from '../../lib/session/events.js';
import type { RankSession } from '../../lib/session/rank-session.js';
import { randomBytes, seededRandom } from '../../lib/testing/index.js';
import { openRejections, rejection, startCoordinator, type JobOptions, type RankOverrides, type TestJob } from '../helpers/job.js';

const jobs: TestJob[] = [];
afterEach(async () => {
  await Promise.all(jobs.splice(0).map((job) => job.dispose()));
});

async function sessions(worldSize: number, options: JobOptions, overrides: (rank: number) => RankOverrides): Promise<RankSession[]> {
  const job = await startCoordinator(worldSize, { timeoutMs: 20_000, ...options });
  jobs.push(job);
  return Promise.all(Array.from({ length: worldSize }, (_, rank) => job.openRank(rank, overrides(rank))));
}

/** Rank-specific random floats: sums in another order would differ in their last bits. */
const floats = (rank: number, length: number, salt: number) => new Float32Array(randomBytes('f32', length, seededRandom(rank * 1009 + salt)).buffer);

/** Every rank's all-reduce, all-gather and reduce-scatter results, and the algorithms rank 0 ran. */
async function run(ranks: RankSession[], elements: number): Promise<{ results: Float32Array[][]; algorithms: string[] }> {
  const worldSize = ranks.length;
  const seen = firstValueFrom(
    ranks[0]!.events$.pipe(
      filter((event): event is Extract<SessionEvent, { type: 'collective-finished' }> => event.type === 'collective-finished'),
      map((event) => `${event.collective}:${event.algorithm} on ${event.plane}`),
      toArray(),
    ),
  );
  const results = await Promise.all(
    ranks.map(async (session) => [
      await session.allReduce(floats(session.rank, elements, 1)),
      await session.allReduce(floats(session.rank, elements, 2), 'avg', { inPlace: true }),
      await session.allGather(floats(session.rank, elements, 3)),
      await session.reduceScatter(floats(session.rank, elements * worldSize, 4), 'sum'),
    ]),
  );
  await Promise.all(ranks.map((session) => session.close()));
  return { results, algorithms: await seen };
}

describe('hierarchical collectives in sessions', () => {
  // 300k floats: pieces of 1 MiB on the JS plane, streaming on the native one.
  for (const [transport, dataPlane, worldSize, groups] of [
    ['tcp_peer', 'native', 4, '0,1;2,3'],
    ['tcp_peer', 'js', 5, '0,2,4;3,1'],
    ['tcp_host_staged', 'js', 4, '2,3;0,1'],
  ] as const) {
    it(`${transport}, ${dataPlane} plane, ${worldSize} ranks, groups ${groups}: the staged path's bits`, async () => {
      const elements = 300_000 + worldSize;
      const hierarchical = await run(await sessions(worldSize, { transport }, () => ({ dataPlane, algorithm: 'hierarchical', topologyGroups: groups })), elements);
      const staged = await run(await sessions(worldSize, { transport }, () => ({ dataPlane, algorithm: 'direct' })), elements);
      const plane = transport === 'tcp_peer' ? dataPlane : 'js';
      expect(hierarchical.algorithms).toEqual(['allReduce', 'allReduce', 'allGather', 'reduceScatter'].map((collective) => `${collective}:hierarchical on ${plane}`));
      hierarchical.results.forEach((perRank, rank) =>
        perRank.forEach((result, call) => expect(Buffer.from(result.buffer, result.byteOffset, result.byteLength).equals(Buffer.from(staged.results[rank]![call]!.buffer)), `rank ${rank} call ${call}`).toBe(true)),
      );
    });
  }

  it('ranks configured with different groups are told apart at open, every rank naming both (docs/protocol.md 8.3, step 3)', async () => {
    const job = await startCoordinator(4, { transport: 'tcp_peer', timeoutMs: 10_000 });
    jobs.push(job);
    const errors = await openRejections(job, (rank) => ({ dataPlane: 'js', algorithm: 'hierarchical', topologyGroups: rank === 3 ? '0,1,2;3' : '0,1;2,3' }));
    for (const error of errors) expect(error).toMatchObject({ code: 'SETTINGS_DIFFER', message: 'GX1_TOPOLOGY_GROUPS differs: rank 2 has 0,1;2,3, rank 3 has 0,1,2;3; every rank must choose collectives alike' });
  });

  /** Two hosts of two ranks: 20 GB/s inside a host, 119 MB/s (1 Gbit) between them. */
  const twoHosts = '0-1:20000:5000,2-3:20000:5000,0-2:119:60000,0-3:119:60000,1-2:119:60000,1-3:119:60000';

  it('auto with GX1_TOPOLOGY_GROUPS=auto over declared links: finds the hosts, and plan() names what runs at each size', async () => {
    const ranks = await sessions(4, { transport: 'tcp_peer' }, () => ({ dataPlane: 'js', topologyLinks: twoHosts, topologyGroups: 'auto' }));
    for (const session of ranks) expect(session.topologyGroups).toEqual([[0, 1], [2, 3]]);
    const large = ranks[0]!.plan('allReduce', 1 << 20);
    expect(large).toMatchObject({ collective: 'allReduce', bytes: 1 << 20, algorithm: 'hierarchical', family: 'hierarchical', plane: 'js', source: 'model', ringChannels: 1 });
    expect(large.hierarchicalEstimatedTimeNs).toBeLessThan(large.peerEstimatedTimeNs!);
    // The reference's figures beside; what runs is the cheapest candidate by the choice model.
    const hierarchical = large.candidates.find((candidate) => candidate.algorithm === 'hierarchical')!;
    expect(large.estimatedTimeNs).toBe(hierarchical.estimatedTimeNs);
    for (const { estimatedTimeNs } of large.candidates) expect(estimatedTimeNs).toBeGreaterThanOrEqual(hierarchical.estimatedTimeNs!);
    expect(ranks[0]!.plan('allReduce', 8)).toMatchObject({ algorithm: 'recursive-doubling', plane: 'js', estimatedTimeNs: expect.any(Number) });
    // From root 0 the chain crosses between the hosts once, as the binomial tree does; the chain's
    // agreement headers go along its own line, where the tree's leaves add one each to their
    // successors (docs/protocol.md 9.6.3).
    expect(ranks[0]!.plan('broadcast', 1 << 20)).toMatchObject({ algorithm: 'chain', directEstimatedTimeNs: null });
    expect(() => ranks[0]!.plan('allreduce' as never, 8)).toThrow('plan: unknown collective "allreduce"; expected one of barrier allReduce');
    const seen = firstValueFrom(
      ranks[0]!.events$.pipe(
        filter((event): event is Extract<SessionEvent, { type: 'collective-finished' }> => event.type === 'collective-finished'),
        map((event) => `${event.collective}:${event.algorithm}`),
        toArray(),
      ),
    );
    await Promise.all(ranks.map(async (session) => {
      await session.allReduce(new Float32Array(2));
      await session.allReduce(new Float32Array((1 << 20) / 4));
      await session.close();
    }));
    expect(await seen).toEqual([`allReduce:${ranks[0]!.plan('allReduce', 8).algorithm}`, `allReduce:${large.algorithm}`]);
  });

  it('policy hierarchical: plan() says so at every size of the three collectives', async () => {
    const ranks = await sessions(4, { transport: 'tcp_peer' }, () => ({ dataPlane: 'js', algorithm: 'hierarchical', topologyGroups: [[0, 1], [2, 3]] }));
    for (const collective of ['allReduce', 'allGather', 'reduceScatter'] as const) {
      for (const bytes of [8, 1 << 20]) expect(ranks[0]!.plan(collective, bytes), `${collective} ${bytes}`).toMatchObject({ algorithm: 'hierarchical', source: 'policy' });
    }
    // A collective without a hierarchical row takes the cheapest by the model, as under auto.
    expect(ranks[0]!.plan('broadcast', 8)).toMatchObject({ algorithm: 'binomial', source: 'policy' });
  });

  it('GX1_TOPOLOGY_GROUPS=auto without links: the hosts the ranks advertise (tcp_peer); none to tell, refused at open with the reference text', async () => {
    // Ranks 2 and 3 advertise another loopback address: another "host".
    const apart = (rank: number): RankOverrides => (rank >= 2 ? { peerEndpoints: { listen: '127.0.0.2:0', advertise: '127.0.0.2' } } : {});
    const ranks = await sessions(4, { transport: 'tcp_peer' }, (rank) => ({ dataPlane: 'js', topologyGroups: 'auto', ...apart(rank) }));
    for (const session of ranks) expect(session.topologyGroups).toEqual([[0, 1], [2, 3]]);
    const job = await startCoordinator(2, { transport: 'tcp_host_staged', timeoutMs: 10_000 });
    jobs.push(job);
    const errors = await Promise.all([0, 1].map((rank) => rejection(job.openRank(rank, { topologyGroups: 'auto' }))));
    for (const error of errors) expect(error.message).toMatch(/^invalid collective hierarchy: automatic grouping found no distinct fast-link domains \(GX1_TOPOLOGY_GROUPS=auto groups ranks by the host/);
  });

  it('the native plane, groups unset: hosts of several ranks are the groups, so auto runs the hierarchical all-reduce and all-gather and the ring reduce-scatter, right; one rank per host or one host, no groups', async () => {
    const apart = (rank: number): RankOverrides => (rank >= 2 ? { peerEndpoints: { listen: '127.0.0.2:0', advertise: '127.0.0.2' } } : {});
    const ranks = await sessions(4, { transport: 'tcp_peer' }, (rank) => ({ dataPlane: 'native', ...apart(rank) }));
    for (const session of ranks) expect(session.topologyGroups).toEqual([[0, 1], [2, 3]]);
    // Groups that follow from the hosts are not tuning: an autotune profile fits with or without them.
    const fingerprints = ranks[0]!.autotuneFingerprints;
    expect(ranks[0]!.plan('allReduce', 8)).toMatchObject({ algorithm: 'all-pairs' });
    // At 256 KiB pairwise and the hierarchy measured level (1.1-1.2 ms against 1.2-1.7,
    // bench/README.md): the model prices the hierarchy's one crossing per host lower.
    expect(ranks[0]!.plan('allReduce', 256 << 10)).toMatchObject({ algorithm: 'hierarchical' });
    for (const collective of ['allReduce', 'allGather'] as const) expect(ranks[0]!.plan(collective, 1 << 20), collective).toMatchObject({ algorithm: 'hierarchical' });
    expect(ranks[0]!.plan('reduceScatter', 64 << 20)).toMatchObject({ algorithm: 'ring' });
    const { results, algorithms } = await run(ranks, 300_000);
    expect(algorithms).toEqual(['allReduce:hierarchical on native', 'allReduce:hierarchical on native', 'allGather:hierarchical on native', 'reduceScatter:ring on native']);
    // The hierarchy has the staged path's bits (it folds in rank order); the ring's reduce-scatter is checked elsewhere.
    const staged = await run(await sessions(4, { transport: 'tcp_host_staged' }, () => ({ algorithm: 'direct' })), 300_000);
    for (const [rank, result] of results.entries()) {
      for (const [call, value] of result.slice(0, 3).entries()) expect(Buffer.from(value.buffer).equals(Buffer.from(staged.results[rank]![call]!.buffer)), `rank ${rank} call ${call}`).toBe(true);
    }
    for (const layout of [(rank: number) => ({ peerEndpoints: { listen: `127.0.0.${rank + 1}:0`, advertise: `127.0.0.${rank + 1}` } }), () => ({})]) {
      const flat = await sessions(4, { transport: 'tcp_peer' }, (rank) => ({ dataPlane: 'native', ...layout(rank) }));
      expect(flat[0]!.topologyGroups).toBeNull();
      expect(flat[0]!.plan('allReduce', 64 << 20).algorithm).not.toBe('hierarchical');
      expect(flat[0]!.autotuneFingerprints).toEqual(fingerprints);
    }
  });
});
