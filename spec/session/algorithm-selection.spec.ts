/**
 * The algorithm table in real sessions: which algorithm runs (seen on `session.events$`) by
 * transport, size and the seed's tuning surface (GX1_COLLECTIVE_ALGORITHM, GX1_RING_THRESHOLD_BYTES,
 * GX1_RING_ORDER, GX1_RING_CHANNELS, GX1_TOPOLOGY_LINKS), and the tuning's validation.
 */
import { filter, map, toArray } from 'rxjs';
import { firstValueFrom } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { candidateEstimates, selectAlgorithm, type Situation } from '../../lib/collectives/select.js';
import type { CollectiveName } from '../../lib/collectives/algorithm.js';
import { planCollective } from '../../lib/collectives/plan.js';
import { parseAlgorithmPolicy } from '../../lib/topology/ring-tuning.js';
import { DEFAULT_RING_THRESHOLD_BYTES, resolveTuning } from '../../lib/collectives/tuning.js';
import type { ConfigurationError } from '../../lib/errors.js';
import type { SessionEvent } from '../../lib/session/events.js';
import type { RankSession } from '../../lib/session/rank-session.js';
import { resolveSessionOptions } from '../../lib/session/session-options.js';
import { resolveProbeOptions } from '../../lib/topology/probe-options.js';
import { readSettings } from '../../lib/settings/read-settings.js';
import { probeVariables } from '../../lib/settings/setting-parts.js';
import { openRejections, rejection, startCoordinator, type JobOptions, type RankOverrides, type TestJob } from '../helpers/job.js';
import { refusal } from '../helpers/refusal.js';

/** The probe options of `env`'s `GX1_TOPOLOGY_PROBE_*` variables, as a rank's `probeTopology()` takes them. */
const probeOptionsOf = (env: Record<string, string>) => resolveProbeOptions(probeVariables(readSettings(env)));

const jobs: TestJob[] = [];
afterEach(async () => {
  await Promise.all(jobs.splice(0).map((job) => job.dispose()));
});

async function sessions(worldSize: number, options: JobOptions, overrides: (rank: number) => RankOverrides = () => ({})): Promise<RankSession[]> {
  const job = await startCoordinator(worldSize, { timeoutMs: 10_000, ...options });
  jobs.push(job);
  // The JS data plane: these tests are about its families (the native one has spec/session/native-data-plane.spec.ts).
  return Promise.all(Array.from({ length: worldSize }, (_, rank) => job.openRank(rank, { dataPlane: 'js', ...overrides(rank) })));
}

/** The algorithms rank 0 ran, in order, while `work` ran on every rank. */
async function algorithmsOf(ranks: RankSession[], work: (session: RankSession) => Promise<unknown>): Promise<string[]> {
  const seen = firstValueFrom(
    ranks[0]!.events$.pipe(
      filter((event): event is Extract<SessionEvent, { type: 'collective-finished' }> => event.type === 'collective-finished'),
      map((event) => `${event.collective}:${event.algorithm}`),
      toArray(),
    ),
  );
  await Promise.all(ranks.map(work));
  await Promise.all(ranks.map((session) => session.close()));
  return seen;
}

const big = DEFAULT_RING_THRESHOLD_BYTES / 4; // f32 elements at the threshold

