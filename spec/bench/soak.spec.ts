/**
 * The soak and fault suite (bench/soak/faults, #33) in brief: three short epochs, one on each
 * plane (native, JS, coordinator), each ending with a rank SIGKILLed. Every result the ranks
 * checked must be right, every survivor's error must name the killed rank, and the driver must
 * exit 0. The half-hour run and its numbers: bench/README.md.
 */
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import type { SoakSummary } from '../../bench/soak/faults/summary.js';
import { ROOT } from '../cli/rxccl-process.js';

function runSoak(args: readonly string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/soak/faults/run.ts', ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text));
  child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}

describe('soak and faults', () => {
  it('kills a rank in each of three epochs: no wrong result, every survivor names the killed rank, exit 0', async () => {
    const { code, stdout, stderr } = await runSoak(['--minutes', '0.2', '--kill-every', '4', '--json']);
    // stderr has the epochs as they ended: what a failure needs to be read.
    expect(stdout, stderr).not.toBe('');
    const { summary } = JSON.parse(stdout) as { summary: SoakSummary };
    expect(summary.epochs).toBe(3);
    expect(summary.perPlane.map((plane) => plane.plane)).toEqual(['native', 'js', 'coordinator']);
    for (const plane of summary.perPlane) expect(plane.ops, plane.plane).toBeGreaterThan(0);
    expect(summary.perPlane.map((plane) => plane.wrong)).toEqual([0, 0, 0]);
    expect(summary.survivors).toBe(9);
    expect(summary.survivorsNamingKilledRank, stderr).toBe(9);
    expect(summary.failures).toEqual([]);
    expect(code, stderr).toBe(0);
  }, 120_000);
});
