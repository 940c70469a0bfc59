/**
 * One choice, by cost (lib/collectives/choice-cost.ts, candidate-costs.ts, select.ts): under
 * `auto` every row of the session's plane that fits is priced from its schedules, and the cheapest
 * runs; a profile overrides. Nothing here is timed: the estimates are arithmetic on the schedules
 * and the settings table (lib/collectives/cost-settings.ts), so the same situation gives the same
 * numbers on every rank, and in docs/protocol.md 9.10's worked example.
 */
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import type { CollectiveName } from '../../lib/collectives/algorithm.js';
import type { AutotuneProfile } from '../../lib/collectives/autotune-profile.js';
import { pairwiseBroadcast } from '../../lib/collectives/broadcast/pairwise.js';
import { plannedSchedules, shapeCost } from '../../lib/collectives/choice-cost.js';
import { planCollective } from '../../lib/collectives/plan.js';
import { pairwiseReduceScatter } from '../../lib/collectives/reduce-scatter/pairwise.js';
import { candidateEstimates, cheapestRow, selectAlgorithm, type Situation } from '../../lib/collectives/select.js';
import { resolveTuning } from '../../lib/collectives/tuning.js';

const COLLECTIVES: readonly CollectiveName[] = ['barrier', 'allReduce', 'reduce', 'broadcast', 'allGather', 'gather', 'reduceScatter', 'allToAll'];

/** A tcp_peer call's situation: `hosts` ranks per host (one host: every rank shares it), groups where the hosts hold several ranks. */
function situation(plane: 'native' | 'js', hosts: readonly number[], bytes: number): Situation {
  const worldSize = hosts.reduce((sum, ranks) => sum + ranks, 0);
  let next = 0;
  const groups = hosts.length > 1 && hosts.some((ranks) => ranks > 1) ? hosts.map((ranks) => Array.from({ length: ranks }, () => next++)) : null;
  const tuning = resolveTuning({}, worldSize, {});
  return { transport: 'tcp_peer', plane, worldSize, bytes, tuning, ranksShareHost: hosts.length === 1, groups, groupsAreHosts: groups !== null, topology: null, ringOrder: [...Array(worldSize).keys()], profile: null };
}

/** The same situation as another rank builds it: equal facts, none of the same objects. */
const elsewhere = (of: Situation): Situation => ({ ...of, groups: of.groups === null ? null : of.groups.map((group) => [...group]), ringOrder: [...of.ringOrder], tuning: { ...of.tuning } });

const arbSituation = fc
  .record({
    plane: fc.constantFrom('native' as const, 'js' as const),
    hosts: fc.oneof(fc.integer({ min: 2, max: 12 }).map((ranks) => [ranks]), fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 2, maxLength: 4 })),
    bytes: fc.oneof(fc.constantFrom(0, 8, 1024, 65536, 262144, 1 << 20, 64 << 20), fc.integer({ min: 0, max: 1 << 26 })),
    collective: fc.constantFrom(...COLLECTIVES),
  })
  .filter(({ hosts }) => hosts.reduce((sum, ranks) => sum + ranks, 0) >= 2);

const name = (collective: CollectiveName, at: Situation) => {
  const row = selectAlgorithm(collective, at);
  return `${row.name} on ${row.plane}`;
};

const estimates = (collective: CollectiveName, at: Situation) => Object.fromEntries(candidateEstimates(collective, at).map(({ row, estimatedTimeNs }) => [row.name, estimatedTimeNs]));

