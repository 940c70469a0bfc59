/**
 * Small native collectives as a job runs them: each rank a separate process
 * (spec/process/fixtures/inline-rank.ts), so the plane runs them on the calling thread first
 * (in-process specs share one process between ranks, where the engine's thread runs every one).
 * On that path, as on the engine's thread (GX1_INLINE_US=0): calls issued without awaiting keep
 * their order and results; ranks calling different all-reduces are named with both descriptors; a
 * rank that never comes is named as missing at the timeout.
 */
import { describe, expect, it } from 'vitest';
import { dataPlaneEngine } from '../../lib/kernels/addon.js';
import { cleanUpJobsAfterEach, describeRank, expectAllExitedCleanly, forgetCallerSettings, printedJson, type RankProcess, startProcessJob } from '../helpers/rank-process.js';

forgetCallerSettings();

const cleanup = cleanUpJobsAfterEach();
const native = dataPlaneEngine() !== null;
if (!native) console.warn('spec/process/inline-calls.spec.ts: skipped: the native addon is not built here');

/** The job of `scenario` at 2 ranks, each process with `env`; every rank's exit and output once all exited. */
async function run(scenario: string, env: Record<string, string>, timeoutMs = 10_000): Promise<RankProcess[]> {
  const { ranks } = await startProcessJob(cleanup, 2, { script: 'spec/process/fixtures/inline-rank.ts', scenario, transport: 'tcp_peer', timeoutMs, env });
  await expectAllExitedCleanly(ranks);
  return ranks;
}

describe.skipIf(!native).each([
  ['on the calling thread (inline, the default)', 'auto'],
  ["on the engine's thread (GX1_INLINE_US=0)", '0'],
])('small native collectives of separate processes, %s', (_, inline) => {
  const env = { GX1_DATA_PLANE: 'native', GX1_INLINE_US: inline };

  it('64 all-reduces issued without awaiting: each result is its own call\'s sum, in call order', async () => {
    const ranks = await run('order', env);
    const expected = Array.from({ length: 64 }, (_, call) => [2 * call, 10 + 2 * call]);
    for (const rank of ranks) expect(printedJson(rank, 'RESULTS'), describeRank(rank)).toEqual(expected);
  }, 60_000);

  it('ranks calling different all-reduces are named with both ranks and both descriptors', async () => {
    const ranks = await run('mismatch', env);
    const mismatch = /collective sequence 0 mismatch: rank (0|1) submitted \{AllReduce F32 root ANY count [23] op sum layout "all-pairs"\}, rank (0|1) submitted \{AllReduce F32 root ANY count [23] op sum layout "all-pairs"\}/;
    for (const rank of ranks) expect(printedJson<{ message: string }>(rank, 'FAILED')?.message, describeRank(rank)).toMatch(mismatch);
  }, 60_000);

  it('a rank that never comes is named as missing at the timeout', async () => {
    const [zero] = await run('silent', { ...env, SILENT_MS: '6000' }, 2_000);
    expect(printedJson<{ code: string; message: string }>(zero!, 'FAILED'), describeRank(zero!)).toMatchObject({
      code: 'TIMEOUT',
      message: expect.stringMatching(/collective 0 \(AllReduce\) on the native data plane; missing ranks \[1\]/),
    });
  }, 60_000);
});
