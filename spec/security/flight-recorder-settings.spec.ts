/**
 * A bad GX1_FLIGHT_RECORDER (a file in the directory's place, a place no directory can be made)
 * costs one warning, never the rank: it used to die of an uncaught EEXIST on SIGUSR1, and spin
 * forever in Node's recursive mkdir under /proc when it failed or got the signal.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DebugLog } from '../../lib/diagnostics/debug-log.js';
import { ConfigurationError } from '../../lib/errors.js';
import { recordFlight } from '../../lib/session/flight-recording.js';
import { startRxccl, tsNode, type Finished } from '../cli/rxccl-process.js';
import { rejection, startJob, type TestJob } from '../helpers/job.js';
import { scratchDirectories } from '../helpers/scratch.js';

const jobs: TestJob[] = [];
afterEach(async () => {
  await Promise.all(jobs.splice(0).map((job) => job.dispose()));
});
const scratch = scratchDirectories('rxccl-flight-settings-');

/** A regular file where the recorder's directory should be. */
function regularFile(): string {
  const file = join(scratch(), 'not-a-directory');
  writeFileSync(file, '');
  return file;
}

/** Where mkdir says ENOENT although the parent exists. */
const UNMAKEABLE = '/proc/rxccl-nope';

/** A log at warn that keeps its lines. */
function warnings(): { log: DebugLog; lines: string[] } {
  const lines: string[] = [];
  return { log: new DebugLog('warn', (_level, message) => lines.push(message)), lines };
}

describe('recordFlight with a directory it cannot use', () => {
  it('warns once and is off: collectives work, a failure throws nothing, the explicit writer throws a ConfigurationError', async () => {
    const file = regularFile();
    const job = await startJob(2);
    jobs.push(job);
    const logs = job.sessions.map(() => warnings());
    const writeNow = job.sessions.map((session, rank) => recordFlight(session, { directory: file, signal: null, log: logs[rank]!.log }));
    const sums = await Promise.all(job.sessions.map((session) => session.allReduce(Int32Array.of(session.rank + 1))));
    expect(sums.map((sum) => Array.from(sum))).toEqual([[3], [3]]);

    let thrown: unknown;
    try {
      writeNow[0]!();
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ConfigurationError);
    expect(thrown).toMatchObject({ code: 'INVALID_CONFIGURATION', cause: { code: 'EEXIST' } });

    // Both sessions fail. Had the recorder's events$ subscriber thrown, RxJS would rethrow it on a
    // timer (an uncaught exception, which vitest reports): the wait lets that timer run.
    const [rank0, rank1] = job.sessions;
    const pending = rejection(rank0!.barrier());
    await rank1!.abort('rank 1 gives up');
    expect((await pending).message).toMatch(/rank 1 gives up/);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(rank1!.error).toBeDefined();
    // One warning per rank, at the start; the writer's error says the same.
    for (const [rank, { lines }] of logs.entries()) {
      expect(lines).toEqual([`rank ${rank}: flight recorder off: directory "${file}" cannot be used: EEXIST: file already exists, mkdir '${file}'`]);
    }
    expect(`rank 0: ${(thrown as ConfigurationError).message}`).toBe(logs[0]!.lines[0]);
  }, 30_000);

  it('makes missing parents; a record it cannot write later is a warning when automatic and a ConfigurationError when asked for', async () => {
    const directory = join(scratch(), 'a', 'b');
    const job = await startJob(2);
    jobs.push(job);
    const [rank0, rank1] = job.sessions;
    const { log, lines } = warnings();
    const writeNow = recordFlight(rank0!, { directory, signal: null, log });
    expect(lines).toEqual([]);
    expect(writeNow()).toMatch(new RegExp(`^${directory}/rxccl-flight-rank0-`));
    rmSync(directory, { recursive: true });

    expect(writeNow).toThrow(ConfigurationError);
    expect(writeNow).toThrow(new RegExp(`^directory "${directory}" cannot be written: ENOENT: no such file or directory, open `));
    const pending = rejection(rank0!.barrier());
    await rank1!.abort('rank 1 gives up');
    await pending;
    expect(lines.at(-1)).toMatch(new RegExp(`^rank 0: flight record \\(failure\\) not written: directory "${directory}" cannot be written: ENOENT: `));
  }, 30_000);
});

/** How long a job of two ranks may take here before it counts as hung (it takes seconds). */
const HUNG_AFTER_MS = 60_000;

/** `rxccl launch -n 2` of the flight-rank fixture; a job still running after HUNG_AFTER_MS is interrupted (SIGTERM, exit 143). */
async function launch(scenario: string, directory: string): Promise<Finished> {
  const running = startRxccl(['launch', '-n', '2', '--', ...tsNode('spec/security/fixtures/flight-rank.ts', scenario)], {
    GX1_FLIGHT_RECORDER: directory,
    GX1_DEBUG: 'warn',
  });
  const hung = setTimeout(() => running.child.kill('SIGTERM'), HUNG_AFTER_MS);
  try {
    return await running.finished;
  } finally {
    clearTimeout(hung);
  }
}

const offWarning = (rank: number, directory: string, reason: string) =>
  `WARN rank ${rank}: flight recorder off: GX1_FLIGHT_RECORDER directory "${directory}" cannot be used: ${reason}`;

describe('GX1_FLIGHT_RECORDER naming a directory that cannot be used, under rxccl launch', () => {
  const cases = [
    { name: 'a regular file', directory: regularFile, reason: (path: string) => `EEXIST: file already exists, mkdir '${path}'` },
    { name: UNMAKEABLE, directory: () => UNMAKEABLE, reason: (path: string) => `ENOENT: no such file or directory, mkdir '${path}'` },
  ];
  for (const { name, directory, reason } of cases) {
    it(`${name}: ranks warn once, survive SIGUSR1 mid-run and complete the job`, async () => {
      const path = directory();
      const result = await launch('signal', path);
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toContain('[rank 0] RESULT [3,3]');
      expect(result.stdout).toContain('[rank 1] RESULT [3,3]');
      expect(result.stderr).toContain(offWarning(0, path, reason(path)));
      expect(result.stderr).toContain(offWarning(1, path, reason(path)));
      expect(result.stderr).toMatch(/WARN rank [01]: flight record \(signal\) not written: flight recorder off: GX1_FLIGHT_RECORDER directory /);
    }, HUNG_AFTER_MS + 30_000);
  }

  it(`${UNMAKEABLE}: a failing job exits non-zero at once, each rank naming its error`, async () => {
    const result = await launch('abort', UNMAKEABLE);
    expect(result.code, result.stderr).toBe(1);
    expect(result.stderr).toMatch(/rxccl launch: job failed: .*rank 1 gives up/);
    // Each rank reports its failure itself, rather than being killed by the launcher mid-spin.
    expect(result.stdout).toMatch(/\[rank 0\] ERROR REMOTE_ABORT .*rank 1 gives up/);
    expect(result.stdout).toMatch(/\[rank 1\] ERROR REMOTE_ABORT .*rank 1 gives up/);
    expect(result.stderr).toContain(offWarning(0, UNMAKEABLE, `ENOENT: no such file or directory, mkdir '${UNMAKEABLE}'`));
  }, HUNG_AFTER_MS + 30_000);
});
