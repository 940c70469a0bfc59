/**
 * Ranks as separate processes (spec/helpers/rank-child.ts, transpiled ahead and started with `node` and
 * the GX1_* environment, `openSession()` without options) against a coordinator in this process.
 * Each child costs half a second of start-up on this machine, so the tests are few and big.
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { Coordinator } from '../../lib/coordinator/coordinator.js';
import { UniqueId } from '../../lib/protocol/unique-id.js';
import { cleanUpJobsAfterEach, describeRank, isAlive, liveProcesses, type RankProcess, resultOf, spawnRank, startProcessJob } from '../helpers/rank-process.js';

const CHILD = 'spec/helpers/rank-child.ts';
const TIMEOUT_MS = 10_000;

const cleanup = cleanUpJobsAfterEach();
const { coordinators, spawned } = cleanup;

const job = (worldSize: number, scenario: string, env: Record<string, string> = {}, transport: 'tcp_host_staged' | 'tcp_peer' = 'tcp_host_staged') =>
  startProcessJob(cleanup, worldSize, { script: CHILD, scenario, transport, timeoutMs: TIMEOUT_MS, env });


/** The inodes of the shared-memory ring segments (native/shared_memory_ring.h) process `pid` maps; none where it is gone or not readable. */
function ringMappings(pid: number): string[] {
  try {
    return readFileSync(`/proc/${pid}/maps`, 'utf8')
      .split('\n')
      .filter((line) => line.includes('/memfd:rxccl-ring'))
      .map((line) => line.split(/\s+/)[4]!);
  } catch {
    return [];
  }
}

/** The descriptors of ring segments process `pid` holds. */
function ringDescriptors(pid: number): string[] {
  return readdirSync(`/proc/${pid}/fd`).filter((fd) => {
    try {
      return readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith('/memfd:rxccl-ring');
    } catch {
      return false;
    }
  });
}

