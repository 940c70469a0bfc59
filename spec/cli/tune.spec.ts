/**
 * `rxccl tune` writes an autotune profile (the reference's version 2) from measured runs, and a
 * session reading it (GX1_COLLECTIVE_AUTOTUNE_PROFILE) lets `auto` take the measured choice:
 * `plan()` says `autotune`, `events$` names the same algorithm; a profile of another topology is
 * refused with the reference's text.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { filter, firstValueFrom, map, toArray } from 'rxjs';
import { afterAll, describe, expect, it } from 'vitest';
import type { AutotuneProfile } from '../../lib/collectives/autotune-profile.js';
import type { SessionEvent } from '../../lib/session/events.js';
import { rejection, startCoordinator } from '../helpers/job.js';
import { runRxccl } from './rxccl-process.js';

const directory = mkdtempSync(join(tmpdir(), 'rxccl-tune-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

/** Declared links: the fingerprint the profile carries is the same in every job that declares them. */
const LINKS = '0-1:2000:20000';

describe('rxccl tune', () => {
  it('measures auto, direct and ring per size, writes the fastest as a profile, and sessions of that topology follow it', async () => {
    const output = join(directory, 'profile.json');
    const env = { GX1_TOPOLOGY_LINKS: LINKS };
    const tuned = await runRxccl(['tune', '-n', '2', '--sizes', '8,256K', '--op', 'allreduce,allgather', '--iters', '1', '-o', output], env);
    expect(tuned.code, tuned.stderr).toBe(0);
    expect(tuned.stdout).toMatch(/# tune: 2 ranks, policy auto \(1 of 3\)/);
    expect(tuned.stdout).toMatch(/# tune: 2 ranks, policy ring \(3 of 3\)/);
    const profile = JSON.parse(readFileSync(output, 'utf8')) as AutotuneProfile;
    expect(profile).toMatchObject({ version: 2, world_size: 2 });
    expect(profile.topology_fingerprint).toMatch(/^[0-9a-f]{16}$/);
    expect(profile.entries.map((entry) => `${entry.operation} ${entry.min_payload_bytes}..${entry.max_payload_bytes}`)).toEqual([
      // All-gather sizes are each rank's input: half the bench's.
      `allreduce 0..${Math.floor(Math.sqrt(8 * 262144))}`,
      `allreduce ${Math.floor(Math.sqrt(8 * 262144)) + 1}..262144`,
      `allgather 0..${Math.floor(Math.sqrt(4 * 131072))}`,
      `allgather ${Math.floor(Math.sqrt(4 * 131072)) + 1}..131072`,
    ]);

    const job = await startCoordinator(2, { transport: 'tcp_peer', timeoutMs: 10_000 });
    try {
      const ranks = await Promise.all([0, 1].map((rank) => job.openRank(rank, { topologyLinks: LINKS, autotuneProfile: output })));
      const large = profile.entries.find((entry) => entry.operation === 'allreduce' && entry.max_payload_bytes === 262144)!;
      const plan = ranks[0]!.plan('allReduce', 1 << 18);
      expect(plan).toMatchObject({ source: 'autotune', estimatedTimeNs: large.measured_time_ns });
      expect(plan.algorithm).toBe(large.algorithm === 'direct' ? 'staged' : large.algorithm);
      const seen = firstValueFrom(
        ranks[0]!.events$.pipe(
          filter((event): event is Extract<SessionEvent, { type: 'collective-finished' }> => event.type === 'collective-finished'),
          map((event) => event.algorithm),
          toArray(),
        ),
      );
      await Promise.all(ranks.map(async (session) => {
        await session.allReduce(new Float32Array(1 << 16));
        await session.close();
      }));
      expect(await seen).toEqual([plan.algorithm]);
    } finally {
      await job.dispose();
    }

    // Another topology: refused at open, naming the option and both fingerprints.
    const other = await startCoordinator(2, { transport: 'tcp_peer', timeoutMs: 10_000 });
    try {
      const errors = await Promise.all([0, 1].map((rank) => rejection(other.openRank(rank, { topologyLinks: '0-1:9:9', autotuneProfile: output }))));
      for (const error of errors) expect(error.message).toMatch(new RegExp(`^autotuneProfile: invalid collective autotune profile: topology fingerprint "${profile.topology_fingerprint}" does not match "[0-9a-f]{16}"$`));
    } finally {
      await other.dispose();
    }
  }, 120_000);
});
