/**
 * A rank that forgets `session.close()` must not hang its job: its process exits after its work,
 * as a torch rank's does, whether the coordinator runs in the launcher or in rank 0.
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { RankSession } from '../../lib/session/rank-session.js';
import { ROOT, runRxccl } from '../cli/rxccl-process.js';
import { compiledNode } from '../helpers/compiled-script.js';
import { startJob, type TestJob } from '../helpers/job.js';

const FIXTURE = 'spec/hangs/fixtures/no-close.ts';
/** Far more than the job needs (a second or two), far less than a hang. */
const BOUND_MS = 40_000;

const EXPECTED = ['rank 0 received 41', 'rank 1 received 42 from itself', 'rank 0: sum 3', 'rank 1: sum 3'];

/**
 * A MASTER_PORT whose next port, where rank 0 binds the coordinator (torchrun.ts: MASTER_PORT
 * itself is torch's store's), nobody holds right now: the port the kernel just gave, minus one.
 * A free MASTER_PORT says nothing of the port above it, which a full run's sockets may hold (rank
 * 0 then exits 1 on its bind, and rank 1 waits for a coordinator that never comes).
 */
async function freeMasterPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port - 1;
}

/** Runs one rank as torchrun would start it; resolves with its exit code and output. */
function torchrunRank(rank: number, port: number) {
  const [command, ...args] = compiledNode(FIXTURE);
  const child = spawn(command!, args, {
    cwd: ROOT,
    env: { ...process.env, RANK: String(rank), WORLD_SIZE: '2', LOCAL_RANK: String(rank), MASTER_ADDR: '127.0.0.1', MASTER_PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (text: string) => (output += text));
  child.stderr.setEncoding('utf8').on('data', (text: string) => (output += text));
  const timer = setTimeout(() => child.kill('SIGKILL'), BOUND_MS);
  return new Promise<{ code: number | null; output: string }>((resolve) =>
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    }),
  );
}

describe('a rank that never closes its session', () => {
  const variants: Record<string, string[]> = {
    tcp_host_staged: ['--transport', 'tcp_host_staged'],
    tcp_peer: ['--transport', 'tcp_peer'],
    // A lease fails a rank that disconnects without LEAVE: the session must leave before exiting.
    'heartbeat lease': ['--heartbeat-timeout', '20000'],
  };
  for (const [variant, flags] of Object.entries(variants)) {
    it(`exits after its work under rxccl launch (${variant})`, async () => {
      const started = Date.now();
      const result = await runRxccl(['launch', '-n', '2', ...flags, '--', ...compiledNode(FIXTURE)]);
      expect(result.stderr).not.toContain('rxccl launch: job failed');
      expect(result.code).toBe(0);
      for (const line of EXPECTED) expect(result.stdout).toContain(line);
      expect(Date.now() - started).toBeLessThan(BOUND_MS);
    }, 2 * BOUND_MS);
  }

  it('exits, and so does rank 0 with the coordinator it hosts, under torchrun-style variables', async () => {
    const port = await freeMasterPort();
    const started = Date.now();
    const ranks = await Promise.all([torchrunRank(0, port), torchrunRank(1, port)]);
    const output = ranks.map((rank) => rank.output).join('');
    expect(ranks.map((rank) => rank.code), output).toEqual([0, 0]);
    for (const line of EXPECTED) expect(output).toContain(line);
    expect(Date.now() - started).toBeLessThan(BOUND_MS);
  }, 2 * BOUND_MS);
});

describe('leaving before the process exits', () => {
  let job: TestJob | null = null;
  afterEach(async () => {
    await job?.dispose();
  });

  it("closes idle sessions on the process's beforeExit, and stops listening once they are closed", async () => {
    const before = process.listenerCount('beforeExit');
    job = await startJob(2);
    const { sessions } = job as TestJob & { sessions: RankSession[] };
    // One listener for every session of the process.
    expect(process.listenerCount('beforeExit')).toBe(before + 1);
    await sessions[0]!.close();
    expect(process.listenerCount('beforeExit')).toBe(before + 1);
    // As Node does when nothing is left to run: the other session leaves, and the job ends cleanly.
    process.emit('beforeExit', 0);
    await job.coordinator.done;
    expect(process.listenerCount('beforeExit')).toBe(before);
  }, 30_000);
});
