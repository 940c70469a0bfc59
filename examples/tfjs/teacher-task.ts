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
import { averageMetrics, broadcastModel, DistributedOptimizer, type GradientDtype } from '../../lib/tfjs/index.js';

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
  const { epochs = 5, globalBatch = 64, samples = 1024 } = options;
  const { rank, worldSize } = communicator;
  if (globalBatch % worldSize !== 0) throw new Error(`the global batch ${globalBatch} does not split over ${worldSize} ranks`);
  const shard = globalBatch / worldSize;
  const { inputs, labels } = teacherData(samples);
  const student = mlp([32, 32], 1);
  // Rank 0's weights everywhere (the seeds already agree; a real job's ranks need not).
  await broadcastModel(communicator, student, 0);
  const optimizer = new DistributedOptimizer(tf.train.adam(0.01), communicator, { gradientDtype: options.gradientDtype });
  const variables = student.trainableWeights.map((weight) => weight.read() as tf.Variable);
  const losses: number[] = [];
  for (let epoch = 0; epoch < epochs; epoch++) {
    let sum = 0;
    const steps = Math.floor(samples / globalBatch);
    for (let step = 0; step < steps; step++) {
      const start = step * globalBatch + rank * shard;
      const x = tf.slice(inputs, [start, 0], [shard, INPUTS]);
      const y = tf.slice(labels, [start, 0], [shard, 1]);
      const { loss } = await optimizer.minimize(() => tf.losses.meanSquaredError(y, student.apply(x) as tf.Tensor2D) as tf.Scalar, variables);
      tf.dispose([x, y]);
      sum += loss;
    }
    const { loss } = await averageMetrics(communicator, { loss: sum / steps });
    losses.push(loss);
    options.onEpoch?.(epoch, loss);
  }
  tf.dispose([inputs, labels]);
  student.dispose();
  return losses;
}
