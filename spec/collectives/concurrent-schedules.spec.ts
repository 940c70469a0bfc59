/**
 * Several collectives at once on one job's ranks, each on a communicator of its own (rxccl/testing
 * `runConcurrentScheduleModel`): the schedule model's check of what lib/communicator/communicator-plane.ts
 * builds, a communicator's own data links and engine between its members (docs/architecture.md
 * "Communicators"). Random jobs of 2..8 ranks, 2..3 communicators drawn as any subsets of them
 * (overlapping, the world too, members in any order), each running one or two collectives drawn
 * from every scheduled row of the algorithm table, every rank issuing its calls in an order of its
 * own (a communicator's own calls in its call order), the events in random orders:
 * - on links of their own, never a deadlock, never a race, every result exact, whatever the orders;
 * - on links the communicators share, that holds only where every rank issues in one order; ranks
 *   issuing two communicators' calls in opposite orders deadlock (the counterexample below), which
 *   is why a communicator opens links of its own rather than running on the job's.
 * spec/communicator/concurrent-communicators-processes.spec.ts runs such calls on the real engine.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type ModelCollective, runConcurrentScheduleModel, ScheduleModelError, seededRandom } from '../../lib/testing/index.js';
import { arbScheduledCase, expectExactOutputs, SCHEDULED, type ScheduledCase, scheduledCollective } from '../helpers/scheduled-collective.js';

/** A job's communicators (members as job ranks, in communicator order), each one's collectives, and each job rank's issue order (the job as large as it). */
interface ConcurrentCase {
  readonly communicators: number[][];
  /** By collective: its communicator and its case (on the communicator's ranks). */
  readonly collectives: { communicator: number; c: ScheduledCase }[];
  readonly issueOrder: number[][];
  readonly seed: number;
}

/**
 * Each job rank's calls: its communicators' collectives shuffled by `seeds[rank]`, each
 * communicator's own in its call order (as a program must issue them).
 */
function issueOrders(jobSize: number, communicators: readonly number[][], collectives: readonly { communicator: number }[], seeds: readonly number[] | null): number[][] {
  return Array.from({ length: jobSize }, (_, jobRank) => {
    const mine = collectives.flatMap(({ communicator }, collective) => (communicators[communicator]!.includes(jobRank) ? [collective] : []));
    if (seeds === null) return mine;
    // Shuffle the communicators' turns, then give each turn its communicator's next call.
    const turns = mine.map((collective) => collectives[collective]!.communicator);
    const random = seededRandom(seeds[jobRank]!);
    for (let at = turns.length - 1; at > 0; at--) {
      const other = Math.floor(random() * (at + 1));
      [turns[at], turns[other]] = [turns[other]!, turns[at]!];
    }
    const next = new Map<number, number[]>(communicators.map((_, communicator) => [communicator, mine.filter((collective) => collectives[collective]!.communicator === communicator)]));
    return turns.map((communicator) => next.get(communicator)!.shift()!);
  });
}

/** `sameOrder`: every rank issues in one order (the collectives' listing); else each in its own. */
const arbConcurrentCase = (sameOrder: boolean): fc.Arbitrary<ConcurrentCase> =>
  fc.integer({ min: 2, max: 8 }).chain((jobSize) => {
    const ranks = Array.from({ length: jobSize }, (_, rank) => rank);
    return fc
      .array(fc.shuffledSubarray(ranks, { minLength: 1 }), { minLength: 2, maxLength: 3 })
      .chain((communicators) =>
        fc.record({
          communicators: fc.constant(communicators),
          collectives: fc
            .tuple(...communicators.map((members, communicator) => fc.array(arbScheduledCase(members.length).map((c) => ({ communicator, c })), { minLength: 1, maxLength: 2 })))
            .map((lists) => lists.flat()),
          seeds: fc.array(fc.integer(), { minLength: jobSize, maxLength: jobSize }),
          seed: fc.integer(),
        }),
      )
      .map(({ seeds, ...drawn }) => ({ ...drawn, issueOrder: issueOrders(jobSize, drawn.communicators, drawn.collectives, sameOrder ? null : seeds) }));
  });

/** Runs the case in the model on `links` and checks every collective's outputs exact. */
function runExactly({ communicators, collectives, issueOrder, seed }: ConcurrentCase, links: 'own' | 'shared'): void {
  const model: ModelCollective[] = collectives.map(({ communicator, c }) => ({ communicator, ...scheduledCollective(c) }));
  const { outputs } = runConcurrentScheduleModel({ communicators, collectives: model, issueOrder, links }, seededRandom(seed));
  collectives.forEach(({ communicator, c }, collective) => expectExactOutputs(c, outputs[collective]!, `collective ${collective} on [${communicators[communicator]!.join(',')}]: `));
}

