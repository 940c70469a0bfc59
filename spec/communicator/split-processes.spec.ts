/**
 * Communicators with every rank a separate OS process (the scenarios of spec/process/fixtures/communicator-split.ts,
 * run by spec/helpers/rank-child.ts, started by spec/helpers/rank-process.ts (transpiled ahead) with the GX1_* environment,
 * `openSession()` without options) against a coordinator in this process, on both transports:
 * the in-process checks of spec/communicator/split.spec.ts (a split's members and order,
 * concurrent all-reduces per communicator summing over their own members, a mismatched split
 * named on every rank) across process boundaries.
 *
 * Each child costs half a second of start-up and this machine may have 2 cores: the jobs are
 * few, each with a whole program.
 */
import { describe, expect, it } from 'vitest';
import { dataPlaneEngine } from '../../lib/kernels/addon.js';
import type { CollectiveTransport } from '../../lib/transport/transport-kind.js';
import { cleanUpJobsAfterEach, describeRank, forgetCallerSettings, liveProcesses, type RankProcess, resultOf, startProcessJob } from '../helpers/rank-process.js';
import { LARGE_COUNT, largeElement, PER_ROUND, ROUNDS, smallTensor } from '../process/fixtures/communicator-values.js';

const FIXTURE = 'spec/helpers/rank-child.ts';
/** The session (collective) timeout of the other process specs. */
const TIMEOUT_MS = 10_000;
/** A whole test: 8 rank start-ups on a noisy 2-core machine. */
const TEST_TIMEOUT_MS = 60_000;
const TRANSPORTS: CollectiveTransport[] = ['tcp_host_staged', 'tcp_peer'];

forgetCallerSettings();

const cleanup = cleanUpJobsAfterEach();

const job = (worldSize: number, scenario: string, transport: CollectiveTransport, env: Record<string, string> = {}) =>
  startProcessJob(cleanup, worldSize, { script: FIXTURE, scenario, transport, timeoutMs: TIMEOUT_MS, env });

/** A coordinator here and `worldSize` fixture processes running `scenario` on `transport`. */

interface CommunicatorReport {
  readonly rank: number;
  readonly worldSize: number;
  readonly jobRanks: number[];
  readonly communicatorId: string;
  readonly plane: string;
}

interface LargeReport {
  readonly count: number;
  readonly wrong: number;
  readonly firstWrong: unknown;
  readonly head: number[];
}

interface SplitReport {
  readonly rank: number;
  readonly worldSize: number;
  readonly four: CommunicatorReport;
  readonly two: CommunicatorReport;
  readonly rounds: { four: number[][]; two: number[][]; world: number }[];
  readonly large: { four: LargeReport; two: LargeReport };
}

/** The element-wise sum over `members` of each one's tensor. */
function sumOver(members: readonly number[], tensor: (jobRank: number) => Float64Array): number[] {
  const sum = new Array<number>(tensor(0).length).fill(0);
  for (const member of members) tensor(member).forEach((value, index) => (sum[index]! += value));
  return sum;
}

/** The `ERROR <code> <message>` line a rank printed. */
function failureOf(rank: RankProcess): { code: string; message: string } | undefined {
  const line = rank.lines.find((candidate) => candidate.startsWith('ERROR '));
  const match = line === undefined ? null : /^ERROR (\S+) (.*)$/s.exec(line);
  return match === null ? undefined : { code: match[1]!, message: match[2]! };
}