describe('ranks in separate processes', () => {
  for (const [how, env, transport] of [
    ['', {}, 'tcp_host_staged'],
    [' (tcp_peer, the native data plane)', { GX1_DATA_PLANE: 'native' }, 'tcp_peer'],
  ] as const) it(`four processes${how}: allReduce, broadcast, barrier, allGather and a point-to-point ring`, async () => {
    const worldSize = 4;
    const { coordinator, ranks } = await job(worldSize, 'collectives', env, transport);
    const exits = await Promise.all(ranks.map((rank) => rank.exited));
    exits.forEach((exit, rank) => expect(exit, describeRank(ranks[rank]!)).toEqual({ code: 0, signal: null }));
    await expect(coordinator.done).resolves.toBeUndefined();
    for (const rank of ranks) {
      const r = rank.rank;
      expect(resultOf(rank, 'allReduce')).toEqual([6, 10, 14, 18]);
      expect(resultOf(rank, 'allReduceMax')).toEqual(['3000000000000']);
      expect(resultOf(rank, 'broadcast')).toEqual([7, 8, 9]);
      expect(resultOf(rank, 'barrier')).toBe(true);
      expect(resultOf(rank, 'allGather')).toEqual({ dtype: 'bf16', data: [0x3f80, 0x3f81, 0x3f82, 0x3f83] });
      const previous = (r + worldSize - 1) % worldSize;
      expect(resultOf(rank, 'ring')).toEqual([previous, previous, previous]);
      expect(rank.lines.at(-1)).toBe('DONE');
    }
    expect(liveProcesses()).toEqual([]);
  });

  it('a rank killed with SIGKILL mid-collective: every other rank and the coordinator name it, promptly', async () => {
    const { coordinator, ranks } = await job(3, 'die-in-allreduce', { VICTIM_RANK: '2' });
    const [zero, one, victim] = ranks as [RankProcess, RankProcess, RankProcess];
    const done = coordinator.done.then(
      () => null,
      (error: unknown) => error as Error,
    );
    // Ranks 0 and 1 wait in allReduce sequence 1; rank 2 is blocked elsewhere.
    await Promise.all([zero.waitFor(/^WAITING$/), one.waitFor(/^WAITING$/), victim.waitFor(/^BLOCKING$/)]);
    const killed = Date.now();
    victim.child.kill('SIGKILL');
    const victimExit = await victim.exited;
    expect(victimExit.signal).toBe('SIGKILL');
    const errors = await Promise.all([zero, one].map((rank) => rank.waitFor(/^ERROR /)));
    const elapsed = Date.now() - killed;
    for (const [index, line] of errors.entries()) {
      const what = describeRank([zero, one][index]!);
      expect(line, what).toMatch(/^ERROR REMOTE_ABORT /);
      // The victim closed its sockets while the others waited, or was seen gone before they were.
      expect(line, what).toMatch(/rank 2 (disconnected during|failed during|left before) collective sequence 1\b/);
    }
    expect(elapsed, 'survivors told within the session timeout').toBeLessThan(TIMEOUT_MS);
    for (const rank of [zero, one]) expect(await rank.exited, describeRank(rank)).toEqual({ code: 3, signal: null });
    const failure = await done;
    expect(failure?.message).toMatch(/rank 2 (disconnected during|failed during|left before) collective sequence 1\b/);
    for (const rank of ranks) expect(isAlive(rank.pid)).toBe(false);
  });

  // tcp_peer on the JS data plane: the small all-reduce goes by recursive doubling, a
  // large one goes pairwise (every rank on one host) or round the ring, a large broadcast pairwise
  // from its root; on the native data plane both sizes, and the broadcast's chain, run on the addon's thread; killing
  // a rank of any of them mid-algorithm ends every rank in < 2 s (a chain broadcast's root,
  // which needs nothing of the victim, at its next call: rank-child.ts).
  for (const [what, victimRank, elements, env] of [
    ['a rank of a recursive-doubling all-reduce', 0, 1, { GX1_DATA_PLANE: 'js' }],
    ['a rank of a pairwise all-reduce', 2, 1 << 20, { GX1_DATA_PLANE: 'js' }],
    ['a rank of a ring all-reduce', 2, 1 << 20, { GX1_COLLECTIVE_ALGORITHM: 'ring', GX1_DATA_PLANE: 'js' }],
    ['a rank of a pairwise broadcast', 2, 1 << 20, { PENDING_COLLECTIVE: 'broadcast', GX1_DATA_PLANE: 'js' }],
    // The native data plane: its engine sees the killed rank's links end (or reset) at once.
    ['a rank of a native all-pairs all-reduce', 2, 1, { GX1_DATA_PLANE: 'native' }],
    ['a rank of a native pairwise all-reduce', 2, 1 << 20, { GX1_DATA_PLANE: 'native' }],
    // 128 KiB: the chain's (from 256 KiB on one host every rank reads the root's memory instead).
    ['a middle rank of a native chain broadcast', 2, 32 << 10, { PENDING_COLLECTIVE: 'broadcast', GX1_DATA_PLANE: 'native' }],
    // The ring's chain: the root's next call dials the killed rank's data link on demand. A dial
    // the kernel resets once connected names the rank as left (it once surfaced as a bare `read
    // ECONNRESET`); one its closed listener refuses, as a peer the root cannot reach.
    ['a middle rank of a chain broadcast along the ring (GX1_COLLECTIVE_ALGORITHM=ring)', 2, 32 << 10, { PENDING_COLLECTIVE: 'broadcast', GX1_DATA_PLANE: 'native', GX1_COLLECTIVE_ALGORITHM: 'ring' }],
  ] as const) {
    it(`tcp_peer, 4 ranks: SIGKILL of ${what}: every other rank fails within 2 s, naming it`, async () => {
      const { ranks } = await job(4, 'die-in-allreduce', { VICTIM_RANK: String(victimRank), ALLREDUCE_ELEMENTS: String(elements), ...env }, 'tcp_peer');
      const victim = ranks[victimRank]!;
      const survivors = ranks.filter((rank) => rank !== victim);
      await Promise.all([victim.waitFor(/^BLOCKING$/), ...survivors.map((rank) => rank.waitFor(/^WAITING$/))]);
      const killed = Date.now();
      victim.child.kill('SIGKILL');
      const errors = await Promise.all(survivors.map((rank) => rank.waitFor(/^ERROR /)));
      const elapsed = Date.now() - killed;
      // Told of it, or (a survivor that dialled it on demand after it died) unable to reach it.
      const naming = new RegExp(`^ERROR (REMOTE_ABORT .*rank ${victimRank}\\b|INVALID_CONFIGURATION cannot reach direct peer rank ${victimRank} )`);
      for (const [index, line] of errors.entries()) expect(line, describeRank(survivors[index]!)).toMatch(naming);
      expect(elapsed).toBeLessThan(2_000);
      for (const rank of survivors) expect(await rank.exited, describeRank(rank)).toEqual({ code: 3, signal: null });
    });
  }

  it('tcp_peer, 4 ranks on the native plane: the shared-memory rings are named nowhere, no descriptor of one is left once agreed, and none outlives a SIGKILLed rank and its peers', async () => {
    const ringsInDevShm = () => readdirSync('/dev/shm').filter((name) => name.includes('rxccl'));
    const { ranks } = await job(4, 'die-in-allreduce', { VICTIM_RANK: '2', ALLREDUCE_ELEMENTS: '1', GX1_DATA_PLANE: 'native' }, 'tcp_peer');
    const victim = ranks[2]!;
    const survivors = ranks.filter((rank) => rank !== victim);
    await Promise.all([victim.waitFor(/^BLOCKING$/), ...survivors.map((rank) => rank.waitFor(/^WAITING$/))]);
    // The warm-up all-reduce took every link: each rank maps its 3 rings and its 3 peers' (a memfd:
    // no file in /dev/shm or anywhere) and holds no descriptor of any.
    const segments = new Set<string>();
    for (const rank of ranks) {
      const mapped = new Set(ringMappings(rank.pid));
      expect(mapped.size, describeRank(rank)).toBe(6);
      for (const inode of mapped) segments.add(inode);
      expect(ringDescriptors(rank.pid), describeRank(rank)).toEqual([]);
    }
    expect(segments.size).toBe(12);
    expect(ringsInDevShm()).toEqual([]);
    // The survivors wait in the ring of the victim's link; killed, it is named.
    victim.child.kill('SIGKILL');
    const errors = await Promise.all(survivors.map((rank) => rank.waitFor(/^ERROR /)));
    for (const [index, line] of errors.entries()) expect(line, describeRank(survivors[index]!)).toMatch(/^ERROR REMOTE_ABORT .*rank 2\b/);
    for (const rank of survivors) expect(await rank.exited, describeRank(rank)).toEqual({ code: 3, signal: null });
    // No process of this user maps any of those segments any more: the kernel freed them with their
    // last mapping (a memfd's inode is not reused while it lives).
    const left = readdirSync('/proc')
      .filter((pid) => /^\d+$/.test(pid))
      .filter((pid) => ringMappings(Number(pid)).some((inode) => segments.has(inode)));
    expect(left).toEqual([]);
    expect(ringsInDevShm()).toEqual([]);
  });

  it('a rank that cannot join (wrong unique id) is refused with a reason, and exits', async () => {
    const uniqueId = UniqueId.random();
    const coordinator = await Coordinator.listen({ host: '127.0.0.1', port: 0, uniqueId, worldSize: 2, joinTimeoutMs: 5_000 });
    coordinators.push(coordinator);
    const stranger = spawnRank({
      script: CHILD,
      args: ['collectives'],
      coordinator: `127.0.0.1:${coordinator.address.port}`,
      uniqueId: UniqueId.random().toHex(),
      rank: 0,
      worldSize: 2,
      timeoutMs: TIMEOUT_MS,
    });
    spawned.push(stranger);
    const line = await stranger.waitFor(/^ERROR /);
    expect(line).toMatch(/^ERROR REMOTE_ABORT .*unique id mismatch/);
    expect(await stranger.exited).toEqual({ code: 3, signal: null });
  });

  it('ranks whose environments set GX1_RING_CHANNELS apart both fail at open, naming it, the ranks and both values', async () => {
    const uniqueId = UniqueId.random();
    const coordinator = await Coordinator.listen({ host: '127.0.0.1', port: 0, uniqueId, worldSize: 2, transport: 'tcp_peer' });
    coordinators.push(coordinator);
    const ranks = ['2', '4'].map((channels, rank) =>
      spawnRank({
        script: CHILD,
        args: ['collectives'],
        coordinator: `127.0.0.1:${coordinator.address.port}`,
        uniqueId: uniqueId.toHex(),
        rank,
        worldSize: 2,
        timeoutMs: TIMEOUT_MS,
        env: { GX1_COLLECTIVE_TRANSPORT: 'tcp_peer', GX1_RING_CHANNELS: channels },
      }),
    );
    spawned.push(...ranks);
    for (const rank of ranks) {
      expect(await rank.waitFor(/^ERROR /), describeRank(rank)).toBe('ERROR SETTINGS_DIFFER GX1_RING_CHANNELS differs: rank 0 has 2, rank 1 has 4; every rank must choose collectives alike');
      expect(await rank.exited).toEqual({ code: 3, signal: null });
    }
  });
});
