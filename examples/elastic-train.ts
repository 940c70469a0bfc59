/**
 * Elastic training both ways with the `elastic` operator (Horovod elastic's commit/restore): a
 * rank that dies is left behind (the others shrink and go on from their last snapshot), and a
 * replacement that `rxccl launch --replace` starts joins at the next commit (the others grow; it
 * gets the model from rank 0 and skips to where they are). Each step is a global batch of BATCH
 * items split over the ranks there are, summed and divided by BATCH, so the model does not depend
 * on how many ranks computed it: every rank checks at the end that it holds the model of an
 * uninterrupted one-rank run.
 *
 *   rxccl launch --keep-going --replace 1 -n 4 -- tsx examples/elastic-train.ts --kill-rank 2 --kill-step 10
 *
 * `--steps N` (default 80); `--min-ranks N` holds the steps while the job has fewer ranks and no
 * process waits to join (Horovod's --min-np), so a replacement that starts slowly still comes in.
 *
 * Rank 0 prints a line on each resize, with the wall-clock time (ms since the epoch) so that the
 * time from a death to the next step is read off the output; the dying rank prints when it dies.
 */
import { parseArgs } from 'node:util';
import { range } from 'rxjs';
import { elastic, openSession } from '../lib/index.js';

const BATCH = 24;
const DIMENSION = 16;
const LEARNING_RATE = 0.1;
/** Each step's compute, as a forward and backward pass would take. */
const STEP_MS = 20;

const { values } = parseArgs({
  options: { 'kill-rank': { type: 'string' }, 'kill-step': { type: 'string' }, steps: { type: 'string' }, 'min-ranks': { type: 'string' } },
});
const killRank = values['kill-rank'] === undefined ? null : Number(values['kill-rank']);
const killStep = Number(values['kill-step'] ?? 10);
const STEPS = Number(values.steps ?? 80);
/** Horovod's --min-np: below this many ranks, rank 0 holds each step until a process waits to join. */
const minRanks = Number(values['min-ranks'] ?? 1);

/** Item `item` of batch `step`'s gradient at `model` (of a quadratic whose minimum moves each step). */
function addGradient(into: Float64Array, model: Float64Array, step: number, item: number): void {
  for (let dimension = 0; dimension < DIMENSION; dimension++) into[dimension]! += model[dimension]! - Math.sin(step * BATCH + item + dimension);
}

/** The model after `steps` steps on one rank: what every rank must end with. */
function uninterrupted(steps: number): Float64Array {
  const model = new Float64Array(DIMENSION);
  for (let step = 0; step < steps; step++) {
    const sum = new Float64Array(DIMENSION);
    for (let item = 0; item < BATCH; item++) addGradient(sum, model, step, item);
    for (let dimension = 0; dimension < DIMENSION; dimension++) model[dimension]! -= (LEARNING_RATE * sum[dimension]!) / BATCH;
  }
  return model;
}

const world = await openSession();
const newcomer = world.newcomers.includes(world.rank);
const model = new Float64Array(DIMENSION);
let lastStepAt = Date.now();

range(0, STEPS)
  .pipe(
    elastic(
      world,
      async (communicator, step) => {
        if (!newcomer && world.rank === killRank && step === killStep) {
          console.log(`rank ${world.rank} dies at step ${step} at ${Date.now()}`);
          process.kill(process.pid, 'SIGKILL');
        }
        while (communicator.rank === 0 && communicator.worldSize + communicator.joinersWaiting < minRanks) await new Promise((resolve) => setTimeout(resolve, 10));
        await new Promise((resolve) => setTimeout(resolve, STEP_MS));
        const sum = new Float64Array(DIMENSION);
        for (let item = communicator.rank; item < BATCH; item += communicator.worldSize) addGradient(sum, model, step, item);
        const total = await communicator.allReduce(sum);
        for (let dimension = 0; dimension < DIMENSION; dimension++) model[dimension]! -= (LEARNING_RATE * total[dimension]!) / BATCH;
        lastStepAt = Date.now();
        return step;
      },
      {
        commit: () => model.slice(),
        restore: (saved: Float64Array) => model.set(saved),
        onResize: (communicator, change) => {
          if (communicator.rank !== 0) return;
          const why = change.kind === 'shrink' ? `rank ${change.lost.rank} lost` : `ranks [${change.newcomers.join(',')}] joined`;
          console.log(`${why}: ${communicator.worldSize} ranks from ${Date.now()} (last step at ${lastStepAt})`);
        },
      },
    ),
  )
  .subscribe({
    next: (step) => {
      if (step === STEPS - 1) {
        const expected = uninterrupted(STEPS);
        const worst = Math.max(...model.map((value, dimension) => Math.abs(value - expected[dimension]!) / Math.max(1e-12, Math.abs(expected[dimension]!))));
        console.log(`final model ${model[0]!.toFixed(9)} (relative difference to an uninterrupted run ${worst.toExponential(2)})`);
        if (worst > 1e-9) process.exitCode = 1;
      }
    },
    error: (error: unknown) => {
      console.error(error);
      process.exitCode = 1;
    },
  });