describe('algorithm selection in sessions', () => {
  it('auto on tcp_peer at 3 ranks on one host: recursive doubling for 8 B; at 256 KiB the pairwise algorithms and the chain broadcast; results exact', async () => {
    const ranks = await sessions(3, { transport: 'tcp_peer' });
    const algorithms = await algorithmsOf(ranks, async (session) => {
      expect(Array.from(await session.allReduce(Int32Array.of(session.rank, 1)))).toEqual([3, 3]);
      const summed = await session.allReduce(new Int32Array(big).fill(session.rank + 1));
      expect(summed.every((value) => value === 6)).toBe(true);
      const sent = await session.broadcast(Float32Array.from({ length: big }, (_, index) => (session.rank === 1 ? index : -1)), 1);
      expect(sent[big - 1]).toBe(big - 1);
      const gathered = await session.allGather(new Int32Array(big).fill(session.rank));
      expect([gathered[0], gathered[big], gathered[3 * big - 1]]).toEqual([0, 1, 2]);
      const scattered = await session.reduceScatter(Int32Array.from({ length: 3 * big }, (_, index) => index), 'sum');
      // Element i of every input is i: rank r's shard of the sum starts at 3 * r * big.
      expect([scattered[0], scattered[big - 1]]).toEqual([3 * session.rank * big, 3 * (session.rank * big + big - 1)]);
    });
    expect(algorithms).toEqual(['allReduce:recursive-doubling', 'allReduce:pairwise', 'broadcast:chain', 'allGather:pairwise', 'reduceScatter:pairwise']);
  });

  it('a large all-reduce: pairwise from 3 ranks, also where a rank is on another host or the ring is tuned (the model weighs them: two steps against 2(W-1)); the ring at 2 ranks', async () => {
    const allReduces = (ranks: RankSession[]) =>
      algorithmsOf(ranks, async (session) => {
        const summed = await session.allReduce(new Float32Array(big + 1).fill(session.rank + 1));
        expect(summed.every((value) => value === (ranks.length * (ranks.length + 1)) / 2)).toBe(true);
      });
    // Rank 2 advertises another address: not every rank shares rank 0's host.
    const apart = await sessions(3, { transport: 'tcp_peer' }, (rank) => (rank === 2 ? { peerEndpoints: { listen: '127.0.0.2:0', advertise: '127.0.0.2' } } : {}));
    expect(await allReduces(apart)).toEqual(['allReduce:pairwise']);
    expect(await allReduces(await sessions(3, { transport: 'tcp_peer' }, () => ({ ringChannels: 2 })))).toEqual(['allReduce:pairwise']);
    expect(await allReduces(await sessions(3, { transport: 'tcp_peer' }, () => ({ ringOrder: '0,2,1' })))).toEqual(['allReduce:pairwise']);
    expect(await allReduces(await sessions(2, { transport: 'tcp_peer' }))).toEqual(['allReduce:ring']);
    expect(await allReduces(await sessions(4, { transport: 'tcp_peer' }))).toEqual(['allReduce:pairwise']);
  });

  for (const worldSize of [2, 4]) {
    it(`auto on tcp_peer at ${worldSize} ranks: small collectives run their schedules on the JS plane, the agreement on their links, no coordinator hop; results exact`, async () => {
      const ranks = await sessions(worldSize, { transport: 'tcp_peer' });
      const W = worldSize;
      const upTo = (n: number, f: (index: number) => number) => Array.from({ length: n }, (_, index) => f(index));
      const algorithms = await algorithmsOf(ranks, async (session) => {
        const r = session.rank;
        await session.barrier();
        expect(Array.from(await session.allReduce(Float64Array.of(r + 0.5, -1), 'sum'))).toEqual([(W * (W - 1)) / 2 + W / 2, -W]);
        expect(Array.from(await session.allGather(Int16Array.of(r)))).toEqual(upTo(W, (index) => index));
        expect(Array.from(await session.broadcast(Uint8Array.of(r, 9), 1))).toEqual([1, 9]);
        expect(await session.gather(Uint8Array.of(r), 0)).toEqual(r === 0 ? Uint8Array.from(upTo(W, (index) => index)) : null);
        expect(await session.reduce(Int32Array.of(r + 1), 'prod', 1)).toEqual(r === 1 ? Int32Array.of(upTo(W, (index) => index + 1).reduce((a, b) => a * b)) : null);
        expect(Array.from(await session.reduceScatter(Int32Array.from(upTo(2 * W, (index) => index + 1)), 'sum'))).toEqual([W * (2 * r + 1), W * (2 * r + 2)]);
        expect(Array.from(await session.allToAll(Uint8Array.from(upTo(W, (index) => 10 * r + index))))).toEqual(upTo(W, (source) => 10 * source + r));
        expect(Array.from(await session.scatter(r === 0 ? Uint8Array.from(upTo(W, (index) => 4 + index)) : null, 0, 1))).toEqual([4 + r]);
      });
      // The cheapest schedule by the cost model at a few bytes: at 2 ranks one message each way
      // where the rows allow it, at 4 the trees and pairwise rows.
      expect(algorithms).toEqual(
        worldSize === 2
          ? ['barrier:dissemination', 'allReduce:recursive-doubling', 'allGather:ring', 'broadcast:chain', 'gather:pairwise', 'reduce:pairwise', 'reduceScatter:ring', 'allToAll:pairwise', 'scatter:staged']
          : ['barrier:dissemination', 'allReduce:recursive-doubling', 'allGather:pairwise', 'broadcast:binomial', 'gather:pairwise', 'reduce:pairwise', 'reduceScatter:pairwise', 'allToAll:pairwise', 'scatter:staged'],
      );
    });
  }

  it('the JS plane\'s agreement (4 ranks) names a mismatch with both ranks and both descriptors, on every rank', async () => {
    const ranks = await sessions(4, { transport: 'tcp_peer' });
    const errors = await Promise.all(ranks.map((session) => rejection(session.rank === 2 ? session.barrier() : session.allReduce(Float32Array.of(1)))));
    // Rank 2 and whichever neighbour compared first: both descriptors, the lower rank first.
    for (const error of errors) {
      expect(error.message).toMatch(/collective sequence 0 mismatch: rank ([01] submitted \{AllReduce .*\}, rank 2 submitted \{Barrier .*\}|2 submitted \{Barrier .*\}, rank 3 submitted \{AllReduce .*\})$/);
      expect(error.message).toContain('{AllReduce F32 root ANY count 1 op sum layout "recursive-doubling"}');
      expect(error.message).toContain('{Barrier None root ANY count 0 op none layout "dissemination"}');
    }
  });

  it('the JS plane\'s agreement (2 ranks) names a mismatch with both ranks and both descriptors, on every rank', async () => {
    const ranks = await sessions(2, { transport: 'tcp_peer' });
    const [zero, one] = ranks as [RankSession, RankSession];
    const errors = await Promise.all([rejection(zero.allReduce(Float32Array.of(1))), rejection(one.broadcast(Float32Array.of(1), 0))]);
    for (const error of errors) {
      expect(error.message).toContain(
        'collective sequence 0 mismatch: rank 0 submitted {AllReduce F32 root ANY count 1 op sum layout "recursive-doubling"}, rank 1 submitted {Broadcast F32 root 0 count 1 op none layout "chain 0,1"}',
      );
    }
  });

  it('at 2 ranks the ring agrees on the mesh too: a tensor under the threshold against one over it is named', async () => {
    const ranks = await sessions(2, { transport: 'tcp_peer' });
    const [zero, one] = ranks as [RankSession, RankSession];
    const errors = await Promise.all([rejection(zero.allReduce(new Float32Array(8))), rejection(one.allReduce(new Float32Array(big)))]);
    for (const error of errors) {
      expect(error.message).toContain(`rank 0 submitted {AllReduce F32 root ANY count 8 op sum layout "recursive-doubling"}, rank 1 submitted {AllReduce F32 root ANY count ${big} op sum layout "ring 0,1 channels 1"}`);
    }
  });

  it('ringThresholdBytes (GX1_RING_THRESHOLD_BYTES) moves the tree policy\'s switch (recursive doubling below it, Rabenseifner from it); auto weighs every size', async () => {
    const ranks = await sessions(2, { transport: 'tcp_peer' }, () => ({ ringThresholdBytes: 64, algorithm: 'tree' }));
    const algorithms = await algorithmsOf(ranks, async (session) => {
      await session.allReduce(new Float32Array(15));
      await session.allReduce(new Float32Array(16));
    });
    expect(algorithms).toEqual(['allReduce:recursive-doubling', 'allReduce:rabenseifner']);
    const auto = await sessions(2, { transport: 'tcp_peer' }, () => ({ ringThresholdBytes: 64 }));
    expect(await algorithmsOf(auto, (session) => session.allReduce(new Float32Array(16)))).toEqual(['allReduce:recursive-doubling']);
  });

  it('direct keeps large tensors on the coordinator; auto on tcp_host_staged too', async () => {
    const peer = await sessions(2, { transport: 'tcp_peer' }, () => ({ algorithm: 'direct' }));
    expect(await algorithmsOf(peer, (session) => session.allReduce(new Float32Array(big)))).toEqual(['allReduce:staged']);
    const staged = await sessions(2, {});
    expect(await algorithmsOf(staged, (session) => session.broadcast(new Float32Array(big), 0))).toEqual(['broadcast:staged']);
  });

  it('ring forces the ring family on tcp_host_staged (pieces through the rails), other collectives stay direct', async () => {
    const ranks = await sessions(3, { rails: 2 }, () => ({ algorithm: 'ring', rails: 2 }));
    const algorithms = await algorithmsOf(ranks, async (session) => {
      expect(Array.from(await session.allReduce(Float64Array.of(session.rank, 2), 'max'))).toEqual([2, 2]);
      expect(Array.from(await session.broadcast(Uint8Array.of(session.rank, 7), 2))).toEqual([2, 7]);
      expect(Array.from(await session.allGather(Uint8Array.of(session.rank)))).toEqual([0, 1, 2]);
      expect(await session.gather(Uint8Array.of(session.rank), 0)).toEqual(session.rank === 0 ? Uint8Array.of(0, 1, 2) : null);
    });
    expect(algorithms).toEqual(['allReduce:ring', 'broadcast:chain', 'allGather:ring', 'gather:staged']);
  });

  it('ringOrder (GX1_RING_ORDER) is the ring every rank follows; ranks that disagree fail, each ring named', async () => {
    const ranks = await sessions(4, { transport: 'tcp_peer' }, () => ({ ringOrder: '0,2,1,3', ringChannels: 2 }));
    expect(ranks.map((session) => session.ringOrder)).toEqual(ranks.map(() => [0, 2, 1, 3]));
    const results = await Promise.all(ranks.map((session) => session.allReduce(new Int32Array(big + 3).fill(session.rank))));
    for (const result of results) expect(result.every((value) => value === 6)).toBe(true);
    await Promise.all(ranks.map((session) => session.close()));

    // Told apart at open, on every rank (docs/protocol.md 8.3, step 3), before a collective could run apart.
    const job = await startCoordinator(3, { timeoutMs: 10_000, transport: 'tcp_peer' });
    jobs.push(job);
    const errors = await openRejections(job, (rank) => ({ dataPlane: 'js', algorithm: 'ring', ringOrder: rank === 1 ? [0, 2, 1] : [0, 1, 2] }));
    for (const error of errors) {
      expect(error).toMatchObject({ code: 'SETTINGS_DIFFER', message: 'GX1_RING_ORDER differs: rank 0 has 0,1,2, rank 1 has 0,2,1; every rank must choose collectives alike' });
    }
  });

  it('topologyLinks (GX1_TOPOLOGY_LINKS) chooses the ring: the fast links win', async () => {
    // 0-2, 2-1, 1-3, 3-0 are fast; the others slow: the best ring is 0,2,1,3 (or its reverse).
    const links = '0-1:100:1000,0-2:9000:1000,0-3:9000:1000,1-2:9000:1000,1-3:9000:1000,2-3:100:1000';
    const ranks = await sessions(4, { transport: 'tcp_peer' }, () => ({ topologyLinks: links }));
    const order = ranks[0]!.ringOrder;
    expect([
      [0, 2, 1, 3],
      [0, 3, 1, 2],
    ]).toContainEqual(order);
    for (const session of ranks) expect(session.ringOrder).toEqual(order);
  });

  it('hierarchical without topology groups is refused at open with the reference message', async () => {
    const job = await startCoordinator(1, { timeoutMs: 2_000 });
    jobs.push(job);
    const error = await rejection(job.openRank(0, { algorithm: 'hierarchical' }));
    expect(error.code).toBe('INVALID_CONFIGURATION');
    expect(error.message).toContain('GX1_COLLECTIVE_ALGORITHM=hierarchical requires explicit or inferred topology groups');
  });
});

