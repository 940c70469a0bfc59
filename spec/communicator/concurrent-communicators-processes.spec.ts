/**
 * Communicators' calls issued at once, with every rank a separate OS process (the scenarios of
 * spec/process/fixtures/concurrent-communicators.ts, run by spec/helpers/rank-child.ts, started by
 * spec/helpers/rank-process.ts with the GX1_* environment) against a coordinator in this process: the real engines of what
 * spec/collectives/concurrent-schedules.spec.ts checks in the schedule model. 4 ranks on the pairs
 * {0,1} and {2,3} (split), the group [1, 2, 3] and the world, each rank issuing every call of its
 * communicators (all-reduces of 8 B and 1 MiB, a broadcast of 1 MiB, all-gathers) without awaiting
 * any, the communicators' turns reversed on odd ranks: on tcp_peer every communicator runs on a
 * native plane of its own, links and engine (docs/architecture.md "Communicators"), and every
 * result is exact; on tcp_host_staged (no native plane) too. Then the same calls in a fault-tolerant
 * job whose rank 3 is killed while they are in flight: every call of a communicator with rank 3
 * fails, naming it, and the pair {0,1} completes exactly (spec/communicator/shrink-processes.spec.ts
 * goes on from such a failure with shrink()).
 *
 * Each child costs half a second of start-up on a noisy 2-core machine: one job per test.
 */
import { describe, expect, it } from 'vitest';
import { dataPlaneEngine } from '../../lib/kernels/addon.js';
import type { CollectiveTransport } from '../../lib/transport/transport-kind.js';
import { cleanUpJobsAfterEach, describeRank, forgetCallerSettings, liveProcesses, resultOf, startProcessJob } from '../helpers/rank-process.js';
import { CALLS, type CommunicatorName, communicatorOrder, expectedResult, issueOrder } from '../process/fixtures/concurrent-communicators-values.js';

const FIXTURE = 'spec/helpers/rank-child.ts';
/** The session (collective) timeout of the other process specs. */
const TIMEOUT_MS = 10_000;
/** A whole test: 4 rank start-ups and a few MiB each way on a noisy 2-core machine. */
const TEST_TIMEOUT_MS = 60_000;
const TRANSPORTS: CollectiveTransport[] = ['tcp_peer', 'tcp_host_staged'];

forgetCallerSettings();

const cleanup = cleanUpJobsAfterEach();

/** The job ranks of `communicator` as job rank `jobRank` sees it. */
function membersOf(communicator: CommunicatorName, jobRank: number): number[] {
  if (communicator === 'pair') return [jobRank & ~1, jobRank | 1];
  return communicator === 'group' ? [1, 2, 3] : [0, 1, 2, 3];
}

/** A call's check as the fixture reports it where the result is exact: its length, nothing wrong, and its first elements recomputed here. */
function exactCheck(communicator: CommunicatorName, call: number, jobRank: number) {
  const spec = CALLS[communicator][call]!;
  const exact = expectedResult(spec, membersOf(communicator, jobRank));
  return { communicator, call: spec.name, count: exact.length, wrong: 0, firstWrong: null, head: [0, 1, 2].filter((index) => index < exact.length).map((index) => exact.at(index)) };
}

interface ConcurrentReport {
  readonly rank: number;
  readonly jobRanks: { pair: number[]; group: number[] | null };
  readonly issued: string[];
  readonly checks: unknown[];
  readonly events: Record<CommunicatorName, { collective: string; algorithm: string; plane: string }[]>;
}

