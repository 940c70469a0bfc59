/**
 * A property test of a small protocol written on rxccl, run on `rxccl/testing`'s simulated job: a
 * parameter-server round. Workers send their gradients to the server (rank 0), which applies each
 * weighted by that worker's batch size and broadcasts the new parameters.
 *
 * The seeded bug: the server takes gradients from any rank, in arrival order, but weights them as
 * if they came in rank order. Every run on a real network may well pass (rank 1 is usually first);
 * fast-check's scheduler tries other orders of delivery, finds one that breaks the property, and
 * shrinks it: zeros everywhere but one gradient, whose message arrives before another worker's
 * with a different batch size. The report shows that order, and its seed replays it.
 *
 *   tsx examples/property-test.ts          # prints the shrunk counterexample, then checks the fix
 */
import fc from 'fast-check';
import { pathToFileURL } from 'node:url';
import { arbWorld, simulateJob, type SimulatedRank } from '../lib/testing/index.js';

const PARAMETERS = 3;
const GRADIENT_TAG = 1;

/** One round at `rank`; every rank returns the new parameters. */
export async function parameterServerRound(
  rank: SimulatedRank,
  parameters: Int32Array,
  gradient: Int32Array,
  batchSizes: readonly number[],
  buggy: boolean,
): Promise<Int32Array> {
  if (rank.rank !== 0) {
    await rank.send(0, GRADIENT_TAG, gradient);
    return rank.broadcast(parameters, 0);
  }
  const next = Int32Array.from(parameters);
  for (let worker = 1; worker < rank.worldSize; worker++) {
    // The bug: `null` takes the next gradient from any rank, yet it is weighted as `worker`'s.
    const received = (await rank.receive(buggy ? null : worker, GRADIENT_TAG, { dtype: 'i32', count: PARAMETERS })) as Int32Array;
    received.forEach((value, index) => (next[index]! -= batchSizes[worker]! * value));
  }
  return rank.broadcast(next, 0);
}

/** What the round must compute: parameters minus every worker's gradient times its batch size. */
function reference(parameters: readonly number[], gradients: readonly (readonly number[])[], batchSizes: readonly number[]): number[] {
  return parameters.map((value, index) => gradients.slice(1).reduce((sum, gradient, worker) => sum - batchSizes[worker + 1]! * gradient[index]!, value));
}

/**
 * A round: the parameters, and the world with each rank's batch size and gradient (rank 0's go
 * unused: it is the server). `arbWorld` draws the ranks together, so fast-check shrinks the world
 * too, towards the three ranks the bug needs (two workers). The delivery order, which the bug also
 * needs, is the scheduler's: its draws do not shrink, and in a smaller world they order the
 * messages differently, so some seeds stop at four or five.
 */
const arbRound = fc.record({
  parameters: fc.array(fc.integer({ min: -1000, max: 1000 }), { minLength: PARAMETERS, maxLength: PARAMETERS }),
  world: arbWorld(
    fc.record({
      batchSize: fc.integer({ min: 1, max: 8 }),
      gradient: fc.array(fc.integer({ min: -100, max: 100 }), { minLength: PARAMETERS, maxLength: PARAMETERS }),
    }),
    { minWorldSize: 2, maxWorldSize: 5 },
  ),
});

/** Every rank ends the round with the reference parameters, whatever the order messages arrive in. */
export function parameterServerProperty(buggy: boolean) {
  return fc.asyncProperty(arbRound, fc.scheduler(), async ({ parameters, world: { worldSize, ranks } }, scheduler) => {
    const batchSizes = ranks.map((drawn) => drawn.batchSize);
    const gradients = ranks.map((drawn) => drawn.gradient);
    const result = await simulateJob({ worldSize, transport: 'tcp_peer', scheduler }, async (rank) =>
      Array.from(await parameterServerRound(rank, Int32Array.from(parameters), Int32Array.from(gradients[rank.rank]!), batchSizes, buggy)),
    );
    const expected = reference(parameters, gradients, batchSizes);
    for (const outcome of result.ranks) {
      if (outcome.status !== 'returned') throw new Error(`rank ${outcome.rank} ${outcome.status}`);
      if (JSON.stringify(outcome.value) !== JSON.stringify(expected)) {
        throw new Error(`rank ${outcome.rank} got [${outcome.value.join(', ')}], expected [${expected.join(', ')}]`);
      }
    }
  });
}

/** Runs the property; the details hold the shrunk counterexample (with its interleaving) and the seed to replay it. */
export function checkParameterServer(buggy: boolean, seed?: number) {
  return fc.check(parameterServerProperty(buggy), { numRuns: 200, ...(seed === undefined ? {} : { seed }) });
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const buggy = await checkParameterServer(true);
  console.log(buggy.failed ? `the seeded bug, found:\n${fc.defaultReportMessage(buggy)}` : 'the seeded bug went unnoticed');
  const fixed = await checkParameterServer(false);
  console.log(fixed.failed ? `the fix fails:\n${fc.defaultReportMessage(fixed)}` : `the fix holds over ${fixed.numRuns} runs`);
  process.exitCode = buggy.failed && !fixed.failed ? 0 : 1;
}