describe('selectAlgorithm (lib/collectives/select.ts)', () => {
  it('on the JS plane: recursive doubling for small tensors, pairwise (3 ranks and more) or the ring (2) for large ones, the chain for a large broadcast; policies and tcp_host_staged as before', () => {
    const tuning = resolveTuning({}, 4, {});
    const base = { transport: 'tcp_peer' as const, plane: 'js' as const, worldSize: 4, bytes: 1 << 20, tuning, ranksShareHost: true, groups: null, topology: null, ringOrder: [0, 1, 2, 3], profile: null };
    const name = (changes: Partial<Situation>) => selectAlgorithm('allReduce', { ...base, ...changes }).name;
    expect(name({})).toBe('pairwise');
    expect(name({ worldSize: 3, ringOrder: [0, 1, 2] })).toBe('pairwise');
    expect(name({ worldSize: 2, ringOrder: [0, 1] })).toBe('ring');
    expect(name({ bytes: 1024 })).toBe('recursive-doubling');
    // Before the model, across hosts, a ring order or channels set took the ring: the model weighs
    // the ring with them, and pairwise's two steps still cost less (each rank its own host here).
    expect(name({ ranksShareHost: false })).toBe('pairwise');
    expect(name({ tuning: { ...tuning, ringOrder: [0, 2, 1, 3] } })).toBe('pairwise');
    expect(name({ tuning: { ...tuning, ringChannels: 2 } })).toBe('pairwise');
    expect(name({ tuning: { ...tuning, algorithm: 'ring' } })).toBe('ring');
    expect(name({ tuning: { ...tuning, algorithm: 'direct' } })).toBe('staged');
    expect(name({ transport: 'tcp_host_staged', plane: 'coordinator' })).toBe('staged');
    // A 1 MiB broadcast: the chain (each rank sends the tensor once) before pairwise (the root sends it to every rank).
    expect(selectAlgorithm('broadcast', base).name).toBe('chain');
    expect(selectAlgorithm('broadcast', { ...base, ranksShareHost: false }).name).toBe('chain');
    expect(selectAlgorithm('allGather', base).name).toBe('pairwise');
    expect(selectAlgorithm('reduceScatter', base).name).toBe('pairwise');
    expect(selectAlgorithm('allGather', { ...base, ranksShareHost: false }).name).toBe('pairwise');
  });

  it('on the native plane: all-pairs for small all-reduces, pairwise for large ones, on one host or across; the chain for a broadcast of 64-256 KiB at 3 ranks or more, pairwise (read from the root) from 256 KiB; policies as before', () => {
    const tuning = resolveTuning({}, 4, {});
    const base = { transport: 'tcp_peer' as const, plane: 'native' as const, worldSize: 4, bytes: 8, tuning, ranksShareHost: true, groups: null, topology: null, ringOrder: [0, 1, 2, 3], profile: null };
    const choice = (collective: 'allReduce' | 'broadcast' | 'reduceScatter' | 'allGather' | 'reduce', changes: Partial<Situation> = {}) => {
      const row = selectAlgorithm(collective, { ...base, ...changes });
      return `${row.name} on ${row.plane}`;
    };
    const two = { worldSize: 2, ringOrder: [0, 1] };
    expect(choice('allReduce')).toBe('all-pairs on native');
    // all-pairs sends the whole tensor to every peer: at 4 ranks pairwise costs less from tens of KiB (the old bound: 64 KiB).
    expect(choice('allReduce', { bytes: 65536 })).toBe('pairwise on native');
    expect(choice('allReduce', { bytes: 64 << 20, ...two })).toBe('pairwise on native');
    // Across hosts, each rank its own host: pairwise at every size (the ring took over from 4 MiB
    // before; measured within 1-8 % of pairwise at 64 MiB, bench/README.md "Across hosts").
    expect(choice('allReduce', { bytes: 4 << 20, ranksShareHost: false })).toBe('pairwise on native');
    expect(choice('allGather', { bytes: 64 << 20, ranksShareHost: false })).toBe('pairwise on native');
    expect(choice('reduceScatter', { bytes: 64 << 20, ranksShareHost: false, ...two })).toBe('pairwise on native');
    expect(choice('allReduce', { bytes: 1 << 20, tuning: { ...tuning, ringOrder: [0, 2, 1, 3] } })).toBe('pairwise on native');
    expect(choice('reduceScatter', { bytes: 1 << 20, tuning: { ...tuning, ringChannels: 2 } })).toBe('pairwise on native');
    expect(choice('allGather', { bytes: 8 })).toBe('pairwise on native');
    // A large reduce: the root reads every other rank's tensor itself (single copy), 3 of them
    // pairwise against the binomial tree's 2 (rank 2 reads rank 3's meanwhile).
    expect(choice('reduce', { bytes: 64 << 20 })).toBe('binomial on native');
    expect(choice('reduce', { bytes: 128 << 10 })).toBe('pairwise on native');
    expect(choice('broadcast', { bytes: 8 })).toBe('pairwise on native');
    // The chain below single copy's 256 KiB; from it every rank reads the root's memory once.
    expect(choice('broadcast', { bytes: 128 << 10 })).toBe('chain on native');
    expect(choice('broadcast', { bytes: 1 << 20 })).toBe('pairwise on native');
    expect(choice('broadcast', { bytes: 1 << 20, ...two })).toBe('pairwise on native');
    // GX1_COLLECTIVE_ALGORITHM=ring takes the plane's ring-family row at any size; direct the coordinator.
    expect(choice('allReduce', { tuning: { ...tuning, algorithm: 'ring' } })).toBe('ring on native');
    expect(choice('broadcast', { tuning: { ...tuning, algorithm: 'ring' } })).toBe('chain on native');
    expect(choice('allReduce', { tuning: { ...tuning, algorithm: 'direct' } })).toBe('staged on coordinator');
    // One rank: the coordinator.
    expect(choice('allReduce', { worldSize: 1 })).toBe('staged on coordinator');
  });
  it('tree (GX1_COLLECTIVE_ALGORITHM=tree) takes the tree row of either plane at any world (an all-reduce: recursive doubling under the ring threshold, Rabenseifner from it), a collective without one as auto; auto takes one only where the model prices it cheapest', () => {
    const tuning = resolveTuning({}, 16, {});
    const base = { transport: 'tcp_peer' as const, plane: 'native' as const, worldSize: 16, bytes: 8, tuning, ranksShareHost: true, groups: null, topology: null, ringOrder: [...Array(16).keys()], profile: null };
    const choice = (collective: CollectiveName, changes: Partial<Situation> = {}) => {
      const row = selectAlgorithm(collective, { ...base, ...changes });
      return `${row.name} on ${row.plane}`;
    };
    const tree = { tuning: { ...tuning, algorithm: 'tree' as const } };
    for (const plane of ['native', 'js'] as const) {
      expect(choice('allReduce', { ...tree, plane })).toBe(`recursive-doubling on ${plane}`);
      expect(choice('allReduce', { ...tree, plane, bytes: tuning.ringThresholdBytes - 1, worldSize: 5 })).toBe(`recursive-doubling on ${plane}`);
      expect(choice('allReduce', { ...tree, plane, bytes: tuning.ringThresholdBytes })).toBe(`rabenseifner on ${plane}`);
      expect(choice('allReduce', { ...tree, plane, bytes: 64 << 20, worldSize: 5 })).toBe(`rabenseifner on ${plane}`);
      expect(choice('allGather', { ...tree, plane, bytes: 64 << 20 })).toBe(`bruck on ${plane}`);
      expect(choice('gather', { ...tree, plane })).toBe(`binomial on ${plane}`);
      expect(choice('broadcast', { ...tree, plane })).toBe(`binomial on ${plane}`);
      expect(choice('reduce', { ...tree, plane })).toBe(`binomial on ${plane}`);
      expect(choice('barrier', { ...tree, plane })).toBe(`dissemination on ${plane}`);
      for (const collective of ['allReduce', 'broadcast', 'reduce', 'barrier', 'allGather', 'gather'] as const) {
        for (const bytes of [0, 8, 1 << 20]) {
          const candidates = candidateEstimates(collective, { ...base, plane, bytes });
          const chosen = selectAlgorithm(collective, { ...base, plane, bytes });
          const least = Math.min(...candidates.map((candidate) => candidate.estimatedTimeNs!));
          expect(candidates.find((candidate) => candidate.row === chosen)!.estimatedTimeNs).toBe(least);
          // A tree only where no flat row costs as little (ties go to the flat rows, listed first).
          if (chosen.family === 'tree') for (const { row, estimatedTimeNs } of candidates) if (row.family !== 'tree') expect(estimatedTimeNs).toBeGreaterThan(least);
        }
      }
    }
    expect(choice('allToAll', tree)).toBe(choice('allToAll'));
    expect(choice('allReduce', { ...tree, worldSize: 1 })).toBe('staged on coordinator');
    expect(parseAlgorithmPolicy(' Tree ')).toBe('tree');
  });
});

