/**
 * `rxccl coordinator` for multi-host jobs: its printed line is all the ranks need (here they run in
 * this process and read that line as their environment).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { sessionOptionsFromEnvironment } from '../../lib/launch/environment.js';
import { openSession } from '../../lib/launch/open-session.js';
import type { RankSession } from '../../lib/session/rank-session.js';
import { type Running, startRxccl } from './rxccl-process.js';

const running: Running[] = [];
afterEach(() => {
  for (const coordinator of running.splice(0)) coordinator.child.kill('SIGKILL');
});

/** Starts `rxccl coordinator` and opens every rank from its line plus GX1_RANK. */
async function startJob(args: string[]): Promise<{ coordinator: Running; line: string; sessions: RankSession[] }> {
  const coordinator = startRxccl(['coordinator', ...args]);
  running.push(coordinator);
  const line = await coordinator.firstLine();
  const variables = Object.fromEntries(line.split(' ').map((pair) => pair.split('=') as [string, string]));
  const worldSize = Number(variables.GX1_WORLD_SIZE);
  const sessions = await Promise.all(
    Array.from({ length: worldSize }, async (_, rank) => openSession(await sessionOptionsFromEnvironment({ ...variables, GX1_RANK: String(rank) }))),
  );
  return { coordinator, line, sessions };
}

describe('rxccl coordinator', () => {
  it('prints the GX1 line and exits 0 when its job completes', async () => {
    const { coordinator, line, sessions } = await startJob(['--world-size', '2', '--bind', '127.0.0.1:0', '--unique-id', '00112233445566778899aabbccddeeff']);
    expect(line).toMatch(/^GX1_COORDINATOR=127\.0\.0\.1:\d+ GX1_UNIQUE_ID=00112233445566778899aabbccddeeff GX1_WORLD_SIZE=2 GX1_SECRET=[0-9a-f]{64}$/);
    const sums = await Promise.all(sessions.map((session) => session.allReduce(Int32Array.of(session.rank + 1))));
    expect(sums.map((sum) => Array.from(sum))).toEqual([[3], [3]]);
    await Promise.all(sessions.map((session) => session.close()));
    const result = await coordinator.finished;
    expect(result.code).toBe(0);
    expect(result.stderr).toBe('rxccl coordinator: job complete: all 2 ranks left\n');
  }, 60_000);

  it('exits 1 with the reason when the job fails', async () => {
    const { coordinator, line, sessions } = await startJob(['--world-size', '2', '--bind', '127.0.0.1:0', '--rails', '2', '--collective-timeout', '60000']);
    // The ranks take the coordinator's collective timeout from the line too.
    expect(line).toMatch(/ GX1_P2P_RAILS=2 GX1_COLLECTIVE_TIMEOUT_MS=60000$/);
    await sessions[1]!.abort('rank 1 gave up');
    const result = await coordinator.finished;
    expect(result.code).toBe(1);
    expect(result.stderr).toBe('rxccl coordinator: job failed: rank 1 aborted: rank 1 gave up\n');
    await Promise.all(sessions.map((session) => session.close()));
  }, 60_000);
});
