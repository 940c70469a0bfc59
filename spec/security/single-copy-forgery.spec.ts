/**
 * A member of the job (it holds the job's secret) that forges its single-copy offer, with real
 * processes (docs/architecture.md, threat model; docs/protocol.md 9.9, "Single copy"): rank 0 a
 * plain rank, rank 1 (spec/security/fixtures/forging-rank.ts) offering to be read as another
 * process of their user, one rank 0 could read: a child holding rank 0's challenge at the address
 * offered, or a node process at its ELF header, and to hand over that process's descriptor 1 as a
 * shared-memory ring. Rank 0 answers 0, so it reads nothing of that process, takes nothing of it,
 * and sends nothing of it back in the all-reduce, whose results are right on both. (Honest
 * ranks of one host agree single copy on every pair: spec/process/planes.spec.ts.)
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { Coordinator } from '../../lib/coordinator/coordinator.js';
import { dataPlaneEngine } from '../../lib/kernels/addon.js';
import { UniqueId } from '../../lib/protocol/unique-id.js';
import { cleanUpJobsAfterEach, forgetCallerSettings, type RankProcess, spawnRank } from '../helpers/rank-process.js';

const FIXTURE = 'spec/security/fixtures/forging-rank.ts';
const TIMEOUT_MS = 20_000;

const native = dataPlaneEngine() !== null;
const skipped = native ? '' : ' (skipped: the native addon is not built here)';
if (!native) console.warn('spec/security/single-copy-forgery.spec.ts: skipped: the native addon is not built here');
const python = spawnSync('python3', ['--version']).error === undefined;
if (native && !python) console.warn('spec/security/single-copy-forgery.spec.ts: the forger whose victim holds the challenge is skipped: no python3 here');

forgetCallerSettings();

const { coordinators, spawned } = cleanUpJobsAfterEach();

function describeRank(rank: RankProcess): string {
  return `rank ${rank.rank} (pid ${rank.pid})\nstdout:\n${rank.lines.join('\n')}\nstderr:\n${rank.stderr()}`;
}

describe.skipIf(!native)(`a rank that forges its single-copy offer, in a job of processes${skipped}`, () => {
  const forgeries: [string, string, boolean][] = [
    ['known', 'naming a child of its own that holds rank 0 challenge where the offer says', python],
    ['blind', 'naming the test process at its ELF header (0x400000)', true],
  ];
  for (const [role, what, possible] of forgeries) {
    it.skipIf(!possible)(`rank 1 ${what}: rank 0 answers 0, reads nothing of that process, and both all-reduce results are right`, async () => {
      const uniqueId = UniqueId.random();
      const secret = randomBytes(32).toString('hex');
      const coordinator = await Coordinator.listen({ host: '127.0.0.1', port: 0, uniqueId, worldSize: 2, collectiveTimeoutMs: TIMEOUT_MS, transport: 'tcp_peer', secret });
      coordinators.push(coordinator);
      const ranks = [0, 1].map((rank) =>
        spawnRank({
          script: FIXTURE,
          args: [rank === 0 ? 'honest' : role],
          coordinator: `127.0.0.1:${coordinator.address.port}`,
          uniqueId: uniqueId.toHex(),
          rank,
          worldSize: 2,
          timeoutMs: TIMEOUT_MS,
          env: { GX1_COLLECTIVE_TRANSPORT: 'tcp_peer', GX1_SECRET: secret, GX1_DEBUG: 'info' },
        }),
      );
      spawned.push(...ranks);
      const exits = await Promise.all(ranks.map((rank) => rank.exited));
      expect(exits, ranks.map(describeRank).join('\n')).toEqual(ranks.map(() => ({ code: 0, signal: null })));
      const [honest, forger] = ranks as [RankProcess, RankProcess];
      expect(forger.lines, describeRank(forger)).toContain('ANSWER 0');
      for (const rank of ranks) expect(rank.lines, describeRank(rank)).toContain(`RESULT allreduce ${JSON.stringify({ count: 256 * 1024, wrong: 0 })}`);
      // Said at close (GX1_DEBUG=info): rank 0 read no peer's memory, and no peer read its; it took
      // no ring out of the process the offer named, and says why.
      expect(honest.stderr(), describeRank(honest)).toContain('rank 0 single copy: read from ranks [], read by ranks []');
      expect(honest.stderr(), describeRank(honest)).toContain('rank 0 shared memory: reads rings of ranks [], read by ranks []');
      expect(honest.stderr(), describeRank(honest)).toContain('rank 0 keeps TCP with rank 1: cannot verify the process offering it');
      await expect(coordinator.done).resolves.toBeUndefined();
    }, 60_000);
  }
});
