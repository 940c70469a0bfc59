/** `openSession({ timeoutMs })`: options given beside the launcher's environment override it. */
import { describe, expect, it } from 'vitest';
import { runRxccl, tsNode } from '../cli/rxccl-process.js';

const RANK = tsNode('spec/launch/fixtures/partial-options.ts');

describe('openSession with partial options', () => {
  it('takes the job from the environment', async () => {
    const result = await runRxccl(['launch', '-n', '2', '--', ...RANK], { TIMEOUT_MS: '20000' });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('[rank 0] rank 0 of 2: sum 3');
    expect(result.stdout).toContain('[rank 1] rank 1 of 2: sum 3');
  }, 60_000);

  it('and its own timeout over the default', async () => {
    const started = Date.now();
    const result = await runRxccl(['launch', '-n', '2', '--', ...RANK], { TIMEOUT_MS: '1000', SKIP_RANK: '1' });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('rank 0 waiting for READY on');
    expect(Date.now() - started).toBeLessThan(30_000);
  }, 60_000);
});