describe.each(TRANSPORTS)('communicators with every rank a separate process, on %s', (transport) => {
  it(
    '8 processes split into 2 x 4 and then 4 x 2 (pairs reversed by key): members and order right, concurrent all-reduces on every communicator (and the world) sum over their own members, exactly',
    async () => {
      const worldSize = 8;
      const { coordinator, ranks } = await job(worldSize, 'split', transport);
      const exits = await Promise.all(ranks.map((rank) => rank.exited));
      exits.forEach((exit, rank) => expect(exit, describeRank(ranks[rank]!)).toEqual({ code: 0, signal: null }));
      await expect(coordinator.done).resolves.toBeUndefined();
      const reports = ranks.map((rank) => resultOf(rank, 'split') as SplitReport);
      for (const [r, report] of reports.entries()) {
        const what = describeRank(ranks[r]!);
        expect(report.rank, what).toBe(r);
        expect(report.worldSize, what).toBe(worldSize);
        // color floor(rank / 4), key default: by old rank.
        const fourMembers = [0, 1, 2, 3].map((index) => 4 * Math.floor(r / 4) + index);
        expect(report.four, what).toMatchObject({ worldSize: 4, jobRanks: fourMembers, rank: fourMembers.indexOf(r) });
        // color floor(rank / 2), key -rank: the pair's higher rank first.
        const twoMembers = [2 * Math.floor(r / 2) + 1, 2 * Math.floor(r / 2)];
        expect(report.two, what).toMatchObject({ worldSize: 2, jobRanks: twoMembers, rank: twoMembers.indexOf(r) });
        for (const id of [report.four.communicatorId, report.two.communicatorId]) expect(id, what).toMatch(/^0x(?!0+$)[0-9a-f]+$/);
        // On tcp_peer each communicator runs a native plane of its own, as the world does.
        const plane = transport === 'tcp_host_staged' ? 'coordinator' : dataPlaneEngine() === null ? 'js' : 'native';
        expect([report.four.plane, report.two.plane], what).toEqual([plane, plane]);
        expect(report.rounds, what).toHaveLength(ROUNDS);
        for (const [round, results] of report.rounds.entries()) {
          for (const [name, members] of [
            ['four', fourMembers],
            ['two', twoMembers],
          ] as const) {
            expect(results[name], `${name}, round ${round}\n${what}`).toEqual(
              Array.from({ length: PER_ROUND }, (_, index) => sumOver(members, (jobRank) => smallTensor(jobRank, round, index))),
            );
          }
          expect(results.world, `world, round ${round}\n${what}`).toBe((worldSize * (worldSize + 1)) / 2);
        }
        for (const [name, members] of [
          ['four', fourMembers],
          ['two', twoMembers],
        ] as const) {
          const large = report.large[name];
          expect(large, `large on ${name}\n${what}`).toEqual({
            count: LARGE_COUNT,
            wrong: 0,
            firstWrong: null,
            head: [0, 1, 2].map((i) => members.reduce((sum, member) => sum + largeElement(member, i), 0)),
          });
        }
        expect(ranks[r]!.lines.at(-1), what).toBe('DONE');
      }
      // One id per communicator: the members of one agree, the six communicators differ.
      const ids = (name: 'four' | 'two', size: number) =>
        Array.from({ length: worldSize / size }, (_, block) => new Set(reports.slice(block * size, (block + 1) * size).map((report) => report[name].communicatorId)));
      for (const members of [...ids('four', 4), ...ids('two', 2)]) expect(members.size).toBe(1);
      expect(new Set(reports.flatMap((report) => [report.four.communicatorId, report.two.communicatorId])).size).toBe(2 + 4);
      expect(liveProcesses()).toEqual([]);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    '3 processes, ranks 0 and 1 split where rank 2 all-gathers: every process is told the mismatch, naming rank 2',
    async () => {
      // Every rank lingers in the job after its failure, so a rank that found the mismatch first
      // does not end another's links before that one is told of it.
      const { ranks } = await job(3, 'mismatch', transport, { LINGER_MS: '1000' });
      const exits = await Promise.all(ranks.map((rank) => rank.exited));
      for (const rank of ranks) {
        const what = describeRank(rank);
        expect(exits[rank.rank], what).toEqual({ code: 3, signal: null });
        expect(rank.lines.filter((line) => line.startsWith('RESULT ')), what).toEqual([]);
        const failure = failureOf(rank);
        expect(failure, what).toBeDefined();
        // Found by the coordinator (and relayed), or by the ranks themselves where they meet first (tcp_peer).
        expect(['REMOTE_ABORT', 'PROTOCOL'], what).toContain(failure!.code);
        expect(failure!.message, what).toMatch(/collective sequence 0 mismatch: rank \d submitted/);
        // As in-process (split.spec.ts): the split is an all-gather of two i64 per rank under the split layout.
        expect(failure!.message, what).toMatch(/collective sequence 0 mismatch: rank \d submitted \{AllGather .*\}, rank 2 submitted \{AllGather I64 root ANY count 2/);
      }
      expect(liveProcesses()).toEqual([]);
    },
    TEST_TIMEOUT_MS,
  );
});
