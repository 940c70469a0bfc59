/**
 * Fusion with every rank a separate OS process (spec/process/fixtures/fusion.ts, run by
 * spec/helpers/rank-child.ts with `openSession()` and the GX1_* environment), on both transports
 * (tcp_peer on its default plane, the native one where the addon loads): a fused call over two
 * types, fresh and in place, and a windowed stream whose ranks send at different speeds, every
 * result exact. spec/session/fusion.spec.ts has the in-process cases.
 */
import { describe, expect, it } from 'vitest';
import type { CollectiveTransport } from '../../lib/transport/transport-kind.js';
import { cleanUpJobsAfterEach, describeRank, forgetCallerSettings, liveProcesses, resultOf, startProcessJob } from '../helpers/rank-process.js';
import { FUSION_COUNTS, fusionElement } from './fixtures/fusion.js';

forgetCallerSettings();

const cleanup = cleanUpJobsAfterEach();
const WORLD_SIZE = 3;

/** Tensor `index` summed over the ranks, then over its elements. */
const expectedTotal = (index: number) =>
  Array.from({ length: FUSION_COUNTS[index]! }, (_, at) => Array.from({ length: WORLD_SIZE }, (_, rank) => fusionElement(rank, index, at)).reduce((a, b) => a + b, 0)).reduce((a, b) => a + b, 0);

describe.each(['tcp_peer', 'tcp_host_staged'] as CollectiveTransport[])('fusion with every rank a separate process, on %s', (transport) => {
  it('3 processes: allReduceMany fresh and in place, and a windowed allReduceFused stream, exact per tensor', async () => {
    const { coordinator, ranks } = await startProcessJob(cleanup, WORLD_SIZE, { script: 'spec/helpers/rank-child.ts', scenario: 'fusion', transport, timeoutMs: 10_000 });
    const exits = await Promise.all(ranks.map((rank) => rank.exited));
    exits.forEach((exit, rank) => expect(exit, describeRank(ranks[rank]!)).toEqual({ code: 0, signal: null }));
    await expect(coordinator.done).resolves.toBeUndefined();
    const expected = FUSION_COUNTS.map((_, index) => expectedTotal(index));
    for (const rank of ranks) {
      const what = describeRank(rank);
      expect(resultOf(rank, 'many'), what).toEqual({ fresh: expected, inPlace: expected, same: true });
      expect(resultOf(rank, 'stream'), what).toEqual(expected);
    }
    expect(liveProcesses()).toEqual([]);
  }, 60_000);
});