describe('planCollective (lib/collectives/plan.ts) for the all-to-all, as docs/protocol.md 9.10 says', () => {
  it("names the chosen row with the choice model's estimate (the reference's three null: it has none for the all-to-all); all-to-all-v is always staged, unestimated; source policy under any other algorithm", () => {
    const tuning = resolveTuning({}, 4, {});
    const base = { transport: 'tcp_peer' as const, plane: 'native' as const, worldSize: 4, bytes: 4096, tuning, ranksShareHost: true, groups: null, topology: null, ringOrder: [0, 1, 2, 3], profile: null };
    const plan = (collective: 'allToAll' | 'allToAllV', changes: Partial<Situation> = {}) => {
      const { algorithm, plane, source, estimatedTimeNs, candidates, directEstimatedTimeNs, peerEstimatedTimeNs, hierarchicalEstimatedTimeNs } = planCollective(collective, { ...base, ...changes });
      expect([directEstimatedTimeNs, peerEstimatedTimeNs, hierarchicalEstimatedTimeNs]).toEqual([null, null, null]);
      if (plane === 'coordinator') expect(estimatedTimeNs).toBeNull();
      else expect(estimatedTimeNs).toBe(candidates.find((candidate) => candidate.algorithm === algorithm)!.estimatedTimeNs);
      return `${algorithm} on ${plane} (${source})`;
    };
    expect(plan('allToAll')).toBe('pairwise on native (model)');
    expect(plan('allToAll', { bytes: 64 << 20 })).toBe('pairwise on native (model)');
    expect(plan('allToAll', { plane: 'js' })).toBe('pairwise on js (model)');
    expect(plan('allToAll', { plane: 'js', bytes: tuning.ringThresholdBytes })).toBe('pairwise on js (model)');
    expect(plan('allToAll', { transport: 'tcp_host_staged', plane: 'coordinator' })).toBe('staged on coordinator (model)');
    expect(plan('allToAll', { tuning: { ...tuning, algorithm: 'ring' } })).toBe('pairwise on native (policy)');
    expect(plan('allToAll', { tuning: { ...tuning, algorithm: 'direct' } })).toBe('staged on coordinator (policy)');
    expect(plan('allToAllV')).toBe('staged on coordinator (model)');
    expect(plan('allToAllV', { plane: 'js', bytes: 64 << 20 })).toBe('staged on coordinator (model)');
  });
});

