/** A real `mpirun` job, when Open MPI is installed: ranks find everything in Open MPI's variables. */
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
    expect(result.status).toBe(0);
    expect(result.stdout).toContain('rank 0 of 2: sum 3');
    expect(result.stdout).toContain('rank 1 of 2: sum 3');
  }, 90_000);
});
