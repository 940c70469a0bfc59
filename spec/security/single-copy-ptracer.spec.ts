/**
 * A rank that offers its memory for single copy lets any process of its user read it (prctl
 * PR_SET_PTRACER_ANY) only where Yama's ptrace scope is 1, and only while a plane that offers is
 * open: the last one to close takes it back (docs/architecture.md, threat model; native/single_copy.h
 * PtracerGrant). Two engines in one process (spec/security/fixtures/offering-planes.ts) run under
 * strace, which shows every PR_SET_PTRACER call between the fixture's marks.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { dataPlaneEngine } from '../../lib/kernels/addon.js';
import { REPOSITORY_ROOT } from '../helpers/rank-process.js';

const FIXTURE = 'spec/security/fixtures/offering-planes.ts';
const YAMA = '/proc/sys/kernel/yama/ptrace_scope';

const native = dataPlaneEngine() !== null;
// strace itself traces by ptrace, which a container may refuse.
const strace = spawnSync('strace', ['-qq', '-e', 'trace=none', 'true']).status === 0;
const skipped = !native ? ' (skipped: the native addon is not built here)' : !strace ? ' (skipped: no strace here, or it may not trace)' : '';
if (skipped !== '') console.warn(`spec/security/single-copy-ptracer.spec.ts:${skipped}`);
const scope = existsSync(YAMA) ? Number(readFileSync(YAMA, 'utf8')) : null;

describe('the leave to read a rank offering its memory', () => {
  it.skipIf(skipped !== '')(`is given only under Yama's ptrace scope 1 (here: ${scope === null ? 'no Yama' : `scope ${scope}`}), with the first offering plane, and taken back when the last one closes${skipped}`, () => {
    const directory = mkdtempSync(join(tmpdir(), 'rxccl-ptracer-'));
    try {
      const trace = join(directory, 'trace');
      const run = spawnSync('strace', ['-f', '-qq', '-e', 'trace=prctl,kill', '-o', trace, process.execPath, '--import', 'tsx', FIXTURE], { cwd: REPOSITORY_ROOT, encoding: 'utf8', timeout: 60_000 });
      expect(run.status, run.stderr).toBe(0);
      // The fixture's marks cut the trace into: before the planes, both opening, the first closing,
      // the last closing, after.
      const phases: string[][] = [[]];
      for (const line of readFileSync(trace, 'utf8').split('\n')) {
        if (/ kill\(\d+, 0\)/.test(line)) phases.push([]);
        else if (line.includes('prctl(PR_SET_PTRACER,')) phases.at(-1)!.push(line.includes('PR_SET_PTRACER_ANY') ? 'any' : 'reset');
      }
      expect(phases).toEqual(scope === 1 ? [[], ['any'], [], ['reset'], []] : [[], [], [], [], []]);
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  }, 90_000);
});
