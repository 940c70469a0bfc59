/**
 * `rxccl launch` as a user runs it: a child process with real rank processes. Ranks that must not
 * join the coordinator are plain Node scripts (fixtures/hold.mjs): they start fast.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { compiledNode } from '../helpers/compiled-script.js';
import { alive, runRxccl, startRxccl, tsNode } from './rxccl-process.js';

const HOLD = 'spec/cli/fixtures/hold.mjs';
/** Runs `body` with a fresh directory for the ranks' pid files (the tests run concurrently). */
async function withPidDirectory(body: (directory: string) => Promise<void>): Promise<void> {
  const directory = mkdtempSync(join(tmpdir(), 'rxccl-launch-'));
  try {
    await body(directory);
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

/** Every pid the ranks recorded (their own and their children's). */
function recordedPids(directory: string): number[] {
  return readdirSync(directory)
    .filter((name) => name.endsWith('.pids'))
    .flatMap((name) => readFileSync(join(directory, name), 'utf8').split(' ').map(Number));
}

describe.concurrent('rxccl launch', () => {
  it('exits 0 when every rank joins, leaves and exits 0, prefixing each line with its rank', async () => {
    const result = await runRxccl(['launch', '-n', '2', '--', ...tsNode('spec/cli/fixtures/rank.ts')]);
    expect(result.stderr).not.toContain('job failed');
    expect(result.code).toBe(0);
    const stdout = result.stdout.split('\n');
    const stderr = result.stderr.split('\n');
    for (const rank of [0, 1]) {
      expect(stdout).toContain(`[rank ${rank}] joined as ${rank} of 2`);
      expect(stderr).toContain(`[rank ${rank}] a line on stderr from ${rank}`);
      // The unterminated last line is flushed as a line of its own.
      expect(stdout).toContain(`[rank ${rank}] unterminated ${rank}`);
    }
    // Every line is whole and prefixed: no two ranks' output shares a line.
    // (The launcher's own coordinator may log too: on a loaded host, that ranks have not joined yet.)
    const rankLines = [...stdout, ...stderr].filter((text) => text.length > 0 && !text.includes('Warning') && !text.includes('--trace-warnings') && !/^rxccl\[\d+\] /.test(text));
    for (const line of rankLines) {
      expect(line).toMatch(/^\[rank [01]\] (joined as [01] of 2|a line on stderr from [01]|unterminated [01])$/);
    }
  }, 60_000);

  it('--replace: a replacement starts when a rank dies; one the job ended before admitting is ended, not a failure (#48 item 2)', async () => {
    const result = await runRxccl(['launch', '--keep-going', '--replace', '1', '-n', '2', '--', ...compiledNode('spec/cli/fixtures/dies-at-once.ts')]);
    expect(result.stderr).not.toContain('job failed');
    expect(result.stderr).toContain('rxccl launch: started replacement 1 for rank 1; the job admits it at its next step boundary (grow())');
    // Ended while it still dialled, or refused by the coordinator as the job ended: either way no failure.
    expect(result.stderr).toMatch(/rxccl launch: replacement 1 (was still waiting to be admitted when the job ended: ended|exited with code 1: the job ended before admitting it)/);
    expect(result.code).toBe(0);
  }, 60_000);

  it('--replace: every rank dying is a failure, the replacement ended unadmitted or not', async () => {
    const result = await runRxccl(['launch', '--keep-going', '--replace', '1', '-n', '2', '--', ...compiledNode('spec/cli/fixtures/dies-at-once.ts')], { ALL_DIE: '1' });
    expect(result.code).toBe(1);
    // Each rank named as killed, or (seen lost by the coordinator before its exit reached the launcher) as lost and ended.
    expect(result.stderr).toMatch(/rxccl launch: job failed: every rank failed: rank [01] (was killed by SIGKILL|was lost \(.+\) and was still running when the others were done: ended); rank [01] /);
  }, 60_000);

  it('--replace needs --keep-going', async () => {
    const result = await runRxccl(['launch', '--replace', '1', '-n', '2', '--', 'node', HOLD]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--replace needs --keep-going: only a fault-tolerant job goes on while a replacement joins');
  });

  it('ends the other ranks (and what they started) when one exits non-zero, naming it', () =>
    withPidDirectory(async (directory) => {
      const result = await runRxccl(['launch', '-n', '3', '--', 'node', HOLD], { PID_DIR: directory, FAIL_RANK: '1', FAIL_CODE: '3', SPAWN_CHILD: '1' });
      expect(result.code).toBe(1);
      expect(result.stderr.trim().split('\n').at(-1)).toBe('rxccl launch: job failed: rank 1 exited with code 3');
      const pids = recordedPids(directory);
      expect(pids).toHaveLength(6);
      expect(pids.filter(alive)).toEqual([]);
    }), 60_000);

  it('a configuration error: each rank prints it in one line, no stack, and the launcher\'s last line carries it (#49 item 2)', async () => {
    const result = await runRxccl(['launch', '-n', '2', '--', ...tsNode('examples/allreduce.ts')], { GX1_DATA_PLANE: 'bogus' });
    expect(result.code).toBe(1);
    const message = 'INVALID_CONFIGURATION: GX1_DATA_PLANE must be one of auto, native, js, got "bogus"';
    const lines = result.stderr.trimEnd().split('\n');
    // Nothing else from the ranks (the launcher's own coordinator may warn that they have not joined yet).
    expect(lines.filter((line) => line.startsWith('[rank ')).sort()).toEqual([`[rank 0] rxccl: ${message}`, `[rank 1] rxccl: ${message}`]);
    expect(lines.at(-1)).toMatch(new RegExp(`^rxccl launch: job failed: rank [01] failed: ${message.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`));
  }, 60_000);

  it('16 ranks share the launcher\'s stdout and stderr without a MaxListenersExceededWarning (#49 item 1)', async () => {
    const result = await runRxccl(['launch', '-n', '16', '--', 'sh', '-c', 'echo "out $GX1_RANK"; echo "err $GX1_RANK" >&2']);
    expect(result.stderr).not.toContain('MaxListenersExceededWarning');
    for (let rank = 0; rank < 16; rank++) {
      expect(result.stdout).toContain(`[rank ${rank}] out ${rank}\n`);
      expect(result.stderr).toContain(`[rank ${rank}] err ${rank}\n`);
    }
  }, 60_000);

  for (const [signal, status] of [
    ['SIGTERM', 143],
    ['SIGINT', 130],
  ] as const) {
    it(`forwards ${signal} to every rank and exits ${status} with no rank left running`, () =>
      withPidDirectory(async (directory) => {
        const launcher = startRxccl(['launch', '-n', '3', '--', 'node', HOLD], { PID_DIR: directory, SPAWN_CHILD: '1' });
        await expect.poll(() => recordedPids(directory).length, { message: 'every rank (and its child) to start', timeout: 20_000, interval: 25 }).toBe(6);
        launcher.child.kill(signal);
        const result = await launcher.finished;
        expect(result.code).toBe(status);
        expect(result.stderr).toContain(`rxccl launch: job failed: interrupted by ${signal}`);
        expect(recordedPids(directory).filter(alive)).toEqual([]);
      }), 60_000);
  }
});
