/**
 * Data-parallel training: every rank fits the same linear model to its own shard of synthetic
 * data. Each step, every rank computes the gradient on its shard and allReduce(..., 'avg') turns
 * the shards' gradients into the gradient of the whole data set, on every rank alike. All ranks
 * apply the same update, so their models (and the loss they print) stay identical, bit for bit.
 *
 *   rxccl launch -n 4 -- tsx examples/data-parallel-sgd.ts
 */
import { openSession } from '../lib/index.js';

const EPOCHS = 8;
const SAMPLES_PER_RANK = 256;
const LEARNING_RATE = 0.5;
const TRUE_WEIGHTS = [2, -3, 0.5, 1];
const TRUE_BIAS = 0.7;
const FEATURES = TRUE_WEIGHTS.length;

/** A small seeded generator (mulberry32): each rank draws its own, reproducible shard. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

const session = await openSession();
const { rank, worldSize } = session;

// This rank's shard: y = w.x + b + noise, with x uniform in [-1, 1).
const next = random(1234 + rank);
const xs = Array.from({ length: SAMPLES_PER_RANK }, () => Array.from({ length: FEATURES }, () => 2 * next() - 1));
const ys = xs.map((x) => x.reduce((sum, value, feature) => sum + value * TRUE_WEIGHTS[feature]!, TRUE_BIAS) + 0.05 * (next() - 0.5));

// Every rank starts from the same model.
const weights = new Float64Array(FEATURES);
let bias = 0;

for (let epoch = 1; epoch <= EPOCHS; epoch++) {
  // [dL/dw..., dL/db, loss] of the mean squared error on this shard, averaged over ranks in one collective.
  const local = new Float64Array(FEATURES + 2);
  xs.forEach((x, sample) => {
    const error = x.reduce((sum, value, feature) => sum + value * weights[feature]!, bias) - ys[sample]!;
    x.forEach((value, feature) => (local[feature]! += (2 * error * value) / SAMPLES_PER_RANK));
    local[FEATURES]! += (2 * error) / SAMPLES_PER_RANK;
    local[FEATURES + 1]! += (error * error) / SAMPLES_PER_RANK;
  });
  const global = await session.allReduce(local, 'avg');
  weights.forEach((_, feature) => (weights[feature]! -= LEARNING_RATE * global[feature]!));
  bias -= LEARNING_RATE * global[FEATURES]!;
  console.log(`epoch ${epoch} loss ${global[FEATURES + 1]!.toFixed(6)}`);
}

// The models must be identical: gather every rank's parameters and compare them with ours.
const parameters = Float64Array.of(...weights, bias);
const all = await session.allGather(parameters);
const identical = Array.from({ length: worldSize }, (_, other) => all.subarray(other * parameters.length, (other + 1) * parameters.length)).every(
  (theirs) => theirs.every((value, index) => value === parameters[index]),
);
const learnt = [...weights].map((value) => value.toFixed(2)).join(', ');
console.log(`model w=[${learnt}] b=${bias.toFixed(2)} (data: w=[${TRUE_WEIGHTS.join(', ')}] b=${TRUE_BIAS}); identical on all ${worldSize} ranks: ${identical}`);
await session.close();
if (!identical) process.exitCode = 1;
