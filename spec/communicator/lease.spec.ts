import { expect, it } from 'vitest';
import { runRxccl } from '../cli/rxccl-process.js';
import { compiledNode } from '../helpers/compiled-script.js';

/** A rank that is lost by its lease, not by a closed connection: the survivors shrink it away. */
it('rxccl launch --keep-going: a stopped rank loses its lease, the others are told, shrink and finish; the stopped rank is ended', async () => {
  const result = await runRxccl(['launch', '--keep-going', '--heartbeat-timeout', '3000', '-n', '4', '--', ...compiledNode('spec/hangs/fixtures/stopped-rank-shrinks.ts')]);
  expect(result.stderr).not.toContain('job failed');
  expect(result.code).toBe(0);
  for (const rank of [0, 2, 3]) {
    const lines = result.stdout.split('\n').filter((line) => line.startsWith(`[rank ${rank}] `));
    expect(lines, result.stdout).toEqual([
      expect.stringMatching(new RegExp(`^\\[rank ${rank}\\] step 20: rank 1 was lost \\(heartbeat lease for rank 1; last contact \\d+ ms ago\\): rank ${rank} of the job's world cannot complete; shrink\\(\\) continues with the ranks left$`)),
      `[rank ${rank}] done: 40 steps, last sum 8 over ranks [0,2,3]`,
    ]);
  }
  expect(result.stderr).toMatch(/rxccl launch: rank 1 was lost \(heartbeat lease for rank 1; last contact \d+ ms ago\) and was still running when the others were done: ended/);
}, 90_000);
