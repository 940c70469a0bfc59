/**
 * The native plane's agreement (lib/collectives/schedule/header-exchange.ts, docs/protocol.md
 * 9.9): every message carries its collective's header, and the first message on each link of the
 * ring of successors (rank r to r + 1 mod W, rail 0) leaves at once, a header alone where the
 * schedule's would wait. What it must keep, for every schedule of the table: ranks that disagree
 * (other collectives, other roots, a call behind) are named, never left waiting in silence; and
 * what it costs.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { HEADER_ONLY, opensWithHeader, withHeaderExchange } from '../../lib/collectives/schedule/header-exchange.js';
import type { Schedule } from '../../lib/collectives/schedule/schedule.js';
import { type HeaderRule, runSplitScheduleModel, seededRandom } from '../../lib/testing/index.js';
import { arbScheduledCase, SCHEDULED, type ScheduledCase, scheduledCollective } from '../helpers/scheduled-collective.js';

const firstOnRailZero = (schedule: Schedule, peer: number) => schedule.sends.find((send) => send.peer === peer && (send.rail ?? 0) === 0);
const fromOnRailZero = (schedule: Schedule, peer: number) => schedule.receives.filter((receive) => receive.peer === peer && (receive.rail ?? 0) === 0);
const isHeader = (message: { readonly step: number; readonly channel: number }) => message.step === HEADER_ONLY.step && message.channel === HEADER_ONLY.channel;

describe("the native plane's headers on the ring of successors", () => {
  it('open every link of the ring with a message that leaves at once, which its receiver expects first; at most one header each way, on no other link', () => {
    const cases = fc.integer({ min: 1, max: 33 }).chain((worldSize) => arbScheduledCase(worldSize));
    fc.assert(
      fc.property(cases, (c) => {
        const { schedules } = scheduledCollective(c);
        const { worldSize } = c;
        schedules.forEach((plain, rank) => {
          const headed = withHeaderExchange((of) => schedules[of]!, worldSize, rank);
          const headers = { sends: headed.sends.filter(isHeader), receives: headed.receives.filter(isHeader) };
          if (worldSize === 1) {
            expect(headed).toBe(plain);
            return;
          }
          const successor = (rank + 1) % worldSize;
          const predecessor = (rank + worldSize - 1) % worldSize;
          expect(firstOnRailZero(headed, successor)).toBeDefined();
          expect(opensWithHeader(headed, successor)).toBe(false);
          expect(fromOnRailZero(headed, predecessor).length).toBeGreaterThan(0);
          expect(headers.sends.length).toBeLessThanOrEqual(1);
          expect(headers.receives.length).toBeLessThanOrEqual(1);
          for (const header of headers.sends) expect([header.peer, header.rail ?? 0, headed.sends.indexOf(header)]).toEqual([successor, 0, 0]);
          for (const header of headers.receives) expect([header.peer, header.rail ?? 0, headed.receives.indexOf(header)]).toEqual([predecessor, 0, 0]);
          expect(headed.sends.length - plain.sends.length).toBe(headers.sends.length);
        });
      }),
      { numRuns: 300 },
    );
  });

  it('choose alike for a call in place and one not, which the descriptor does not tell apart (a copy of the input holds no send back)', () => {
    const cases = fc.integer({ min: 2, max: 33 }).chain((worldSize) => arbScheduledCase(worldSize));
    fc.assert(
      fc.property(cases, (c) => {
        const [own, flipped] = [c, { ...c, inPlace: !c.inPlace }].map((one) => scheduledCollective(one).schedules);
        own!.forEach((schedule, rank) => expect(opensWithHeader(schedule, (rank + 1) % c.worldSize)).toBe(opensWithHeader(flipped![rank]!, (rank + 1) % c.worldSize)));
      }),
      { numRuns: 300 },
    );
  });

  it('cost: at 2 ranks a header only where a rank sends the other nothing (a rooted collective) or waits for it first (hierarchical); at 8 ranks with the ring in rank order, none for a ring, a barrier, an all-to-all, at most one per rank for a tree', () => {
    const headersAt = (c: ScheduledCase) => {
      const { schedules } = scheduledCollective(c);
      return schedules.map((_, rank) => withHeaderExchange((of) => schedules[of]!, c.worldSize, rank).sends.filter(isHeader).length);
    };
    const base = { count: 24, width: 4, op: 'sum', root: 0, channels: 1, inPlace: false, groups: [], rails: 1, railsReversed: false, stripeUnit: 8 } as const;
    const at = (worldSize: number, name: string) => {
      const scheduled = SCHEDULED.find((row) => `${row.collective} ${row.name}` === name)!;
      const order = Array.from({ length: worldSize }, (_, rank) => rank);
      return headersAt({ ...base, worldSize, scheduled, order, groups: [order] });
    };
    const unrooted = ['allReduce ring', 'allReduce pairwise', 'allReduce all-pairs', 'allReduce recursive-doubling', 'allGather ring', 'allGather pairwise', 'reduceScatter ring', 'reduceScatter pairwise', 'allToAll pairwise', 'barrier pairwise', 'barrier dissemination'];
    for (const name of unrooted) expect(at(2, name), name).toEqual([0, 0]);
    // Rooted at 0: rank 1 sends rank 0 nothing (broadcast), or rank 0 sends rank 1 nothing (reduce, gather).
    for (const name of ['broadcast pairwise', 'broadcast binomial', 'broadcast chain']) expect(at(2, name), name).toEqual([0, 1]);
    for (const name of ['reduce pairwise', 'reduce binomial', 'gather pairwise']) expect(at(2, name), name).toEqual([1, 0]);
    for (const name of ['allReduce ring', 'allGather ring', 'reduceScatter ring', 'allToAll pairwise', 'barrier pairwise', 'barrier dissemination', 'allReduce pairwise']) expect(at(8, name), name).toEqual([0, 0, 0, 0, 0, 0, 0, 0]);
    // Recursive doubling sends rank ^ 1 first: odd ranks open their successor's link with a header.
    expect(at(8, 'allReduce recursive-doubling')).toEqual([0, 1, 0, 1, 0, 1, 0, 1]);
    for (const name of ['broadcast binomial', 'reduce binomial']) expect(Math.max(...at(8, name)), name).toBe(1);
  });
});

/** Ranks split between two collectives: another row, the same row with another root, or the same collective a call later. */
const arbSplit = fc.integer({ min: 2, max: 33 }).chain((worldSize) =>
  fc
    .record({
      first: arbScheduledCase(worldSize),
      other: arbScheduledCase(worldSize),
      kind: fc.constantFrom('another collective', 'another root', 'a call behind'),
      inSecond: fc.array(fc.boolean(), { minLength: worldSize, maxLength: worldSize }),
      seed: fc.integer(),
    })
    .filter(({ inSecond }) => inSecond.includes(true) && inSecond.includes(false))
    .map(({ first, other, kind, inSecond, seed }) => {
      // Rails are the job's: both collectives cut their messages alike.
      const job = { rails: first.rails, stripeUnit: first.stripeUnit };
      const second = kind === 'another collective' ? { ...other, ...job } : kind === 'another root' ? { ...first, root: (first.root + 1) % worldSize } : first;
      return { cases: [first, second] as const, inCollective: inSecond.map((second) => (second ? 1 : 0)), seed, kind };
    }),
);

