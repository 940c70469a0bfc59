/**
 * Every example runs as users run it, under `rxccl launch` in a child process, so none rots.
 * (Ranks run with `node --import tsx`, one process each, where the docs say `tsx FILE`.)
 */
import { describe, expect, it } from 'vitest';
import { runRxccl, tsNode } from '../cli/rxccl-process.js';

/** Each rank's lines, without the prefix, in order; warnings on stderr are not part of it. */
function linesOf(output: string, rank: number): string[] {
  const prefix = `[rank ${rank}] `;
  return output
    .split('\n')
    .filter((line) => line.startsWith(prefix))
    .map((line) => line.slice(prefix.length));
}

describe.concurrent('examples', () => {
  it('allreduce.ts: every rank gets the sum and the max, and checks them', async () => {
    const result = await runRxccl(['launch', '-n', '4', '--', ...tsNode('examples/allreduce.ts')]);
    expect(result.stderr).not.toContain('job failed');
    expect(result.code).toBe(0);
    for (const rank of [0, 1, 2, 3]) {
      const sent = [1, 2, 3, 4].map((value) => value * (rank + 1)).join(', ');
      expect(linesOf(result.stdout, rank)).toEqual([`rank ${rank}/4: sent [${sent}] -> sum [10, 20, 30, 40], max rank 3 ok`]);
    }
  }, 60_000);

  it('data-parallel-sgd.ts: the loss falls, and is identical on every rank', async () => {
    const result = await runRxccl(['launch', '-n', '2', '--', ...tsNode('examples/data-parallel-sgd.ts')]);
    expect(result.stderr).not.toContain('job failed');
    expect(result.code).toBe(0);
    const [zero, ...others] = [0, 1].map((rank) => linesOf(result.stdout, rank));
    for (const lines of others) expect(lines).toEqual(zero);
    const losses = zero!.filter((line) => line.startsWith('epoch')).map((line) => Number(line.split(' loss ')[1]));
    expect(losses).toHaveLength(8);
    expect(losses.at(-1)!).toBeLessThan(losses[0]! / 10);
    expect(zero!.at(-1)).toMatch(/identical on all 2 ranks: true$/);
  }, 60_000);

  it('pipeline.ts: the stream of tensors is reduced in order, with heartbeats alongside', async () => {
    const result = await runRxccl(['launch', '-n', '3', '--', ...tsNode('examples/pipeline.ts')]);
    expect(result.stderr).not.toContain('job failed');
    expect(result.code).toBe(0);
    for (const rank of [0, 1, 2]) expect(linesOf(result.stdout, rank).at(-1)).toMatch(new RegExp(`^rank ${rank}: 12 steps reduced, 0 mismatches, \\d+ heartbeats`));
    expect(linesOf(result.stdout, 0)).toContain('step 4: sum [15, 18, 21, 24, ...]');
  }, 60_000);

  it('elastic-sgd.ts under --keep-going: rank 3 dies at step 5, the others shrink and finish at the mean of their targets', async () => {
    const result = await runRxccl(['launch', '--keep-going', '-n', '4', '--', ...tsNode('examples/elastic-sgd.ts', '--kill-rank', '3', '--kill-step', '5')]);
    expect(result.stderr).not.toContain('job failed');
    expect(result.stderr).toContain('rxccl launch: rank 3 was killed by SIGKILL; the job goes on without it (--keep-going)');
    expect(result.code).toBe(0);
    for (const rank of [0, 1, 2]) {
      expect(linesOf(result.stdout, rank)).toEqual([
        `rank 3 lost; going on with ranks [0,1,2] (rank ${rank} of 3)`,
        `rank ${rank}: 40 steps on ranks [0,1,2]: model [2.0000, 4.0000, 6.0000, 8.0000], the mean of their targets`,
      ]);
    }
    expect(linesOf(result.stdout, 3)).toEqual([]);
  }, 60_000);

  it('elastic-train.ts under --keep-going --replace 1: rank 2 dies, the others shrink, a replacement joins, and all end with the model of an uninterrupted run', async () => {
    const result = await runRxccl([
      'launch', '--keep-going', '--replace', '1', '-n', '4', '--',
      ...tsNode('examples/elastic-train.ts', '--kill-rank', '2', '--kill-step', '10', '--steps', '40', '--min-ranks', '4'),
    ]);
    expect(result.stderr).not.toContain('job failed');
    expect(result.stderr).toContain('rxccl launch: rank 2 was killed by SIGKILL; the job goes on without it (--keep-going)');
    expect(result.stderr).toContain('rxccl launch: started replacement 1 for rank 2; the job admits it at its next step boundary (grow())');
    expect(result.code).toBe(0);
    const [death] = linesOf(result.stdout, 2);
    const diedAt = Number(/^rank 2 dies at step 10 at (\d+)$/.exec(death!)![1]);
    const [shrunk, grown, final] = linesOf(result.stdout, 0);
    const resumedAt = Number(/^rank 2 lost: 3 ranks from (\d+) \(last step at \d+\)$/.exec(shrunk!)![1]);
    // The others go on without it at once (the process's sockets close with it): a generous bound.
    expect(resumedAt - diedAt).toBeLessThan(5_000);
    expect(grown).toMatch(/^ranks \[3\] joined: 4 ranks from \d+/);
    const replacement = result.stdout.split('\n').filter((line) => line.startsWith('[replacement 1] '));
    for (const lines of [[final!], linesOf(result.stdout, 1).slice(-1), linesOf(result.stdout, 3).slice(-1), replacement.slice(-1).map((line) => line.slice('[replacement 1] '.length))]) {
      expect(lines).toEqual([expect.stringMatching(/^final model -?\d+\.\d{9} \(relative difference to an uninterrupted run \d\.\d\de-\d+\)$/)]);
    }
  }, 120_000);

  it('pipeline.ts --fail-rank 1: the failure aborts every rank and the launcher names it', async () => {
    const result = await runRxccl(['launch', '-n', '2', '--', ...tsNode('examples/pipeline.ts', '--fail-rank', '1')]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('rxccl launch: job failed: the coordinator failed: rank 1 aborted: injected failure at step 3');
  }, 60_000);
});
