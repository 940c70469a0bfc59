/**
 * The training task of examples/tfjs-train.ts, shared with its test: a student MLP learns the
 * outputs of a fixed "teacher" MLP on random inputs (a task that is not trivial: the student must
 * fit a nonlinear function), data-parallel over a communicator with rxccl/tfjs. Everything is
 * seeded, so a run at any world size that divides the global batch sees the same data in the same
 * order and starts from the same weights: only the order of the gradient sums differs.
 * (In your own project, import from 'rxccl', 'rxccl/testing' and 'rxccl/tfjs' instead of '../../lib/...'.)
 */
import * as tf from '@tensorflow/tfjs-core';
import '@tensorflow/tfjs-backend-cpu';
import * as tfl from '@tensorflow/tfjs-layers';
import type { Communicator } from '../../lib/index.js';
import { seededRandom } from '../../lib/testing/index.js';
import { lastValueFrom, range, toArray } from 'rxjs';
import { elastic, type ElasticChange } from '../../lib/index.js';
import { averageMetrics, broadcastModel, DistributedOptimizer, type GradientDtype, trainingState } from '../../lib/tfjs/index.js';

export interface TeacherTaskOptions {
  readonly epochs?: number;
  /** Samples per step over all ranks; each rank takes globalBatch / worldSize of them. */
  readonly globalBatch?: number;
  readonly samples?: number;
  readonly gradientDtype?: GradientDtype;
  /** Told each epoch's loss (averaged over every rank and step). */
  readonly onEpoch?: (epoch: number, loss: number) => void;
}

const INPUTS = 8;

// Without it the cpu backend prints a 4-line banner per rank ("install our node backend").
tf.enableProdMode();

function mlp(hidden: readonly number[], seed: number): tfl.Sequential {
  const layers = [...hidden, 1].map((units, index) =>
    tfl.layers.dense({
      units,
      activation: index < hidden.length ? 'tanh' : 'linear',
      kernelInitializer: tfl.initializers.glorotUniform({ seed: seed + index }),
      ...(index === 0 ? { inputShape: [INPUTS] } : {}),
    }),
  );
  return tfl.sequential({ layers });
}

/** The task's inputs and the teacher's labels, the same everywhere. */
function teacherData(samples: number): { inputs: tf.Tensor2D; labels: tf.Tensor2D } {
  const random = seededRandom(7);
  const inputs = tf.tensor2d(Float32Array.from({ length: samples * INPUTS }, () => random() * 4 - 2), [samples, INPUTS]);
  const teacher = mlp([16, 16], 1000);
  const labels = tf.tidy(() => teacher.predict(inputs) as tf.Tensor2D);
  teacher.dispose();
  return { inputs, labels };
}

/**
 * Trains the student on `communicator` (every rank calls it alike) and resolves with each epoch's
 * loss: the mean squared error over the whole global batch, averaged over the epoch's steps.
 */
export async function trainTeacherTask(communicator: Communicator, options: TeacherTaskOptions = {}): Promise<number[]> {
  const { epochs = 5 } = options;
  const task = teacherTask(options);
  // Rank 0's weights everywhere (the seeds already agree; a real job's ranks need not).
  await broadcastModel(communicator, task.student, 0);
  const optimizer = new DistributedOptimizer(task.adam, communicator, { gradientDtype: options.gradientDtype });
  const losses: number[] = [];
  for (let epoch = 0; epoch < epochs; epoch++) {
    let sum = 0;
    for (let step = 0; step < task.stepsPerEpoch; step++) sum += await task.step(optimizer, epoch * task.stepsPerEpoch + step);
    const { loss } = await averageMetrics(communicator, { loss: sum / task.stepsPerEpoch });
    losses.push(loss);
    options.onEpoch?.(epoch, loss);
  }
  task.dispose();
  return losses;
}

/** What `trainTeacherTaskElastically` adds: where a rank dies, and what to say of resizes. */
export interface ElasticTeacherOptions extends TeacherTaskOptions {
  /** Awaited before every step this rank takes, with its epoch and step in the epoch (a rank may die here, say). */
  readonly beforeStep?: (communicator: Communicator, epoch: number, step: number) => void | Promise<void>;
  /** Told of each shrink and growth (`elastic`'s `onResize`). */
  readonly onResize?: (communicator: Communicator, change: ElasticChange) => void;
  /** Told of each step's loss over the whole global batch, once per step, with the world size that computed it. */
  readonly onStep?: (globalStep: number, loss: number, worldSize: number) => void;
}

