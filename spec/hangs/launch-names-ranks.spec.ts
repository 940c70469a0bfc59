/** `rxccl launch` names the ranks a job waits for: still running, never joined, never left. */
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { LocalJob, type LocalJobOptions } from '../../lib/launch/local-job.js';
import { compiledNode } from '../helpers/compiled-script.js';

async function run(options: Omit<LocalJobOptions, 'stdout' | 'stderr'>) {
  const stderr = new PassThrough();
  let text = '';
  stderr.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
  const job = await LocalJob.start({ ...options, stdout: new PassThrough().resume(), stderr });
  const outcome = await job.outcome;
  return { outcome, stderr: text };
}

describe('rxccl launch names the ranks a job waits for', () => {
  it('reports a rank still running after every other rank exited, and that it never left its session', async () => {
    const [command, ...args] = compiledNode('spec/hangs/fixtures/straggler.ts');
    const { outcome, stderr } = await run({ worldSize: 2, command: command!, args, stragglerReportMs: 250, env: { ...process.env, STRAGGLE_MS: '3000' } });
    expect(stderr).toContain('rxccl launch: rank 1 is still running after every other rank exited; it has not left its session (does it call session.close()?)');
    expect(stderr).not.toContain('rank 0 is still running');
    // Its process ended on its own (closing its connections): the job is whole.
    expect(outcome).toEqual({ ok: true, failure: null, interruptedBy: null, lost: [] });
  }, 60_000);

  it('names the ranks the coordinator never saw join when every rank exited 0', async () => {
    const { outcome } = await run({ worldSize: 2, command: process.execPath, args: ['-e', ''], leaveGraceMs: 100 });
    expect(outcome.failure).toBe(
      'every rank exited 0, but the coordinator did not see every rank join and leave: ranks [0,1] never joined (does each rank open a session and close it?)',
    );
  }, 30_000);
});
