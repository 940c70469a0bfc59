/**
 * Exiting while kernels run must not crash: a process calling process.exit, a worker thread
 * calling process.exit, and a worker thread terminated from outside, all mid-kernel. Each runs
 * in a child process so a crash shows up as its exit status instead of taking vitest down.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../../lib/kernels/addon.js';
import { kernelBackend } from '../../lib/kernels/index.js';

/** Runs a fixture; its stderr comes back without the fallback warning of a reference-kernel run. */
function runFixture(name: string) {
  const script = fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));
  const child = spawnSync(process.execPath, ['--import', 'tsx', script], { cwd: packageRoot(), encoding: 'utf8', timeout: 30_000 });
  const stderr = child.stderr
    .split('\n')
    .filter((line) => !line.includes('[RXCCL_REFERENCE_KERNELS]') && !line.includes('node --trace-warnings'))
    .join('\n');
  return { status: child.status, signal: child.signal, stdout: child.stdout, stderr };
}

describe('exiting mid-kernel', () => {
  it('process.exit(0) while kernels run exits 0', () => {
    const child = runFixture('exit-mid-kernel.ts');
    expect({ status: child.status, signal: child.signal, stderr: child.stderr }).toEqual({ status: 0, signal: null, stderr: '' });
  });

  it.skipIf(kernelBackend() !== 'native')('worker threads stopping mid-kernel leave the process and the addon working', () => {
    const child = runFixture('worker-exit-mid-kernel.ts');
    expect({ status: child.status, signal: child.signal, stderr: child.stderr, stdout: child.stdout }).toEqual({
      status: 0,
      signal: null,
      stderr: '',
      stdout: 'ok\n',
    });
  });
});
