/** The local launcher as a library: environment, escalation to SIGKILL, no process left behind. */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { LocalJob, type LocalJobOptions } from '../../lib/launch/local-job.js';
import { alive, ROOT } from '../cli/rxccl-process.js';

const directories: string[] = [];
afterEach(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

/** Runs a job, collecting what its ranks print. */
async function run(options: Omit<LocalJobOptions, 'stdout' | 'stderr'>) {
  const stdout = new PassThrough();
  let text = '';
  stdout.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
  const job = await LocalJob.start({ ...options, stdout, stderr: new PassThrough().resume() });
  const outcome = await job.outcome;
  return { job, outcome, stdout: text };
}

/** A job whose rank R runs the shell script `scripts[R]` (GX1_RANK tells it which it is). */
function shellJob(scripts: readonly string[], options: Partial<LocalJobOptions> = {}) {
  const script = scripts.map((body, rank) => `if [ "$GX1_RANK" = ${rank} ]; then ${body}; fi`).join('\n');
  return run({ worldSize: scripts.length, command: 'sh', args: ['-c', script], ...options });
}

describe('LocalJob', () => {
  it('gives every rank the GX1 variables of one job on a loopback coordinator', async () => {
    const print = `console.log(JSON.stringify(Object.fromEntries(Object.entries(process.env).filter(([name]) => name.startsWith('GX1_')))))`;
    const { job, outcome, stdout } = await run({ worldSize: 2, rails: 2, command: process.execPath, args: ['-e', print], leaveGraceMs: 100 });
    const seen = [0, 1].map((rank) => JSON.parse(stdout.split('\n').find((line) => line.startsWith(`[rank ${rank}] `))!.slice(9)) as Record<string, string>);
    expect(seen[1]).toEqual({
      GX1_COORDINATOR: `127.0.0.1:${job.coordinator.address.port}`,
      GX1_UNIQUE_ID: job.coordinator.uniqueId.toHex(),
      GX1_RANK: '1',
      GX1_WORLD_SIZE: '2',
      GX1_LOCAL_RANK: '1',
      GX1_LOCAL_WORLD_SIZE: '2',
      GX1_P2P_RAILS: '2',
      GX1_COLLECTIVE_TRANSPORT: 'tcp_peer',
      GX1_SECRET: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    expect(seen[0]!.GX1_RANK).toBe('0');
    // One fresh secret per job, the same for every rank.
    expect(seen[0]!.GX1_SECRET).toBe(seen[1]!.GX1_SECRET);
    // Nobody joined, so the job did not complete although both ranks exited 0.
    expect(outcome).toEqual({ ok: false, failure: expect.stringContaining('did not see every rank join and leave'), interruptedBy: null, lost: [] });
  }, 30_000);

  it('takes rails and transport from GX1_P2P_RAILS and GX1_COLLECTIVE_TRANSPORT when not given, as rxccl coordinator does; given ones win', async () => {
    const print = `console.log(process.env.GX1_COLLECTIVE_TRANSPORT + ' ' + process.env.GX1_P2P_RAILS)`;
    const env = { ...process.env, GX1_COLLECTIVE_TRANSPORT: 'tcp_peer', GX1_P2P_RAILS: '3' };
    const fromEnvironment = await run({ worldSize: 1, command: process.execPath, args: ['-e', print], leaveGraceMs: 100, env });
    expect([fromEnvironment.job.coordinator.transport, fromEnvironment.job.coordinator.rails]).toEqual(['tcp_peer', 3]);
    expect(fromEnvironment.stdout).toContain('[rank 0] tcp_peer 3');
    const given = await run({ worldSize: 1, rails: 2, transport: 'tcp_host_staged', command: process.execPath, args: ['-e', print], leaveGraceMs: 100, env });
    expect(given.stdout).toContain('[rank 0] tcp_host_staged 2');
  }, 30_000);

  it('names a rank killed by a signal, and one whose command cannot start', async () => {
    const killed = await run({ worldSize: 2, command: 'sh', args: ['-c', 'if [ "$GX1_RANK" = 1 ]; then kill -KILL $$; fi; sleep 30'] });
    expect(killed.outcome).toEqual({ ok: false, failure: 'rank 1 was killed by SIGKILL', interruptedBy: null, lost: [] });
    const missing = await run({ worldSize: 1, command: 'rxccl-no-such-command', args: [] });
    expect(missing.outcome).toEqual({ ok: false, failure: 'rank 0 could not start: spawn rxccl-no-such-command ENOENT', interruptedBy: null, lost: [] });
  }, 30_000);

  it('names why a rank failed by its own rxccl error line, read once its output is drained', async () => {
    const { outcome } = await shellJob(['sleep 30', 'echo "rxccl: REMOTE_ABORT: an earlier line" >&2; echo "a line of the program" >&2; echo "rxccl: INVALID_CONFIGURATION: GX1_DATA_PLANE must be one of auto, native, js" >&2; exit 1'], { failureGraceMs: 100 });
    expect(outcome.failure).toBe('rank 1 failed: INVALID_CONFIGURATION: GX1_DATA_PLANE must be one of auto, native, js');
  }, 30_000);

  it('blames a rank killed by a signal, not the survivor whose failure naming it was seen first (#49 item 8)', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'rxccl-local-job-'));
    directories.push(directory);
    const told = join(directory, 'told');
    // Rank 0 fails first, naming rank 1; rank 1 is killed only once rank 0 has exited.
    const { outcome } = await shellJob([
      `echo "rxccl: REMOTE_ABORT: direct peer rank 1 left" >&2; touch ${told}; exit 1`,
      `while [ ! -e ${told} ]; do sleep 0.05; done; sleep 0.3; kill -KILL $$`,
    ]);
    expect(outcome.failure).toBe('rank 1 was killed by SIGKILL');
  }, 30_000);

  it('does not blame a rank the launcher itself ended, though the failure names it', async () => {
    const { outcome } = await shellJob(['echo "rxccl: REMOTE_ABORT: direct peer rank 1 left" >&2; exit 1', 'sleep 30'], { failureGraceMs: 100 });
    expect(outcome.failure).toBe('rank 0 failed: REMOTE_ABORT: direct peer rank 1 left');
  }, 30_000);

  it('passes 64 ranks\' output on through one listener on each destination (no MaxListenersExceededWarning)', async () => {
    const warnings: Error[] = [];
    const warned = (warning: Error) => warnings.push(warning);
    process.on('warning', warned);
    try {
      const stdout = new PassThrough();
      const stderr = new PassThrough();
      let text = '';
      stdout.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
      stderr.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
      const events = ['unpipe', 'error', 'close', 'finish', 'drain'] as const;
      const before = events.map((event) => stdout.listenerCount(event) + stderr.listenerCount(event));
      const job = await LocalJob.start({ worldSize: 64, command: 'sh', args: ['-c', 'echo "out $GX1_RANK"; echo "err $GX1_RANK" >&2'], stdout, stderr, leaveGraceMs: 100 });
      expect(events.map((event) => stdout.listenerCount(event) + stderr.listenerCount(event))).toEqual(before);
      await job.outcome;
      const lines = text.split('\n');
      for (let rank = 0; rank < 64; rank++) expect(lines).toEqual(expect.arrayContaining([`[rank ${rank}] out ${rank}`, `[rank ${rank}] err ${rank}`]));
      expect(warnings.filter((warning) => warning.name === 'MaxListenersExceededWarning').map((warning) => warning.message)).toEqual([]);
    } finally {
      process.off('warning', warned);
    }
  }, 60_000);

  it('escalates to SIGKILL for ranks that ignore SIGTERM, and leaves no process behind', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'rxccl-local-job-'));
    directories.push(directory);
    const started = Date.now();
    const { outcome } = await run({
      worldSize: 3,
      command: process.execPath,
      args: [join(ROOT, 'spec/cli/fixtures/hold.mjs')],
      env: { ...process.env, PID_DIR: directory, FAIL_RANK: '2', FAIL_CODE: '7', IGNORE_SIGTERM: '1', SPAWN_CHILD: '1' },
      killGraceMs: 300,
    });
    expect(outcome).toEqual({ ok: false, failure: 'rank 2 exited with code 7', interruptedBy: null, lost: [] });
    expect(Date.now() - started).toBeLessThan(15_000);
    const pids = readdirSync(directory).flatMap((name) => readFileSync(join(directory, name), 'utf8').split(' ').map(Number));
    expect(pids).toHaveLength(6);
    expect(pids.filter(alive)).toEqual([]);
  }, 30_000);
});
