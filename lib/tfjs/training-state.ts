import * as tf from '@tensorflow/tfjs-core';
import type { WeightedModel } from './broadcast-weights.js';

/** One tensor of a snapshot, as plain memory (it crosses `broadcastObject` to newcomers). */
export interface SavedTensor {
  /** The optimizer's name for it (Adam's `.../m`, `iter`); empty for a model weight. */
  readonly name: string;
  readonly shape: readonly number[];
  readonly dtype: 'float32' | 'int32';
  readonly values: Float32Array | Int32Array;
}

/** A model's weights and its optimizer's state at one step. */
export interface TrainingSnapshot {
  readonly weights: readonly SavedTensor[];
  readonly optimizer: readonly SavedTensor[];
}

/** The `commit` and `restore` the `elastic` operator takes, for a tfjs model and its optimizer. */
export interface TrainingState {
  commit(): Promise<TrainingSnapshot>;
  restore(snapshot: TrainingSnapshot): Promise<void>;
}

/**
 * Horovod elastic's `TensorFlowKerasState` for TensorFlow.js: `commit` copies the model's weights
 * and the optimizer's state (Adam's moments and step count, for example) out of tfjs, and
 * `restore` puts a copy back, so that after a lost rank every rank left resumes from the same
 * step, and a newcomer starts from rank 0's (the `elastic` operator sends it). A snapshot is plain
 * typed arrays: one copy out at each commit, one tensor per value at a restore. The model must have
 * the same layers in the same order everywhere (the same code builds it).
 *
 * @example
 * const state = trainingState(model, optimizer);
 * steps$.pipe(elastic(world, trainStep, { commit: state.commit, restore: state.restore })).subscribe();
 */
export function trainingState(model: WeightedModel, optimizer: tf.Optimizer): TrainingState {
  return {
    async commit() {
      const weights = model.getWeights().map((weight) => save('', weight));
      const named = await optimizer.getWeights();
      try {
        return { weights, optimizer: named.map(({ name, tensor }) => save(name, tensor)) };
      } finally {
        // The optimizer hands out its own variables (Adam's moments) and a fresh step count: only the latter is ours.
        tf.dispose(named.flatMap(({ tensor }) => (tensor instanceof tf.Variable ? [] : [tensor])));
      }
    },
    async restore(snapshot) {
      const weights = snapshot.weights.map(load);
      try {
        model.setWeights(weights);
      } finally {
        tf.dispose(weights);
      }
      const named = snapshot.optimizer.map((saved) => ({ name: saved.name, tensor: load(saved) }));
      // The optimizer takes the tensors as its own variables' values; the ones made here go.
      try {
        await optimizer.setWeights(named);
      } finally {
        tf.dispose(named.map(({ tensor }) => tensor));
      }
    },
  };
}

function save(name: string, tensor: tf.Tensor): SavedTensor {
  const dtype = tensor.dtype === 'int32' ? 'int32' : 'float32';
  return { name, shape: [...tensor.shape], dtype, values: (tensor.dataSync() as Float32Array | Int32Array).slice() };
}

function load(saved: SavedTensor): tf.Tensor {
  return tf.tensor(saved.values, [...saved.shape], saved.dtype);
}