describe.each(TRANSPORTS)("communicators' calls issued at once, every rank a process, on %s", (transport) => {
  it(
    '4 processes on the pairs {0,1} and {2,3}, the group [1,2,3] and the world issue all-reduces of 8 B and 1 MiB, a broadcast and all-gathers without awaiting, in orders that differ by rank: every result exact, each communicator on its plane',
    async () => {
      const { coordinator, ranks } = await startProcessJob(cleanup, 4, { script: FIXTURE, scenario: 'concurrent', transport, timeoutMs: TIMEOUT_MS });
      const exits = await Promise.all(ranks.map((rank) => rank.exited));
      exits.forEach((exit, rank) => expect(exit, describeRank(ranks[rank]!)).toEqual({ code: 0, signal: null }));
      await expect(coordinator.done).resolves.toBeUndefined();
      // Each communicator on a native plane of its own where the world runs one (tcp_peer with the addon).
      const plane = dataPlaneEngine() === null ? 'js' : 'native';
      for (const [jobRank, process] of ranks.entries()) {
        const what = describeRank(process);
        const report = resultOf(process, 'concurrent') as ConcurrentReport;
        expect(report.rank, what).toBe(jobRank);
        expect(report.jobRanks, what).toEqual({ pair: membersOf('pair', jobRank), group: jobRank === 0 ? null : [1, 2, 3] });
        const order = issueOrder(jobRank);
        expect(report.issued, what).toEqual(order.map(({ communicator, call }) => `${communicator} ${CALLS[communicator][call]!.name}`));
        expect(report.checks, what).toEqual(order.map(({ communicator, call }) => exactCheck(communicator, call, jobRank)));
        for (const communicator of communicatorOrder(jobRank)) {
          const events = report.events[communicator];
          expect(events.map((event) => event.collective), `${communicator}\n${what}`).toEqual(CALLS[communicator].map((call) => call.collective));
          if (transport === 'tcp_peer') expect(new Set(events.map((event) => event.plane)), `${communicator}\n${what}`).toEqual(new Set([plane]));
        }
        expect(process.lines.at(-1), what).toBe('DONE');
      }
      // The orders differ: rank 0 issues its pair's call first, rank 1 the world's.
      expect([0, 1].map((jobRank) => issueOrder(jobRank)[0]!.communicator)).toEqual(['pair', 'world']);
      expect(liveProcesses()).toEqual([]);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'a fault-tolerant job, rank 3 killed (SIGKILL) while every call is in flight: every call of {2,3}, [1,2,3] and the world fails with RankLostError naming rank 3 on every member left; the pair {0,1} completes exactly',
    async () => {
      const { ranks } = await startProcessJob(cleanup, 4, { script: FIXTURE, scenario: 'rank-lost', transport, timeoutMs: TIMEOUT_MS, faultTolerant: true });
      const survivors = ranks.slice(0, 3);
      await Promise.all([...survivors.map((rank) => rank.waitFor(/^ISSUED$/)), ranks[3]!.waitFor(/^VICTIM$/)]);
      ranks[3]!.child.kill('SIGKILL');
      const exits = await Promise.all(ranks.map((rank) => rank.exited));
      expect(exits[3]).toEqual({ code: null, signal: 'SIGKILL' });
      for (const [jobRank, process] of survivors.entries()) {
        const what = describeRank(process);
        expect(exits[jobRank], what).toEqual({ code: 0, signal: null });
        const outcomes = resultOf(process, 'rank-lost') as { communicator: CommunicatorName; call: string; error?: Record<string, unknown> }[];
        const order = issueOrder(jobRank);
        expect(outcomes.length, what).toBe(order.length);
        for (const [at, { communicator, call }] of order.entries()) {
          const outcome = outcomes[at]!;
          const here = `${communicator} ${CALLS[communicator][call]!.name}\n${what}`;
          if (membersOf(communicator, jobRank).includes(3)) {
            expect(outcome.error, here).toMatchObject({ name: 'RankLostError', code: 'CHANNEL_CLOSED', rank: 3 });
            expect(outcome.error!.message as string, here).toMatch(/^rank 3 was lost \(.+\): rank \d of (the job's world|communicator 0x[0-9a-f]+) cannot complete/);
          } else {
            expect(outcome, here).toEqual(exactCheck(communicator, call, jobRank));
          }
        }
      }
      expect(liveProcesses()).toEqual([]);
    },
    TEST_TIMEOUT_MS,
  );
});