describe('tuning from the environment (resolveTuning, resolveSessionOptions)', () => {
  it('reads every variable, and options win over them', () => {
    const env = { GX1_COLLECTIVE_ALGORITHM: ' Ring ', GX1_RING_THRESHOLD_BYTES: '4096', GX1_RING_ORDER: '1,0,2', GX1_RING_CHANNELS: '3', GX1_TOPOLOGY_LINKS: 'probe' };
    expect(resolveTuning({}, 3, env)).toEqual({ algorithm: 'ring', ringThresholdBytes: 4096, ringOrder: [1, 0, 2], ringChannels: 3, topology: 'probe', groups: null, groupPayloadBytes: 16 << 20, railLinks: [], aggregateLinks: [], railOrder: 'auto', directBandwidthMbps: 32000, directLatencyNs: 1000, autotuneProfile: null });
    expect(resolveTuning({ algorithm: 'direct', ringOrder: [2, 1, 0], ringChannels: 1 }, 3, env)).toMatchObject({ algorithm: 'direct', ringOrder: [2, 1, 0], ringChannels: 1 });
    expect(resolveTuning({}, 3, {})).toEqual({ algorithm: 'auto', ringThresholdBytes: 256 * 1024, ringOrder: null, ringChannels: 1, topology: null, groups: null, groupPayloadBytes: 16 << 20, railLinks: [], aggregateLinks: [], railOrder: 'auto', directBandwidthMbps: 32000, directLatencyNs: 1000, autotuneProfile: null });
  });

  it('refuses bad values with the reference messages', () => {
    expect(() => resolveTuning({}, 2, { GX1_COLLECTIVE_ALGORITHM: 'fast' })).toThrow('invalid GX1_COLLECTIVE_ALGORITHM value "fast"');
    expect(() => resolveTuning({}, 2, { GX1_RING_THRESHOLD_BYTES: '-1' })).toThrow('invalid GX1_RING_THRESHOLD_BYTES value "-1"');
    expect(() => resolveTuning({}, 3, { GX1_RING_ORDER: '0,1' })).toThrow('invalid collective ring: contains 2 ranks, expected 3');
    expect(() => resolveTuning({}, 3, { GX1_RING_ORDER: '0,1,1' })).toThrow('invalid collective ring: rank 1 appears more than once');
    expect(() => resolveTuning({}, 2, { GX1_RING_CHANNELS: '65' })).toThrow('invalid collective ring channel count 65; expected 1..=64');
    expect(() => resolveTuning({}, 2, { GX1_TOPOLOGY_LINKS: '0-0:1:1' })).toThrow('topology rank 0 links to itself');
  });

  it('every refusal names the variable it read, also where the check is shared (a bad value of each validated GX1_* variable)', () => {
    const base = { coordinator: '127.0.0.1:9', uniqueId: '00112233445566778899aabbccddeeff', rank: 0, worldSize: 2 };
    const refusals: readonly (readonly [string, string])[] = [
      ['GX1_P2P_RAILS', 'x'], ['GX1_P2P_RAILS', '0'], ['GX1_P2P_RAILS', '65'],
      ['GX1_FAULT_TOLERANT', 'maybe'], ['GX1_DATA_PLANE', 'gpu'], ['GX1_SINGLE_COPY', 'x'],
      ['GX1_COLLECTIVE_TIMEOUT_MS', 'x'], ['GX1_COLLECTIVE_TIMEOUT_MS', '0'], ['GX1_COLLECTIVE_TIMEOUT_MS', '99999999999'],
      ['GX1_COLLECTIVE_TRANSPORT', 'udp'], ['GX1_P2P_UNMATCHED_BYTES', '0'],
      ['GX1_SECRET', 'short'], ['GX1_SECRET_FILE', '/nonexistent-rxccl'],
      ['GX1_TLS_CERT', '/nonexistent-rxccl'], ['GX1_TLS_KEY', '/nonexistent-rxccl'], ['GX1_TLS_CA', '/nonexistent-rxccl'],
      ['GX1_BUSY_POLL_US', 'x'], ['GX1_SPIN_US', '-1'], ['GX1_INLINE_US', '100001'],
      ['GX1_COLLECTIVE_ALGORITHM', 'x'], ['GX1_COLLECTIVE_ALGORITHM', 'hierarchical'], ['GX1_RING_THRESHOLD_BYTES', 'x'],
      ['GX1_RING_ORDER', 'x'], ['GX1_RING_ORDER', '0,0'], ['GX1_RING_ORDER', '0,1,2'], ['GX1_RING_ORDER', '0,5'],
      ['GX1_RING_CHANNELS', 'x'], ['GX1_RING_CHANNELS', '0'], ['GX1_RING_CHANNELS', '65'],
      ['GX1_TOPOLOGY_LINKS', 'x'], ['GX1_TOPOLOGY_LINKS', '0-1:0:1'], ['GX1_TOPOLOGY_LINKS', '0-5:1:1'], ['GX1_TOPOLOGY_LINKS', '0-0:1:1'],
      ['GX1_TOPOLOGY_RAIL_LINKS', 'x'], ['GX1_TOPOLOGY_RAIL_LINKS', '0@0-1:0:1'], ['GX1_TOPOLOGY_RAIL_LINKS', '3@0-1:1:1'], ['GX1_TOPOLOGY_RAIL_LINKS', '0@0-5:1:1'],
      ['GX1_TOPOLOGY_AGGREGATE_LINKS', 'x'], ['GX1_TOPOLOGY_AGGREGATE_LINKS', '0-1:0'], ['GX1_TOPOLOGY_AGGREGATE_LINKS', '0-5:1'],
      ['GX1_RAIL_ORDER', 'x'], ['GX1_RAIL_ORDER', '0,1'], ['GX1_RAIL_ORDER', '1'],
      ['GX1_DIRECT_BANDWIDTH_MBPS', '0'], ['GX1_DIRECT_LATENCY_NS', 'x'],
      ['GX1_TOPOLOGY_GROUPS', 'x'], ['GX1_TOPOLOGY_GROUPS', '0;2'], ['GX1_TOPOLOGY_GROUPS', '0,1;1'], ['GX1_TOPOLOGY_GROUPS', '0,1'],
    ];
    for (const [variable, value] of refusals) {
      const error = (() => {
        try {
          resolveSessionOptions(base, { [variable]: value });
        } catch (thrown) {
          return thrown as ConfigurationError;
        }
        throw new Error(`${variable}=${value} was accepted`);
      })();
      expect([variable, value, error.code]).toEqual([variable, value, 'INVALID_CONFIGURATION']);
      expect(error.message, `${variable}=${value}`).toContain(variable);
    }
    // The user trial's three, exactly; the shared check's text follows the name.
    expect(refusal(() => resolveTuning({}, 2, { GX1_TOPOLOGY_GROUPS: '0;2' }))).toBe('GX1_TOPOLOGY_GROUPS: topology rank 2 is outside world size 2');
    expect(refusal(() => resolveTuning({}, 2, { GX1_TOPOLOGY_RAIL_LINKS: '0@0-1:0:1' }))).toBe('GX1_TOPOLOGY_RAIL_LINKS: topology link 0-1 has zero bandwidth');
    expect(refusal(() => resolveTuning({}, 2, { GX1_RAIL_ORDER: '0' }, 2))).toBe('GX1_RAIL_ORDER: invalid collective rail order: contains 1 rails, expected 2');
    // The probe's variables, each named with the reference's text.
    expect(refusal(() => probeOptionsOf({ GX1_TOPOLOGY_PROBE_BYTES: '0' }))).toMatch(/^GX1_TOPOLOGY_PROBE_BYTES: topology probe payload 0 is outside /);
    expect(refusal(() => probeOptionsOf({ GX1_TOPOLOGY_PROBE_LATENCY_ITERATIONS: '0' }))).toBe(
      'GX1_TOPOLOGY_PROBE_LATENCY_ITERATIONS: topology probe latency and bandwidth iterations must be greater than zero',
    );
    expect(refusal(() => probeOptionsOf({ GX1_TOPOLOGY_PROBE_WARMUP_ITERATIONS: '10001' }))).toBe('GX1_TOPOLOGY_PROBE_WARMUP_ITERATIONS: topology probe iteration counts must not exceed 10000');
  });

  it('a refusal of an option names the option, not the variable it stands in for', () => {
    const base = { coordinator: '127.0.0.1:9', uniqueId: '00112233445566778899aabbccddeeff', rank: 0, worldSize: 2 };
    expect(refusal(() => resolveSessionOptions({ ...base, topologyGroups: [[0], [2]] }, {}))).toBe('topologyGroups: topology rank 2 is outside world size 2');
    expect(refusal(() => resolveSessionOptions({ ...base, topologyRailLinks: '0@0-1:0:1' }, {}))).toBe('topologyRailLinks: topology link 0-1 has zero bandwidth');
    expect(refusal(() => resolveSessionOptions({ ...base, railOrder: [0], rails: 2 }, {}))).toBe('railOrder: invalid collective rail order: contains 1 rails, expected 2');
    expect(refusal(() => resolveSessionOptions({ ...base, ringChannels: 65 }, {}))).toBe('ringChannels: invalid collective ring channel count 65; expected 1..=64');
    expect(refusal(() => resolveSessionOptions({ ...base, rails: 0 }, {}))).toBe('rails: point-to-point rail count 0 is outside 1..=64');
    // The option wins over a bad variable, which is then never read.
    expect(refusal(() => resolveSessionOptions({ ...base, topologyGroups: [[0], [1]] }, { GX1_TOPOLOGY_GROUPS: '0;2' }))).toBe('accepted');
  });

  it('openSession(options) takes GX1_P2P_RAILS and GX1_COLLECTIVE_TRANSPORT when the options leave them out', () => {
    const base = { coordinator: '127.0.0.1:9', uniqueId: '00112233445566778899aabbccddeeff', rank: 0, worldSize: 2 };
    const env = { GX1_P2P_RAILS: '3', GX1_COLLECTIVE_TRANSPORT: 'peer' };
    expect(resolveSessionOptions(base, env)).toMatchObject({ rails: 3, transport: 'tcp_peer' });
    expect(resolveSessionOptions({ ...base, rails: 1, transport: 'tcp_host_staged' }, env)).toMatchObject({ rails: 1, transport: 'tcp_host_staged' });
  });
});

describe('allReduce in place', () => {
  for (const [transport, worldSize, elements] of [
    ['tcp_host_staged', 3, 5],
    ['tcp_peer', 2, 5],
    ['tcp_peer', 3, big + 1],
  ] as const) {
    it(`${transport}, ${worldSize} ranks, ${elements} elements: the result is written into the input, which is returned`, async () => {
      const ranks = await sessions(worldSize, { transport });
      const inputs = ranks.map((session) => Int32Array.from({ length: elements }, (_, index) => index + session.rank));
      const results = await Promise.all(ranks.map((session, rank) => session.allReduce(inputs[rank]!, 'sum', { inPlace: true })));
      results.forEach((result, rank) => {
        expect(result).toBe(inputs[rank]);
        expect([result[0], result[elements - 1]]).toEqual([(worldSize * (worldSize - 1)) / 2, worldSize * (elements - 1) + (worldSize * (worldSize - 1)) / 2]);
      });
      // Without the option the input stays as it was.
      const kept = Int32Array.of(1, 2);
      await Promise.all(ranks.map((session) => session.allReduce(session.rank === 0 ? kept : Int32Array.of(1, 2))));
      expect(Array.from(kept)).toEqual([1, 2]);
    });
  }
});