const ranksOf = (size: number) => Array.from({ length: size }, (_, rank) => rank);
const row = (collective: string, name: string) => SCHEDULED.find((scheduled) => scheduled.collective === collective && scheduled.name === name)!;
/** A plain case of `row` on `worldSize` ranks: 4 elements of 4 bytes, sum, root 0, the ring in rank order, one channel and rail. */
const plainCase = (worldSize: number, scheduled: ScheduledCase['scheduled']): ScheduledCase => ({
  worldSize,
  scheduled,
  count: 4,
  width: 4,
  op: 'sum',
  root: 0,
  order: ranksOf(worldSize),
  channels: 1,
  inPlace: false,
  groups: [ranksOf(worldSize)],
  rails: 1,
  railsReversed: false,
  stripeUnit: 8,
});

describe('collectives of several communicators at once, in the schedule model (runConcurrentScheduleModel)', () => {
  it('on links of their own (the native plane: a communicator its own data links): never a deadlock, no race, every result exact, whatever order each rank issues its calls in', () => {
    fc.assert(
      fc.property(arbConcurrentCase(false), (drawn) => runExactly(drawn, 'own')),
      { numRuns: 300 },
    );
  });

  it('on links the communicators share: exact too where every rank issues its calls in one order', () => {
    fc.assert(
      fc.property(arbConcurrentCase(true), (drawn) => runExactly(drawn, 'shared')),
      { numRuns: 150 },
    );
  });

  it("the counterexample for shared links: 4 ranks on {0,1}, {2,3}, {1,2,3} and the world, odd ranks issuing in reverse, deadlock on the job's links in every event order, and complete exactly on links of their own", () => {
    // Each link carries one in-order stream read straight into the memory a receive names, with
    // nowhere to set an early message aside: rank 1, which issued the world's all-gather first,
    // reads the world's message from rank 0 on the job's link 0>1, where rank 0, which issued the
    // pair's all-reduce first, put the pair's; so rank 1 never folds, and rank 0 waits for the
    // pair's step 1 from it: a deadlock, whatever the events' order. Links of a communicator's own carry only its
    // calls, so each rank's order is its own business: the reason for rxccl's per-communicator links.
    const communicators = [[0, 1], [2, 3], [1, 2, 3], ranksOf(4)];
    const collectives = [
      { communicator: 0, c: plainCase(2, row('allReduce', 'pairwise')) },
      { communicator: 1, c: plainCase(2, row('allReduce', 'ring')) },
      { communicator: 2, c: plainCase(3, row('broadcast', 'chain')) },
      { communicator: 3, c: plainCase(4, row('allGather', 'ring')) },
    ];
    const inOrder = issueOrders(4, communicators, collectives, null);
    const issueOrder = inOrder.map((calls, jobRank) => (jobRank % 2 === 1 ? [...calls].reverse() : calls));
    expect(issueOrder).toEqual([[0, 3], [3, 2, 0], [1, 2, 3], [3, 2, 1]]);
    const deadlocks = new Set<string>();
    for (let seed = 0; seed < 30; seed++) {
      runExactly({ communicators, collectives, issueOrder, seed }, 'own');
      try {
        runExactly({ communicators, collectives, issueOrder, seed }, 'shared');
        deadlocks.add('completed');
      } catch (error) {
        expect(error).toBeInstanceOf(ScheduleModelError);
        deadlocks.add((error as Error).message);
      }
    }
    expect([...deadlocks].every((message) => message.startsWith('deadlock: '))).toBe(true);
    // The pair {0,1}, first on rank 0, last on rank 1: rank 0 waits for its step-1 message from rank 1.
    expect(deadlocks).toContain('deadlock: collective 0 (communicator 0, job ranks 0,1) rank 0 waits for message 1 from rank 1, which never comes');
  });

  it('names what is wrong with a job: a communicator not of its ranks, a rank that does not issue a collective of its communicator, schedules for another size, a communicator that is not there', () => {
    const pair = { communicator: 0, ...scheduledCollective(plainCase(2, row('allReduce', 'pairwise'))) };
    const random = seededRandom(1);
    expect(() => runConcurrentScheduleModel({ communicators: [[0, 2]], collectives: [pair], issueOrder: [[0], [0]], links: 'own' }, random)).toThrow('communicator 0 [0,2] is not distinct job ranks of 0..1');
    expect(() => runConcurrentScheduleModel({ communicators: [[0, 1]], collectives: [pair, pair], issueOrder: [[0, 1], [1]], links: 'own' }, random)).toThrow('job rank 1 issues collectives 1, its communicators have 0,1');
    expect(() => runConcurrentScheduleModel({ communicators: [[0, 1, 2]], collectives: [pair], issueOrder: [[0], [0], [0]], links: 'own' }, random)).toThrow('has 2 schedules for 3 ranks');
    expect(() => runConcurrentScheduleModel({ communicators: [[0, 1]], collectives: [{ ...pair, communicator: 1 }], issueOrder: [[0], [0]], links: 'own' }, random)).toThrow('collective 0 runs on communicator 1, of 1');
  });
});
