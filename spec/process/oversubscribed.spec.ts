/**
 * Ranks outnumbering the host's CPUs (lib/session/plane-spin.ts): each rank a separate process on
 * the native data plane, the job's ranks all on this host. Where they outnumber the CPUs this
 * process may run on, `auto` gives every rank's plane GX1_OVERSUBSCRIBED_SPIN_US's spin (0: a
 * waiting rank sleeps on its doorbell at once) and says so when it joins; with that wait the
 * small collectives are exact at 8 and 16 processes, and ranks waiting for a peer 20 ms late every
 * call leave their cores to the others (CPU time bounded, as spec/transport/shared-memory.spec.ts
 * bounds it for the adaptive spin).
 */
import { availableParallelism } from 'node:os';
import { describe, expect, it } from 'vitest';
import { dataPlaneEngine } from '../../lib/kernels/addon.js';
import { cleanUpJobsAfterEach, describeRank, expectAllExitedCleanly, forgetCallerSettings, printedJson, type RankProcess, startProcessJob } from '../helpers/rank-process.js';

forgetCallerSettings();

const cleanup = cleanUpJobsAfterEach();
const native = dataPlaneEngine() !== null;
if (!native) console.warn('spec/process/oversubscribed.spec.ts: skipped: the native addon is not built here');

/** The job of `scenario` at `worldSize` ranks, each process with `env`; every rank once all exited, each exited 0. */
async function run(worldSize: number, scenario: string, env: Record<string, string>): Promise<RankProcess[]> {
  const { ranks } = await startProcessJob(cleanup, worldSize, {
    script: 'spec/process/fixtures/oversubscribed-rank.ts',
    scenario,
    transport: 'tcp_peer',
    // Generous: 16 processes start on 2 shared CPUs.
    timeoutMs: 120_000,
    env: { GX1_DATA_PLANE: 'native', GX1_DEBUG: 'info', ...env },
  });
  await expectAllExitedCleanly(ranks);
  return ranks;
}

/** The spin a rank's joined line says its plane waits with. */
function spinOf(rank: RankProcess): string | undefined {
  return /native data plane spinning (adaptively|\d+ us)/.exec(rank.stderr())?.[1];
}

describe.skipIf(!native)('ranks outnumbering the CPUs, one process each', () => {
  it.each([8, 16])('%i processes: 8 B and 1 KiB all-reduces, broadcasts, all-gathers and barriers are exact, every plane sleeping at once where the ranks outnumber the CPUs', async (worldSize) => {
    const ranks = await run(worldSize, 'exact', { CALLS: '12' });
    const expected = worldSize > availableParallelism() ? '0 us' : 'adaptively';
    for (const rank of ranks) {
      expect(printedJson(rank, 'CHECKED'), describeRank(rank)).toEqual({ calls: 12, wrong: [] });
      expect(spinOf(rank), describeRank(rank)).toBe(expected);
    }
  }, 300_000);

  it('GX1_OVERSUBSCRIBED_SPIN_US gives the spin (GX1_SPIN_US given wins: spec/session/plane-spin.spec.ts)', async () => {
    const ranks = await run(8, 'exact', { CALLS: '2', GX1_OVERSUBSCRIBED_SPIN_US: '30' });
    for (const rank of ranks) expect(spinOf(rank), describeRank(rank)).toBe(8 > availableParallelism() ? '30 us' : 'adaptively');
  }, 300_000);

  it('7 ranks waiting for one 20 ms late every call do not burn their cores: under 0.15 s of CPU each for 50 calls', async () => {
    const ranks = await run(8, 'late', { CALLS: '50', LATE_MS: '20' });
    for (const rank of ranks.slice(0, -1)) {
      const cpu = printedJson<number>(rank, 'CPU');
      expect(cpu, describeRank(rank)).toBeTypeOf('number');
      // Spinning through the waits would cost about 50 x 20 ms = 1 s of one CPU per rank.
      expect(cpu!, describeRank(rank)).toBeLessThan(0.15);
    }
  }, 300_000);
});
