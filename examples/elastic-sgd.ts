/**
 * Elastic data-parallel training: the training loop is an RxJS pipeline of steps, and
 * `retryOnShrink` keeps it going when a rank dies. Each rank holds the same model `w` and its own
 * target `t_r`; the loss is the mean over ranks of |w - t_r|^2 / 2, so each step's gradient is
 * allReduce(w - t_r, 'avg') and the model converges to the mean of the targets of the ranks still
 * there. `--kill-rank R --kill-step S` makes rank R kill itself (SIGKILL) at step S: the others'
 * all-reduce of that step fails naming it, they shrink, redo the step on the ranks left, and end
 * at the mean of the survivors' targets, which each checks.
 *
 *   rxccl launch --keep-going -n 4 -- tsx examples/elastic-sgd.ts --kill-rank 3 --kill-step 5
 */
import { parseArgs } from 'node:util';
import { range } from 'rxjs';
import { type Communicator, openSession, retryOnShrink } from '../lib/index.js';

const STEPS = 40;
const LEARNING_RATE = 0.5;
const DIMENSION = 4;

const { values } = parseArgs({ options: { 'kill-rank': { type: 'string' }, 'kill-step': { type: 'string' } } });
const killRank = values['kill-rank'] === undefined ? null : Number(values['kill-rank']);
const killStep = Number(values['kill-step'] ?? 5);

const world = await openSession();
const jobRank = world.rank;
const target = Float64Array.from({ length: DIMENSION }, (_, index) => (jobRank + 1) * (index + 1));
const model = new Float64Array(DIMENSION);
let communicator: Communicator = world;

/** One step on whichever communicator the pipeline is on now: the averaged gradient, then the update. */
function step(on: Communicator, index: number) {
  if (index === killStep && jobRank === killRank) process.kill(process.pid, 'SIGKILL');
  const gradient = model.map((value, dimension) => value - target[dimension]!);
  return on.allReduce$(gradient, 'avg');
}

range(0, STEPS)
  .pipe(
    retryOnShrink(world, step, {
      onShrink: (shrunk, lost) => {
        communicator = shrunk;
        console.log(`rank ${lost.rank} lost; going on with ranks [${shrunk.jobRanks.join(',')}] (rank ${shrunk.rank} of ${shrunk.worldSize})`);
      },
    }),
  )
  .subscribe({
    next: (gradient) => gradient.forEach((value, dimension) => (model[dimension]! -= LEARNING_RATE * value)),
    error: (error: unknown) => {
      console.error(error);
      process.exitCode = 1;
    },
    complete: () => void finish(),
  });

/** Checks the model against the mean of the targets of the ranks left, then leaves. */
async function finish(): Promise<void> {
  const survivors = communicator.jobRanks;
  const expected = Array.from({ length: DIMENSION }, (_, index) => (survivors.reduce((sum, rank) => sum + rank + 1, 0) / survivors.length) * (index + 1));
  const error = Math.max(...expected.map((value, index) => Math.abs(value - model[index]!)));
  console.log(`rank ${jobRank}: ${STEPS} steps on ranks [${survivors.join(',')}]: model [${[...model].map((value) => value.toFixed(4)).join(', ')}], ${error < 1e-6 ? 'the mean of their targets' : `off by ${error}`}`);
  if (error >= 1e-6) process.exitCode = 1;
  await world.close();
}
