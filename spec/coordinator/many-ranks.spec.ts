/**
 * Issue #49 item 1: a job of 64 ranks warns nothing. A coordinator keeps its listeners per
 * connection, never per rank on one emitter, so 64 in-process ranks through it (tcp_host_staged:
 * every collective passes the coordinator) raise no MaxListenersExceededWarning. (The warning users
 * saw from 16 ranks on came from `rxccl launch` piping every rank into its own stdout and stderr:
 * spec/launch/local-job.spec.ts and spec/cli/launch.spec.ts.)
 */
import { afterEach, expect, it } from 'vitest';
import { startJob, type TestJob } from '../helpers/job.js';

let job: TestJob | null = null;
const warnings: Error[] = [];
const warned = (warning: Error) => warnings.push(warning);
afterEach(async () => {
  process.off('warning', warned);
  await job?.dispose();
  job = null;
});

it('64 ranks join, reduce, meet at a barrier and leave without a MaxListenersExceededWarning', async () => {
  process.on('warning', warned);
  const started = await startJob(64, { timeoutMs: 60_000 });
  job = started;
  const sums = await Promise.all(started.sessions.map((session) => session.allReduce(Int32Array.of(session.rank))));
  expect(new Set(sums.map((sum) => sum[0]))).toEqual(new Set([(63 * 64) / 2]));
  await Promise.all(started.sessions.map((session) => session.barrier()));
  await started.dispose();
  job = null;
  expect(warnings.filter((warning) => warning.name === 'MaxListenersExceededWarning').map((warning) => warning.message)).toEqual([]);
}, 60_000);
