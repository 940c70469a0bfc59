/**
 * rxccl/tfjs's gradient averaging (#48, "Communication"): a model of `--layers` dense layers of
 * `--units` units (two gradient tensors each: 52 for the default 26), its gradients averaged per
 * step by the DistributedOptimizer's fused all-reduce against one all-reduce per gradient tensor
 * (awaited one by one: a loop over the model's gradients), and the whole training step (gradients,
 * averaging, Adam) in both forms. Forms alternated sample by sample in one job.
 *
 *   npx tsx bench/tfjs/run.ts [-n 2,4] [--layers 26] [--units 64] [--samples 7] [--ms 300]
 *
 * One tcp_peer job of `-n` rank processes per world size (as `rxccl launch` starts them), default
 * settings (native plane, warm), TensorFlow.js's cpu backend. A sample is as many rounds as fit in
 * about `--ms` (at least 3); its time per round is the maximum over ranks. Printed: medians over
 * samples, and the median of the per-sample ratios with their min-max.
 */
import { fileURLToPath } from 'node:url';
import * as tf from '@tensorflow/tfjs-core';
import '@tensorflow/tfjs-backend-cpu';
import * as tfl from '@tensorflow/tfjs-layers';
import { openSession } from '../../lib/launch/open-session.js';
import { DistributedOptimizer } from '../../lib/tfjs/index.js';
import { sampleForms, sampleSummary } from '../alternated-forms.js';
import { option } from '../argv.js';
import { rankJobLines } from '../rank-job.js';

interface Settings {
  readonly layers: number;
  readonly units: number;
  readonly samples: number;
  readonly sampleMs: number;
}

/** A gradient-averaging optimizer without fusion: one all-reduce per tensor, each awaited. */
class PerTensorOptimizer {
  constructor(
    private readonly optimizer: tf.Optimizer,
    private readonly session: Awaited<ReturnType<typeof openSession>>,
  ) {}

  async minimize(loss: () => tf.Scalar, variables: tf.Variable[]): Promise<void> {
    const { value, grads } = tf.variableGrads(loss, variables);
    const averaged: tf.NamedTensorMap = {};
    for (const variable of variables) {
      const reduced = await this.session.allReduce(grads[variable.name]!.dataSync() as Float32Array, 'avg');
      averaged[variable.name] = tf.tensor(reduced, variable.shape);
    }
    this.optimizer.applyGradients(averaged);
    tf.dispose([value, grads, averaged]);
  }
}

async function rank(settings: Settings): Promise<void> {
  tf.enableProdMode();
  const session = await openSession({ transport: 'tcp_peer' });
  const model = tfl.sequential({
    layers: Array.from({ length: settings.layers }, (_, index) => tfl.layers.dense({ units: settings.units, activation: 'tanh', ...(index === 0 ? { inputShape: [settings.units] } : {}) })),
  });
  const variables = model.trainableWeights.map((weight) => weight.read() as tf.Variable);
  const x = tf.randomNormal([32, settings.units], 0, 1, 'float32', session.rank);
  const loss = () => tf.mean(tf.square(model.apply(x) as tf.Tensor)) as tf.Scalar;
  const { grads } = tf.variableGrads(loss, variables);
  const gradients = variables.map((variable) => Float32Array.from(grads[variable.name]!.dataSync() as Float32Array));
  tf.dispose(grads);
  const fused = new DistributedOptimizer(tf.train.adam(1e-4), session);
  const perTensor = new PerTensorOptimizer(tf.train.adam(1e-4), session);
  const forms = {
    reduceFused: () => session.allReduceMany(gradients, 'avg'),
    reducePerTensor: async () => {
      for (const gradient of gradients) await session.allReduce(gradient, 'avg');
    },
    stepFused: () => fused.minimize(loss, variables),
    stepPerTensor: () => perTensor.minimize(loss, variables),
  };
  await sampleForms(session, forms, settings.samples, settings.sampleMs);
  await session.close();
}

async function main(): Promise<void> {
  const worldSizes = option('-n', '2,4').split(',').map(Number);
  const settings: Settings = {
    layers: Number(option('--layers', '26')),
    units: Number(option('--units', '64')),
    samples: Number(option('--samples', '7')),
    sampleMs: Number(option('--ms', '300')),
  };
  console.log(`# tfjs cpu backend, f32 gradients averaged (avg), tcp_peer, default settings (native plane), warm; ms per round (max over ranks), medians over ${settings.samples} samples; ratios: median (min-max) of per-sample ratios`);
  for (const worldSize of worldSizes) {
    const lines = await rankJobLines<Record<string, number>>(worldSize, fileURLToPath(import.meta.url), ['rank', JSON.stringify(settings)], 'SAMPLE');
    const { ms, ratio } = sampleSummary(lines);
    console.log(`\n## ${worldSize} ranks: ${settings.layers} dense layers of ${settings.units} units (${2 * settings.layers} gradient tensors, ${(2 * settings.layers * (settings.units * settings.units + settings.units) * 4) / 1024} KiB)`);
    console.log('| form | ms per round | per tensor / fused |');
    console.log('|---|---|---|');
    console.log(`| averaging: one all-reduce per tensor | ${ms('reducePerTensor').toFixed(3)} | |`);
    console.log(`| averaging: fused (allReduceMany) | ${ms('reduceFused').toFixed(3)} | ${ratio('reducePerTensor', 'reduceFused')} |`);
    console.log(`| training step, one all-reduce per tensor | ${ms('stepPerTensor').toFixed(3)} | |`);
    console.log(`| training step, DistributedOptimizer (fused) | ${ms('stepFused').toFixed(3)} | ${ratio('stepPerTensor', 'stepFused')} |`);
  }
}

if (process.argv[2] === 'rank') {
  await rank(JSON.parse(process.argv[3]!) as Settings);
} else {
  await main();
}
