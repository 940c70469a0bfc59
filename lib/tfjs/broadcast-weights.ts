import * as tf from '@tensorflow/tfjs-core';
import { ConfigurationError } from '../errors.js';
import type { Communicator } from '../session/rank-session.js';

/** What `broadcastModel` needs of a model: a tfjs-layers `LayersModel` (or anything with its two methods). */
export interface WeightedModel {
  getWeights(): tf.Tensor[];
  setWeights(weights: tf.Tensor[]): void;
}

/**
 * Horovod's `broadcast_variables`: every rank's `variables` take `root`'s values, so training
 * starts from the same weights everywhere. One broadcast per dtype (the variables of each dtype
 * packed in order: one copy on the root, the values assigned as views of the result on the
 * others). Every rank passes variables of the same shapes and dtypes in the same order.
 */
export async function broadcastVariables(communicator: Communicator, variables: readonly tf.Variable[], root = 0): Promise<void> {
  const values = await broadcastTensors(communicator, variables, root);
  for (const [index, variable] of variables.entries()) {
    variable.assign(values[index]!);
    values[index]!.dispose();
  }
}

/** `broadcastVariables` for a model's weights: every rank's `model` takes `root`'s weights. */
export async function broadcastModel(communicator: Communicator, model: WeightedModel, root = 0): Promise<void> {
  const weights = model.getWeights();
  const values = await broadcastTensors(communicator, weights, root);
  try {
    model.setWeights(values);
  } finally {
    tf.dispose(values);
  }
}

/** `tensors` as `root` holds them, as new tensors of the same shapes (the caller disposes them). */
async function broadcastTensors(communicator: Communicator, tensors: readonly tf.Tensor[], root: number): Promise<tf.Tensor[]> {
  // Refused alike on every rank before anything is sent: no rank waits in a broadcast the others left.
  const other = tensors.find((tensor) => tensor.dtype !== 'float32' && tensor.dtype !== 'int32');
  if (other !== undefined) throw new ConfigurationError(`cannot broadcast a ${other.dtype} tensor of shape [${other.shape.join(', ')}]: float32 and int32 only`);
  const out: tf.Tensor[] = new Array(tensors.length);
  for (const dtype of ['float32', 'int32'] as const) {
    const indices = tensors.flatMap((tensor, index) => (tensor.dtype === dtype ? [index] : []));
    if (indices.length === 0) continue;
    const total = indices.reduce((sum, index) => sum + tensors[index]!.size, 0);
    const packed = dtype === 'float32' ? new Float32Array(total) : new Int32Array(total);
    if (communicator.rank === root) {
      let offset = 0;
      for (const index of indices) {
        packed.set(tensors[index]!.dataSync() as Float32Array | Int32Array, offset);
        offset += tensors[index]!.size;
      }
    }
    const received = await communicator.broadcast(packed, root, { inPlace: true });
    let offset = 0;
    for (const index of indices) {
      const tensor = tensors[index]!;
      out[index] = tf.tensor(received.subarray(offset, offset + tensor.size), tensor.shape, dtype);
      offset += tensor.size;
    }
  }
  return out;
}
