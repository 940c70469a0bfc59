/**
 * Issue #33, cases 4 and 5: under `rxccl launch` the failure names its root cause (a rank that
 * never joined, a rank whose lease expired), and the launcher lets every survivor print its own
 * error before it ends the job.
 */
import { describe, expect, it } from 'vitest';
import { runRxccl, tsNode } from '../cli/rxccl-process.js';

const lastLine = (text: string) => text.trimEnd().split('\n').at(-1)!;

describe('rxccl launch reports the root cause', () => {
  it('names the rank that never joined in its last line, after the waiting ranks printed their errors', async () => {
    const result = await runRxccl(['launch', '-n', '4', '--', ...tsNode('spec/hangs/fixtures/never-joins.ts')], { GX1_TIMEOUT_MS: '3000' });
    expect(result.code).toBe(1);
    expect(lastLine(result.stderr)).toMatch(/^rxccl launch: job failed: ranks \[3\] never joined the job \(the others waited 3000 ms for them\); then rank [012] exited with code 1$/);
    for (const rank of [0, 1, 2]) expect(result.stderr).toMatch(new RegExp(`\\[rank ${rank}\\] rank ${rank}: TIMEOUT: .*ranks \\[3\\] have not joined`));
  }, 90_000);

  it('every survivor of a lease expiry prints one line naming the stopped rank before the job ends', async () => {
    const result = await runRxccl(['launch', '-n', '4', '--heartbeat-timeout', '3000', '--', ...tsNode('spec/hangs/fixtures/stopped-rank.ts')]);
    expect(result.code).toBe(1);
    for (const rank of [0, 2, 3]) {
      const lines = result.stderr.split('\n').filter((line) => line.startsWith(`[rank ${rank}] rank ${rank}: `));
      expect(lines, result.stderr).toHaveLength(1);
      expect(lines[0]).toMatch(/rank 1\b/);
    }
    expect(lastLine(result.stderr)).toMatch(/^rxccl launch: job failed: the coordinator failed: .*rank 1\b/);
  }, 90_000);
});
