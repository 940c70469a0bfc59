/**
 * The native-ceiling bench (bench/native-ceiling) end to end on a tiny plan: it builds the
 * prototype, runs rxccl on both its data planes and both prototypes as processes (each checks one all-reduce result before
 * timing, uneven segments at 3 ranks included) and prints a row per cell with the ratios.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../../lib/kernels/addon.js';

const root = packageRoot();
const compiler = spawnSync('g++', ['--version'], { stdio: 'ignore' }).error === undefined;
if (!compiler) console.log('native-ceiling bench test skipped: no g++ on PATH to build its prototype');

describe('native-ceiling bench', () => {
  it.skipIf(!compiler)('checks and times rxccl (js and native data planes) and the prototype in turn, a row per cell with the ratios', () => {
    const run = spawnSync(join(root, 'node_modules', '.bin', 'tsx'), [join(root, 'bench', 'native-ceiling', 'run.ts'), '-n', '3', '--sizes', '8,131076', '--rounds', '1', '--calls', '5'], {
      encoding: 'utf8',
      timeout: 120_000,
    });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    const rows = run.stdout.split('\n').filter((line) => /^\| 3 \| \d+ \|/.test(line));
    expect(rows.map((row) => row.split('|')[2]!.trim())).toEqual(['8', '131076']);
    for (const row of rows) {
      const ratios = row.split('|').slice(-3, -1).map((cell) => Number(cell.trim()));
      expect(ratios.every((ratio) => Number.isFinite(ratio) && ratio > 0)).toBe(true);
    }
  }, 150_000);
});