/**
 * `trainTeacherTask` under the `elastic` operator: the same data, model and steps, each global
 * batch split over the ranks there are (so the loss does not depend on how many), the model and
 * Adam's state committed after every step (`trainingState`). A rank lost shrinks the job and the
 * others go on from the last commit; a process that joins (`rxccl launch --replace`) is admitted
 * at the next one and gets rank 0's state. Resolves with each epoch's loss as `trainTeacherTask`
 * does (a newcomer: of the epochs it saw end).
 */
export async function trainTeacherTaskElastically(world: Communicator, options: ElasticTeacherOptions = {}): Promise<number[]> {
  const { epochs = 5 } = options;
  const task = teacherTask(options);
  if (!world.newcomers.includes(world.rank)) await broadcastModel(world, task.student, 0);
  let optimizer: DistributedOptimizer | null = null;
  const optimizerOn = (communicator: Communicator) => {
    if (optimizer?.communicator !== communicator) optimizer = new DistributedOptimizer(task.adam, communicator, { gradientDtype: options.gradientDtype });
    return optimizer;
  };
  const state = trainingState(task.student, task.adam);
  const stepLosses = await lastValueFrom(
    range(0, epochs * task.stepsPerEpoch).pipe(
      elastic(
        world,
        async (communicator, globalStep) => {
          await options.beforeStep?.(communicator, Math.floor(globalStep / task.stepsPerEpoch), globalStep % task.stepsPerEpoch);
          const local = await task.step(optimizerOn(communicator), globalStep);
          const { loss } = await averageMetrics(communicator, { loss: local });
          options.onStep?.(globalStep, loss, communicator.worldSize);
          return { globalStep, loss };
        },
        { commit: state.commit, restore: state.restore, ...(options.onResize !== undefined ? { onResize: options.onResize } : {}) },
      ),
      toArray(),
    ),
  );
  task.dispose();
  const losses: number[] = [];
  for (let epoch = 0; epoch < epochs; epoch++) {
    const seen = stepLosses.filter(({ globalStep }) => Math.floor(globalStep / task.stepsPerEpoch) === epoch);
    if (seen.length < task.stepsPerEpoch) continue;
    const loss = seen.reduce((sum, { loss: each }) => sum + each, 0) / seen.length;
    losses.push(loss);
    options.onEpoch?.(epoch, loss);
  }
  return losses;
}

/** The task's data, student and optimizer, and one data-parallel step of it. */
function teacherTask(options: TeacherTaskOptions) {
  const { globalBatch = 64, samples = 1024 } = options;
  const { inputs, labels } = teacherData(samples);
  const student = mlp([32, 32], 1);
  const adam = tf.train.adam(0.01);
  const variables = student.trainableWeights.map((weight) => weight.read() as tf.Variable);
  return {
    student,
    adam,
    stepsPerEpoch: Math.floor(samples / globalBatch),
    /**
     * Step `globalStep` on this rank's share of its global batch (the ranks' shares differ by one
     * sample at most): its loss scaled by its share of the batch times the world size, so that the
     * average over the ranks is the loss of the whole batch, as is the averaged gradient. Returns
     * this rank's scaled loss.
     */
    async step(optimizer: DistributedOptimizer, globalStep: number): Promise<number> {
      const { rank, worldSize } = optimizer.communicator;
      const first = Math.floor((rank * globalBatch) / worldSize);
      const shard = Math.floor(((rank + 1) * globalBatch) / worldSize) - first;
      const start = (globalStep % Math.floor(samples / globalBatch)) * globalBatch + first;
      const weight = (shard * worldSize) / globalBatch;
      const x = tf.slice(inputs, [start, 0], [shard, INPUTS]);
      const y = tf.slice(labels, [start, 0], [shard, 1]);
      const { loss } = await optimizer.minimize(() => tf.mul(tf.losses.meanSquaredError(y, student.apply(x) as tf.Tensor2D), weight) as tf.Scalar, variables);
      tf.dispose([x, y]);
      return loss;
    },
    dispose() {
      tf.dispose([inputs, labels]);
      student.dispose();
    },
  };
}