describe('the choice by cost', () => {
  it('auto runs the first candidate of least estimate; every scheduled candidate has one; plan() reports them all, and the chosen one as its estimate', () => {
    fc.assert(
      fc.property(arbSituation, ({ plane, hosts, bytes, collective }) => {
        const at = situation(plane, hosts, bytes);
        const candidates = candidateEstimates(collective, at);
        expect(candidates.length).toBeGreaterThan(0);
        for (const { estimatedTimeNs } of candidates) expect(estimatedTimeNs).toEqual(expect.any(Number));
        const least = Math.min(...candidates.map((candidate) => candidate.estimatedTimeNs!));
        const first = candidates.find((candidate) => candidate.estimatedTimeNs === least)!.row;
        expect(selectAlgorithm(collective, at)).toBe(first);
        expect(cheapestRow(candidates)).toBe(first);
        const plan = planCollective(collective, at);
        expect(plan).toMatchObject({ algorithm: first.name, plane, source: 'model', estimatedTimeNs: least });
        expect(plan.candidates).toEqual(candidates.map(({ row, estimatedTimeNs }) => ({ algorithm: row.name, family: row.family, plane: row.plane, estimatedTimeNs })));
      }),
      { numRuns: 150 },
    );
  });

  it('is the same on every rank: another process (fresh modules, its own cache) with equal facts built apart gives the same estimates and the same row, asked in any order', async () => {
    vi.resetModules();
    const other = (await import('../../lib/collectives/select.js')) as typeof import('../../lib/collectives/select.js');
    expect(other.candidateEstimates).not.toBe(candidateEstimates);
    const estimatesThere = (collective: CollectiveName, at: Situation) => Object.fromEntries(other.candidateEstimates(collective, at).map(({ row, estimatedTimeNs }) => [row.name, estimatedTimeNs]));
    fc.assert(
      fc.property(arbSituation, fc.boolean(), ({ plane, hosts, bytes, collective }, thereFirst) => {
        const here = situation(plane, hosts, bytes);
        const there = elsewhere(here);
        const theirsFirst = thereFirst ? estimatesThere(collective, there) : null;
        const mine = estimates(collective, here);
        const theirs = theirsFirst ?? estimatesThere(collective, there);
        expect(theirs).toEqual(mine);
        const row = other.selectAlgorithm(collective, there);
        expect(`${row.name} on ${row.plane}`).toBe(name(collective, here));
      }),
      { numRuns: 100 },
    );
  });

  it('a profile overrides the model (source autotune, its measured time), where it has an entry and a row of that name', () => {
    const at = situation('native', [4], 1 << 20);
    expect(name('allReduce', at)).toBe('pairwise on native');
    const profile: AutotuneProfile = {
      version: 2,
      world_size: 4,
      topology_fingerprint: '',
      execution_fingerprint: '',
      entries: [{ operation: 'allreduce', min_payload_bytes: 1 << 19, max_payload_bytes: 1 << 21, algorithm: 'ring', ring_channels: 1, measured_time_ns: 1234 }],
    };
    const profiled = { ...at, profile };
    expect(name('allReduce', profiled)).toBe('ring on native');
    expect(planCollective('allReduce', profiled)).toMatchObject({ algorithm: 'ring', source: 'autotune', estimatedTimeNs: 1234 });
    // Outside the entry's sizes, or another collective: the model.
    expect(name('allReduce', { ...profiled, bytes: 8 })).toBe(name('allReduce', { ...at, bytes: 8 }));
    expect(name('allGather', profiled)).toBe(name('allGather', at));
    // A policy other than auto wins over both.
    expect(name('allReduce', { ...profiled, tuning: { ...at.tuning, algorithm: 'tree' } })).toBe('rabenseifner on native');
  });

  it('orders the known cases as measured (bench/README.md)', () => {
    // 2 ranks, 8 B: one message each way (all-pairs; on the JS plane recursive doubling, its header
    // alone beside it) before any schedule of two steps.
    const small = situation('native', [2], 8);
    expect(estimates('allReduce', small)['all-pairs']).toBeLessThan(estimates('allReduce', small).pairwise!);
    expect(name('allReduce', small)).toBe('all-pairs on native');
    expect(name('allReduce', situation('js', [2], 8))).toBe('recursive-doubling on js');
    // 2 ranks, 64 MiB, one host (single copy): pairwise (half the tensor each way) before all-pairs
    // (the whole of it): 18-22 ms measured for pairwise.
    const large = estimates('allReduce', situation('native', [2], 64 << 20));
    expect(large.pairwise).toBeLessThan(large['all-pairs']!);
    expect(name('allReduce', situation('native', [2], 64 << 20))).toBe('pairwise on native');
    // 2 hosts x 2 ranks: the hierarchy from 1 MiB (1.7-2.2 ms against pairwise's 3.3-3.7; at
    // 64 MiB 77-90 ms against the ring's 131-143), the ring's reduce-scatter before the hierarchy's
    // (429 against 561 ms), all-pairs at 8 B.
    for (const bytes of [1 << 20, 64 << 20]) {
      const apart = estimates('allReduce', situation('native', [2, 2], bytes));
      expect(apart.hierarchical).toBeLessThan(Math.min(apart.ring!, apart.pairwise!));
      expect(name('allReduce', situation('native', [2, 2], bytes))).toBe('hierarchical on native');
    }
    const scattered = estimates('reduceScatter', situation('native', [2, 2], 64 << 20));
    expect(scattered.ring).toBeLessThan(scattered.hierarchical!);
    expect(name('allReduce', situation('native', [2, 2], 8))).toBe('all-pairs on native');
    // A broadcast at 3 ranks and more on one host: below single copy's 256 KiB the chain spreads
    // the root's copying; from it every rank reads the root's memory once (bench/README.md,
    // "Broadcast and all-gather against vader").
    for (const ranks of [3, 4, 8]) expect(name('broadcast', situation('native', [ranks], 128 << 10))).toBe('chain on native');
    for (const ranks of [3, 4, 8]) expect(name('broadcast', situation('native', [ranks], 1 << 20))).toBe('pairwise on native');
  });

  it('a same-host payload of 256 KiB or more on the native plane loads its receiver, which copies it out of the sender (single copy), not its sender', () => {
    // The direct broadcast at 4 ranks: the root sends the tensor 3 times, each rank receives it once.
    const slope = (at: (bytes: number) => Situation, collective: CollectiveName, row: string, bytes: number) => estimates(collective, at(2 * bytes))[row]! - estimates(collective, at(bytes))[row]!;
    const oneHost = (bytes: number) => situation('native', [4], bytes);
    // Below 256 KiB the root copies the tensor into 3 rings at 4000 MB/s, 0.75 ns a byte; from it
    // each reader copies it once, 0.25; either way the root's copy into its result, 0.125.
    expect(slope(oneHost, 'broadcast', 'pairwise', 64 << 10)).toBe(0.875 * (64 << 10));
    expect(slope(oneHost, 'broadcast', 'pairwise', 256 << 10)).toBe(0.375 * (256 << 10));
    // The chain sends once per rank either way; the all-gather's pairwise sends what it receives.
    expect(slope(oneHost, 'broadcast', 'chain', 64 << 10)).toBe(slope(oneHost, 'broadcast', 'chain', 256 << 10) / 4);
    expect(slope(oneHost, 'allGather', 'pairwise', 64 << 10)).toBe(slope(oneHost, 'allGather', 'pairwise', 256 << 10) / 4);
    // Not where nothing is read in place: the JS plane, and ranks of different hosts.
    for (const apart of [(bytes: number) => situation('js', [4], bytes), (bytes: number) => situation('native', [1, 1, 1, 1], bytes)]) {
      expect(slope(apart, 'broadcast', 'pairwise', 256 << 10)).toBe(4 * slope(apart, 'broadcast', 'pairwise', 64 << 10));
    }
    // The switch is the call's size where the shape's smallest same-host payload reaches 256 KiB:
    // the tensor for the direct broadcast, a quarter of it for the pairwise reduce-scatter.
    const facts = { worldSize: 4, plane: 'native' as const, topology: null, ranksShareHost: true, groups: null };
    const input = { worldSize: 4, count: 1 << 18, width: 1, op: 'sum' as const, root: 0, ringOrder: [0, 1, 2, 3], ringChannels: 1, inPlace: false };
    const direct = shapeCost(plannedSchedules(pairwiseBroadcast, input, 'native'), facts, 1 << 18)!;
    expect(direct).toMatchObject({ nsPerByte: 0.75 + 0.125, readByReceiver: { fromBytes: 256 << 10, nsPerByte: 0.25 + 0.125 } });
    const scattered = shapeCost(plannedSchedules(pairwiseReduceScatter, { ...input, root: null }, 'native'), facts, 1 << 18)!;
    expect(scattered.readByReceiver?.fromBytes).toBe(4 * (256 << 10));
  });

  it('trees win where the model says: many ranks and small tensors; the flat rows at few ranks and where bandwidth counts', () => {
    for (const ranks of [2, 4]) expect(name('allReduce', situation('native', [ranks], 8))).toBe('all-pairs on native');
    for (const ranks of [8, 16]) expect(name('allReduce', situation('native', [ranks], 8))).toBe('recursive-doubling on native');
    for (const ranks of [8, 16]) expect(name('barrier', situation('native', [ranks], 0))).toBe('dissemination on native');
    expect(name('barrier', situation('native', [4], 0))).toBe('pairwise on native');
    expect(name('broadcast', situation('native', [16], 8))).toBe('binomial on native');
    for (const ranks of [4, 8, 16]) expect(name('allReduce', situation('native', [ranks], 64 << 20))).toBe('pairwise on native');
  });

  it('where 8 and 16 ranks share the 2 cores, takes the rows measured best or within a tenth of it (bench/README.md, "Oversubscribed hosts")', () => {
    for (const bytes of [8, 1024]) {
      expect(name('allReduce', situation('native', [8], bytes))).toBe('recursive-doubling on native');
      expect(name('broadcast', situation('native', [8], bytes))).toBe('pairwise on native');
      expect(name('broadcast', situation('native', [16], bytes))).toBe('binomial on native');
    }
    expect(name('allGather', situation('native', [8], 1024))).toBe('pairwise on native');
    expect(name('allGather', situation('native', [16], 8))).toBe('bruck on native');
    // At 2 and 4 ranks all-pairs, which beat recursive doubling there too (0.72x at 8 B, 0.87x at 1 KiB with 4 ranks).
    for (const ranks of [2, 4]) for (const bytes of [8, 1024]) expect(name('allReduce', situation('native', [ranks], bytes))).toBe('all-pairs on native');
  });

  it("docs/protocol.md 9.10's worked example: 1 + 2 hosts, native plane, all-reduce of 1 MiB and of 8 B", () => {
    const mib = situation('native', [1, 2], 1 << 20);
    expect(mib.groups).toEqual([[0], [1, 2]]);
    expect(estimates('allReduce', mib)).toEqual({ 'all-pairs': 2554368, hierarchical: 1369684, pairwise: 1657174, ring: 1760864, 'recursive-doubling': 1690364, rabenseifner: 1586292 });
    expect(name('allReduce', mib)).toBe('hierarchical on native');
    const eight = situation('native', [1, 2], 8);
    expect(estimates('allReduce', eight)).toEqual({ 'all-pairs': 64019, hierarchical: 124510, pairwise: 128012, ring: 188012, 'recursive-doubling': 117512, rabenseifner: 144511 });
    expect(name('allReduce', eight)).toBe('all-pairs on native');
  });

  it('staged where nothing else can: tcp_host_staged, one rank, the scatter and all-to-all-v; a row that does not fit is no candidate', () => {
    expect(name('allReduce', { ...situation('native', [4], 8), transport: 'tcp_host_staged', plane: 'coordinator' })).toBe('staged on coordinator');
    expect(candidateEstimates('scatter', situation('native', [4], 8))).toEqual([]);
    expect(name('allToAllV', situation('js', [4], 8))).toBe('staged on coordinator');
    // The JS pairwise rows and the chain start at 3 ranks; the hierarchy needs groups.
    expect(Object.keys(estimates('allReduce', situation('js', [2], 8)))).not.toContain('pairwise');
    expect(Object.keys(estimates('broadcast', situation('native', [2], 8)))).not.toContain('chain');
    expect(Object.keys(estimates('allReduce', situation('native', [4], 8)))).not.toContain('hierarchical');
  });
});
