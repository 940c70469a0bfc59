/**
 * Issue #33, cases 4 and 5: under `rxccl launch` the failure names its root cause (a rank that
 * never joined, a rank whose lease expired), and the launcher lets every survivor print its own
 * error before it ends the job. Issue #49 item 8: a rank killed by a signal, not the survivor's
 * abort that the launcher saw first.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runRxccl } from '../cli/rxccl-process.js';
import { compiledNode } from '../helpers/compiled-script.js';

const lastLine = (text: string) => text.trimEnd().split('\n').at(-1)!;

describe('rxccl launch reports the root cause', () => {
  it('names the rank that never joined in its last line, after the waiting ranks printed their errors', async () => {
    const result = await runRxccl(['launch', '-n', '4', '--', ...compiledNode('spec/hangs/fixtures/never-joins.ts')], { GX1_TIMEOUT_MS: '3000' });
    expect(result.code).toBe(1);
    expect(lastLine(result.stderr)).toMatch(/^rxccl launch: job failed: ranks \[3\] never joined the job \(the others waited 3000 ms for them\); then rank [012] exited with code 1$/);
    for (const rank of [0, 1, 2]) expect(result.stderr).toMatch(new RegExp(`\\[rank ${rank}\\] rank ${rank}: TIMEOUT: .*ranks \\[3\\] have not joined`));
  }, 90_000);

  it('every survivor of a lease expiry prints one line naming the stopped rank before the job ends', async () => {
    const result = await runRxccl(['launch', '-n', '4', '--heartbeat-timeout', '3000', '--', ...compiledNode('spec/hangs/fixtures/stopped-rank.ts')]);
    expect(result.code).toBe(1);
    for (const rank of [0, 2, 3]) {
      const lines = result.stderr.split('\n').filter((line) => line.startsWith(`[rank ${rank}] rank ${rank}: `));
      expect(lines, result.stderr).toHaveLength(1);
      expect(lines[0]).toMatch(/rank 1\b/);
    }
    expect(lastLine(result.stderr)).toMatch(/^rxccl launch: job failed: the coordinator failed: .*rank 1\b/);
  }, 90_000);

  it('names the rank killed by SIGKILL, though the survivors\' abort reached the launcher before its exit did', async () => {
    const marks = mkdtempSync(join(tmpdir(), 'rxccl-killed-'));
    try {
      // Rank 2's Node process dies at once; the shell the launcher waits on dies of SIGKILL only after
      // rank 0 failed (so the coordinator has its abort, `rank 0 aborted: direct peer rank 2 left`).
      const rank = compiledNode('spec/hangs/fixtures/killed-rank.ts').join(' ');
      const wrapper = `${rank}; status=$?; if [ "$GX1_RANK" = 2 ]; then while [ ! -e "$MARK_DIR/rank-0-failed" ]; do sleep 0.05; done; sleep 0.2; kill -KILL $$; fi; exit $status`;
      const result = await runRxccl(['launch', '-n', '3', '--', 'sh', '-c', wrapper], { MARK_DIR: marks });
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(/^\[rank 0\] rxccl: [A-Z_]+: .*rank 2\b/m);
      expect(lastLine(result.stderr)).toBe('rxccl launch: job failed: rank 2 was killed by SIGKILL');
    } finally {
      rmSync(marks, { recursive: true, force: true });
    }
  }, 90_000);
});
