/**
 * Data-parallel training of a TensorFlow.js model with rxccl/tfjs (Horovod-style): a student MLP
 * learns a teacher MLP's outputs; every rank trains on its shard of each global batch and the
 * DistributedOptimizer averages the gradients (fused) before each step.
 *
 *   rxccl launch -n 1 -- tsx examples/tfjs-train.ts
 *   rxccl launch -n 4 -- tsx examples/tfjs-train.ts      # the same losses, to float rounding
 *
 * Elastic (Horovod elastic): `--elastic` trains under the `elastic` operator, committing the model
 * and Adam's state after every step; `--kill-rank R --kill-epoch E` makes rank R die (SIGKILL) at
 * the first step of epoch E, and `--min-ranks N` holds the steps while fewer ranks run and no
 * process waits to join (`--epochs N`, default 5, for either form):
 *
 *   rxccl launch --keep-going --replace 1 -n 4 -- tsx examples/tfjs-train.ts --elastic --kill-rank 3 --kill-epoch 2
 *
 * Rank 0 then also prints each resize and the first step after it, with the wall-clock time (ms
 * since the epoch), and the dying rank when it dies.
 *
 * Needs @tensorflow/tfjs-core, -layers and -backend-cpu (devDependencies here; in your project,
 * `npm install @tensorflow/tfjs-core @tensorflow/tfjs-layers @tensorflow/tfjs-backend-cpu`).
 * EXAMPLE_GRADIENT_DTYPE=f16 or bf16 sends the gradients in half the bytes.
 */
import { parseArgs } from 'node:util';
import { openSession } from '../lib/index.js';
import type { GradientDtype } from '../lib/tfjs/index.js';
import { trainTeacherTask, trainTeacherTaskElastically } from './tfjs/teacher-task.js';

const { values } = parseArgs({
  options: { elastic: { type: 'boolean' }, epochs: { type: 'string' }, 'kill-rank': { type: 'string' }, 'kill-epoch': { type: 'string' }, 'min-ranks': { type: 'string' } },
});
const session = await openSession();
const say = (line: string) => session.rank === 0 && console.log(line);
const gradientDtype = (process.env.EXAMPLE_GRADIENT_DTYPE ?? 'f32') as GradientDtype;
const onEpoch = (epoch: number, loss: number) => say(`epoch ${epoch} loss ${loss.toPrecision(8)}`);
const epochs = Number(values.epochs ?? 5);

let losses: number[];
if (values.elastic !== true) {
  losses = await trainTeacherTask(session, { epochs, gradientDtype, onEpoch });
} else {
  const killRank = values['kill-rank'] === undefined ? null : Number(values['kill-rank']);
  const killEpoch = Number(values['kill-epoch'] ?? 2);
  const minRanks = Number(values['min-ranks'] ?? 1);
  const original = !session.newcomers.includes(session.rank);
  let resized = false;
  losses = await trainTeacherTaskElastically(session, {
    epochs,
    gradientDtype,
    onEpoch,
    beforeStep: async (communicator, epoch, step) => {
      if (original && session.rank === killRank && epoch === killEpoch && step === 0) {
        console.log(`rank ${session.rank} dies at epoch ${killEpoch} at ${Date.now()}`);
        process.kill(process.pid, 'SIGKILL');
      }
      while (communicator.rank === 0 && communicator.worldSize + communicator.joinersWaiting < minRanks) await new Promise((resolve) => setTimeout(resolve, 10));
    },
    onResize: (communicator, change) => {
      resized = true;
      if (communicator.rank !== 0) return;
      const why = change.kind === 'shrink' ? `rank ${change.lost.rank} lost` : `ranks [${change.newcomers.join(',')}] joined`;
      console.log(`${why}: ${communicator.worldSize} ranks from ${Date.now()}`);
    },
    onStep: (globalStep, _loss, worldSize) => {
      if (!resized) return;
      resized = false;
      say(`step ${globalStep} done on ${worldSize} ranks at ${Date.now()}`);
    },
  });
}
say(`final loss ${losses.at(-1)!.toPrecision(8)}`);
await session.close();
