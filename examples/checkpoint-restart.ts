/**
 * A property test of checkpoint and restart, on `rxccl/testing`'s simulated job. Data-parallel
 * training: each step every rank all-reduces its gradient and adds the sum to its weights, then
 * checkpoints them to its disk. The job runs as `torchrun --max_restarts 3` runs it: a rank that
 * dies restarts the whole worker group, and each rank resumes from its disk. The property: a kill
 * anywhere (any rank, any step, any fault point) leaves the final weights those of a run
 * without one.
 *
 * The seeded program has two bugs, and the property finds each while the other is fixed:
 * - a torn checkpoint: it is two writes, the step and then the weights; a crash between them (the
 *   fault point "step saved") resumes at the new step with the old weights, and one step's update
 *   is lost. Shrunk: two ranks, rank 0 killed there at its first checkpoint. Fix: one write.
 * - ranks that resume apart: a rank stopped before it saved is a step behind the others, and
 *   all-reduces step k against their step k + 1. Shrunk: a kill where one rank has saved a step,
 *   and an interleaving where another had not yet heard that step's result. Fix: every rank
 *   resumes from rank 0's checkpoint (a broadcast), as DDP loads one checkpoint everywhere: the
 *   weights are the same on every rank, so any rank's is the job's.
 *
 *   tsx examples/checkpoint-restart.ts     # prints the shrunk counterexamples, then checks the fix
 */
import fc from 'fast-check';
import { pathToFileURL } from 'node:url';
import { judgeJob, type KillFault, simulateJob, type SimulatedRank } from '../lib/testing/index.js';

export const STEPS = 4;
const WEIGHTS = 2;

/** Which of the two fixes a run has: one write per checkpoint, and resuming from rank 0's. */
export interface Checkpointing {
  readonly atomic: boolean;
  readonly fromRankZero: boolean;
}

interface Checkpoint {
  readonly step: number;
  readonly weights: number[];
}

/** The gradient of `rank` at `step`: any function of the two that a reference can repeat. */
const gradient = (step: number, rank: number) => Int32Array.of(step + rank, 1);

/** The weights after `STEPS` steps of `worldSize` ranks, without a fault. */
export function referenceWeights(worldSize: number): number[] {
  const weights = new Array<number>(WEIGHTS).fill(0);
  for (let step = 0; step < STEPS; step++) {
    for (let rank = 0; rank < worldSize; rank++) gradient(step, rank).forEach((value, index) => (weights[index]! += value));
  }
  return weights;
}

/** Where this rank resumes: its own checkpoint, or rank 0's. */
async function resume(rank: SimulatedRank, { atomic, fromRankZero }: Checkpointing): Promise<Checkpoint> {
  const own = atomic ? rank.disk.read<Checkpoint>('checkpoint') : { step: rank.disk.read<number>('step'), weights: rank.disk.read<number[]>('weights') };
  const saved: Checkpoint = { step: own?.step ?? 0, weights: own?.weights ?? new Array<number>(WEIGHTS).fill(0) };
  if (!fromRankZero) return saved;
  const [step, ...weights] = await rank.broadcast(Int32Array.of(saved.step, ...saved.weights), 0);
  return { step: step!, weights };
}

async function save(rank: SimulatedRank, { atomic }: Checkpointing, checkpoint: Checkpoint): Promise<void> {
  if (atomic) return rank.disk.write('checkpoint', checkpoint);
  rank.disk.write('step', checkpoint.step);
  // A crash here leaves the new step with the old weights.
  await rank.faultPoint('step saved');
  rank.disk.write('weights', checkpoint.weights);
}

/** One rank's training; resolves with its final weights. */
export async function train(rank: SimulatedRank, checkpointing: Checkpointing): Promise<number[]> {
  let { step, weights } = await resume(rank, checkpointing);
  for (; step < STEPS; step++) {
    const sum = await rank.allReduce(gradient(step, rank.rank));
    weights = weights.map((weight, index) => weight + sum[index]!);
    await save(rank, checkpointing, { step: step + 1, weights });
    await rank.faultPoint('saved');
  }
  return weights;
}

/** A kill of any rank at any step or fault point of the first run. */
const arbKill = fc.integer({ min: 2, max: 4 }).chain((worldSize) =>
  fc.record({
    worldSize: fc.constant(worldSize),
    kill: fc.oneof(
      fc.record({ kind: fc.constant('kill' as const), rank: fc.integer({ min: 0, max: worldSize - 1 }), atPoint: fc.constantFrom('step saved', 'saved'), occurrence: fc.integer({ min: 0, max: STEPS - 1 }) }),
      fc.record({ kind: fc.constant('kill' as const), rank: fc.integer({ min: 0, max: worldSize - 1 }), atStep: fc.integer({ min: 0, max: STEPS }) }),
    ) as fc.Arbitrary<KillFault>,
  }),
);

/** Every rank ends with the weights of a run without a fault, wherever the kill strikes. */
export function checkpointProperty(checkpointing: Checkpointing) {
  return fc.asyncProperty(arbKill, fc.scheduler(), async ({ worldSize, kill }, scheduler) => {
    const result = await simulateJob({ worldSize, transport: 'tcp_peer', restarts: 3, faults: [kill], timeoutMs: 2_000, scheduler }, (rank) => train(rank, checkpointing));
    const expected = referenceWeights(worldSize);
    const verdict = judgeJob(result, (weights) => (JSON.stringify(weights) === JSON.stringify(expected) ? null : `weights [${weights.join(', ')}], expected [${expected.join(', ')}]`));
    const restarts = result.restarts.map((restart) => `rank ${restart.rank} ${restart.cause}`).join('; ') || 'no restart';
    if (verdict.kind !== 'ok') throw new Error(`${verdict.text} (${restarts})`);
  });
}

export function checkCheckpoints(checkpointing: Checkpointing, seed: number) {
  return fc.check(checkpointProperty(checkpointing), { seed, numRuns: 100 });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  for (const [name, checkpointing] of [
    ['torn checkpoint (resumes from rank 0)', { atomic: false, fromRankZero: true }],
    ['ranks resume apart (atomic checkpoint)', { atomic: true, fromRankZero: false }],
    ['both fixed', { atomic: true, fromRankZero: true }],
  ] as const) {
    const details = await checkCheckpoints(checkpointing, 7);
    console.log(details.failed ? `${name}: found and shrunk: ${String(details.errorInstance)}\n${fc.defaultReportMessage(details)}\n` : `${name}: holds over 100 drawn kills and interleavings`);
  }
}
