/**
 * Object messages with every rank a separate OS process (spec/process/fixtures/objects.ts, run by
 * spec/helpers/rank-child.ts with `openSession()` and the GX1_* environment), on both transports:
 * values of several shapes through the object collectives and a sendObject ring from any rank, and
 * a refused value failing every rank alike while the job goes on. spec/session/object-messages.spec.ts
 * has the in-process cases.
 */
import { describe, expect, it } from 'vitest';
import type { CollectiveTransport } from '../../lib/transport/transport-kind.js';
import { cleanUpJobsAfterEach, describeRank, forgetCallerSettings, liveProcesses, resultOf, startProcessJob } from '../helpers/rank-process.js';
import { described, objectOf } from './fixtures/objects.js';

forgetCallerSettings();

const cleanup = cleanUpJobsAfterEach();
const WORLD_SIZE = 3;

describe.each(['tcp_peer', 'tcp_host_staged'] as CollectiveTransport[])('object messages with every rank a separate process, on %s', (transport) => {
  it('3 processes: broadcastObject, allGatherObject, gatherObject, a sendObject ring, and a refusal every rank reports', async () => {
    const { coordinator, ranks } = await startProcessJob(cleanup, WORLD_SIZE, { script: 'spec/helpers/rank-child.ts', scenario: 'objects', transport, timeoutMs: 10_000 });
    const exits = await Promise.all(ranks.map((rank) => rank.exited));
    exits.forEach((exit, rank) => expect(exit, describeRank(ranks[rank]!)).toEqual({ code: 0, signal: null }));
    await expect(coordinator.done).resolves.toBeUndefined();
    const every = Array.from({ length: WORLD_SIZE }, (_, rank) => described(objectOf(rank)));
    ranks.forEach((rank, index) => {
      const what = describeRank(rank);
      expect(resultOf(rank, 'broadcast'), what).toEqual(every[WORLD_SIZE - 1]);
      expect(resultOf(rank, 'allGather'), what).toEqual(every);
      expect(resultOf(rank, 'gather'), what).toEqual(index === 0 ? every : null);
      expect(resultOf(rank, 'ring'), what).toEqual(every[(index + WORLD_SIZE - 1) % WORLD_SIZE]);
      expect(resultOf(rank, 'refused'), what).toEqual({ code: 'NOT_SERIALIZABLE', rank: 1 });
      expect(resultOf(rank, 'after'), what).toEqual([0, 1, 2]);
    });
    expect(liveProcesses()).toEqual([]);
  }, 60_000);
});
