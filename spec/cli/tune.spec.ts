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
  it('measures auto, direct and ring per size in turn, keeps what beat auto beyond the spread, writes the profile, and sessions of that topology follow it', async () => {
    const output = join(directory, 'profile.json');
    const env = { GX1_TOPOLOGY_LINKS: LINKS };
    // A relative -o, from the user's directory: the profile goes there, and its absolute path is printed.
    const tuned = await runRxccl(['tune', '-n', '2', '--sizes', '8,256K', '--op', 'allreduce,allgather', '--iters', '1', '--samples', '2', '-o', 'profile.json'], env, directory);
    expect(tuned.code, tuned.stderr).toBe(0);
    const lines = tuned.stdout.split('\n');
    expect(lines[0]).toBe('# tune: 2 ranks, allreduce, allgather at 8 B, 256 KiB; policies auto, direct, ring, 2 samples each: 6 runs');
    // The policies in turn, sample after sample.
    expect(lines.filter((line) => line.includes(', policy '))).toEqual(
      [1, 2].flatMap((sample) => ['auto', 'direct', 'ring'].map((policy, index) => `# tune: sample ${sample} of 2, policy ${policy} (run ${(sample - 1) * 3 + index + 1} of 6)`)),
    );
    // One decision per operation and size, with each median and min-max, and why.
    const spread = String.raw`[a-z-]+ \d+\.\d\d (?:us|ms) \(\d+\.\d\d-\d+\.\d\d\)`;
    const decision = new RegExp(
      String.raw`^# tune: (allreduce|allgather) (8 B|256 KiB): ` +
        `(?:${spread} beats ${spread}: kept|${spread} (?:within the spread of|no faster than) ${spread}: default kept|${spread}, every policy ran it: default kept)$`,
    );
    const decisions = lines.filter((line) => decision.test(line));
    expect(decisions.map((line) => decision.exec(line)!.slice(1, 3).join(' '))).toEqual(['allreduce 8 B', 'allreduce 256 KiB', 'allgather 8 B', 'allgather 256 KiB']);
    expect(lines).toContain(`# use it: GX1_COLLECTIVE_AUTOTUNE_PROFILE=${output}`);
    expect(lines.find((line) => line.startsWith('# tune: wrote '))?.startsWith(`# tune: wrote ${output}: 4 entries (`)).toBe(true);
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

    // rxccl bench in the same directory reads it by the relative path (its ranks run there too), and runs its choice.
    const benched = await runRxccl(['bench', '-n', '2', '--op', 'allreduce', '--sizes', '256K', '--iters', '1', '-w', '1'], { ...env, GX1_COLLECTIVE_AUTOTUNE_PROFILE: 'profile.json' }, directory);
    expect(benched.code, benched.stderr).toBe(0);
    const chosen = profile.entries.find((entry) => entry.operation === 'allreduce' && entry.max_payload_bytes === 262144)!.algorithm;
    expect(benched.stdout).toContain(`# from 262144 B: ${chosen === 'direct' ? 'staged' : chosen} on `);

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
  }, 300_000);
});
