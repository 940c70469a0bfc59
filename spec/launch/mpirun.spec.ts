/** A real `mpirun` job, when Open MPI is installed: ranks find everything in Open MPI's variables, and say what they must once. */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../cli/rxccl-process.js';

const mpirun = spawnSync('mpirun', ['--version'], { encoding: 'utf8' });
const skipped = mpirun.error !== undefined || mpirun.status !== 0 ? 'mpirun is not installed (apt-get install openmpi-bin)' : null;
if (skipped !== null) console.log(`skipping the mpirun test: ${skipped}`);

describe('under mpirun', () => {
  it.skipIf(skipped !== null)(`runs a job from Open MPI's variables alone${skipped === null ? '' : ` (skipped: ${skipped})`}`, () => {
    const result = spawnSync(
      'mpirun',
      ['--allow-run-as-root', '--oversubscribe', '-np', '2', 'node', '--import', 'tsx', 'spec/launch/fixtures/rank-from-environment.ts'],
      { cwd: ROOT, encoding: 'utf8', timeout: 60_000 },
    );
    expect(result.stderr).not.toMatch(/Error/);
    expect(result.status, `stdout:\n${result.stdout}\nstderr:\n${result.stderr}`).toBe(0);
    expect(result.stdout).toContain('rank 0 of 2: sum 3');
    expect(result.stdout).toContain('rank 1 of 2: sum 3');
  }, 90_000);

  it.skipIf(skipped !== null)(`says RXCCL_NO_SECRET once for the job, in one line from rank 0, without Node's --trace-warnings hint (#49 item 1)${skipped === null ? '' : ` (skipped: ${skipped})`}`, () => {
    const { GX1_SECRET: _secret, GX1_SECRET_FILE: _file, GX1_DEBUG: _debug, ...env } = process.env;
    const result = spawnSync(
      'mpirun',
      ['--allow-run-as-root', '--oversubscribe', '-np', '3', 'node', '--import', 'tsx', 'spec/launch/fixtures/rank-from-environment.ts'],
      { cwd: ROOT, encoding: 'utf8', timeout: 60_000, env },
    );
    expect(result.status).toBe(0);
    expect(result.stdout).toContain('rank 2 of 3: sum 6');
    const lines = result.stderr.split('\n').filter((line) => line.includes('RXCCL_NO_SECRET') || line.includes('--trace-warnings') || line.startsWith('(node:'));
    expect(lines).toEqual([expect.stringMatching(/^rxccl\[\d+\] WARN \[RXCCL_NO_SECRET\] rxccl derived this job's unique id from Open MPI's environment and no job secret is set: .* or GX1_SECRET_FILE to a file holding it\.$/)]);
  }, 90_000);
});