interface Split {
  readonly cases: readonly [ScheduledCase, ScheduledCase];
  readonly inCollective: readonly number[];
  readonly seed: number;
}

const runSplit = ({ cases, inCollective, seed }: Split, rule?: HeaderRule) => runSplitScheduleModel({ collectives: cases.map((c) => scheduledCollective(c)), inCollective }, seededRandom(seed), rule);

describe('ranks that disagree, in the model (runSplitScheduleModel)', () => {
  it('are never left waiting in silence: some rank always takes the other collective\'s message first where it expects one of its own (a mismatch the plane names at once)', () => {
    fc.assert(
      fc.property(arbSplit, (split) => {
        expect(runSplit(split)).toMatch(/^rank \d+ \(collective [01]\) expects message \d+ from rank \d+( rail \d+)?, which sent collective [01]'s$/);
      }),
      { numRuns: 150 },
    );
  }, 120_000);

  it('without the headers they may be: the property above fails for a rule that adds none', () => {
    const none: HeaderRule = (scheduleOf, _, rank) => scheduleOf(rank);
    const run = fc.check(fc.property(arbSplit, (split) => void runSplit(split, none)), { numRuns: 300, seed: 47, endOnFailure: true });
    expect(run.failed).toBe(true);
    expect(String(run.errorInstance)).toMatch(/ScheduleModelError: (silent deadlock: rank \d+ \(collective [01]\) waits for message|every rank ended its own collective and none saw another's message)/);
  }, 120_000);
});
