import * as tf from '@tensorflow/tfjs-core';
import { ConfigurationError } from '../errors.js';
import type { Communicator } from '../session/rank-session.js';
import { checkGradientDtype, fromWire, type GradientDtype, toWire } from './gradient-dtype.js';

/** How a `DistributedOptimizer` averages gradients. */
export interface DistributedOptimizerOptions {
  /** The dtype gradients cross the wire in (default `f32`; `f16`/`bf16` halve the bytes, see `GradientDtype`). */
  readonly gradientDtype?: GradientDtype;
  /** Bytes per fused all-reduce (default 64 MiB, Horovod's): every gradient of a step in as few collectives as fit. */
  readonly bucketBytes?: number;
}

/** A step's result: this rank's loss (not averaged: `averageMetrics` does that) and its variables' names. */
export interface StepResult {
  readonly loss: number;
  readonly variables: readonly string[];
}

/**
 * Horovod's `DistributedOptimizer` for TensorFlow.js: wraps any `tf.train.Optimizer`, and each
 * `minimize` computes this rank's gradients, averages them across the communicator (`avg`, fused:
 * one all-reduce per 64 MiB of gradients, not one per tensor) and applies the average with the
 * wrapped optimizer, so every rank takes the same step and, from the same weights
 * (`broadcastModel`), keeps the same model. Each rank trains on its own shard of the global batch:
 * the averaged gradient of equal shards is the gradient of the whole batch.
 *
 * `accumulate` is torch DDP's `no_sync`: it adds a micro-batch's gradients locally, with no
 * communication, and the next `minimize` averages over every micro-batch since the last step.
 *
 * Every rank must call `minimize` (and `accumulate`) alike, with the same trainable variables in
 * the same order: the fused all-reduce is one collective of the communicator. `minimize` is
 * asynchronous (the gradients cross the network) where `tf.train.Optimizer.minimize` is not, so it
 * drives a training loop of your own rather than `model.fit` (docs: README, "Training with
 * TensorFlow.js"). Copies: gradients are read with `dataSync` (the cpu backend gives its own
 * memory; wasm and webgl a copy), packed into the fused bucket (one copy), and the averages go back
 * to tfjs as views of the bucket's result, without a copy (f16/bf16: one rounding copy each way).
 */
export class DistributedOptimizer {
  private readonly accumulated = new Map<string, Float32Array>();
  private microBatches = 0;
  private readonly gradientDtype: GradientDtype;

  constructor(
    readonly optimizer: tf.Optimizer,
    readonly communicator: Communicator,
    private readonly options: DistributedOptimizerOptions = {},
  ) {
    this.gradientDtype = options.gradientDtype ?? 'f32';
    checkGradientDtype(this.gradientDtype);
  }

  /**
   * Computes `loss`'s gradients on this rank, adds those accumulated since the last step, averages
   * them across every rank and applies them. Resolves with this rank's loss.
   */
  async minimize(loss: () => tf.Scalar, variables?: tf.Variable[]): Promise<StepResult> {
    const { value, names, shapes, gradients } = this.localGradients(loss, variables);
    const steps = this.microBatches + 1;
    // tfjs's gradient memory is only read (two gradients may share it); sums are memory of our own.
    const combined = names.map((name, index) => {
      const sum = this.accumulated.get(name);
      if (sum === undefined) return gradients[index]!;
      // The mean over micro-batches, so the learning rate means what it does without accumulation.
      const gradient = gradients[index]!;
      for (let at = 0; at < sum.length; at++) sum[at] = (sum[at]! + gradient[at]!) / steps;
      return sum;
    });
    this.accumulated.clear();
    this.microBatches = 0;
    const wire = combined.map((gradient) => toWire(gradient, this.gradientDtype));
    const averaged = await this.communicator.allReduceMany(wire, 'avg', { bucketBytes: this.options.bucketBytes });
    const named: tf.NamedTensorMap = {};
    for (const [index, name] of names.entries()) named[name] = tf.tensor(fromWire(averaged[index]!, this.gradientDtype), shapes[index]!, 'float32');
    try {
      this.optimizer.applyGradients(named);
    } finally {
      tf.dispose(named);
    }
    return { loss: value, variables: names };
  }

  /** Computes `loss`'s gradients and keeps their sum on this rank, with no communication (`no_sync`). */
  accumulate(loss: () => tf.Scalar, variables?: tf.Variable[]): StepResult {
    const { value, names, gradients } = this.localGradients(loss, variables);
    for (const [index, name] of names.entries()) {
      const sum = this.accumulated.get(name);
      if (sum === undefined) this.accumulated.set(name, Float32Array.from(gradients[index]!));
      else addInto(sum, gradients[index]!);
    }
    this.microBatches += 1;
    return { loss: value, variables: names };
  }

  /** This rank's loss and gradients (names, shapes, float32 values; the tensors are disposed). */
  private localGradients(loss: () => tf.Scalar, variables?: tf.Variable[]): { value: number; names: string[]; shapes: number[][]; gradients: Float32Array[] } {
    const { value, grads } = tf.variableGrads(loss, variables);
    try {
      const names = Object.keys(grads);
      const gradients = names.map((name) => {
        const gradient = grads[name]!;
        if (gradient.dtype !== 'float32') throw new ConfigurationError(`variable ${name} has a ${gradient.dtype} gradient; DistributedOptimizer averages float32 gradients`);
        return gradient.dataSync() as Float32Array;
      });
      return { value: value.dataSync()[0]!, names, shapes: names.map((name) => grads[name]!.shape), gradients };
    } finally {
      tf.dispose([value, grads]);
    }
  }
}

function addInto(target: Float32Array, values: Float32Array): void {
  for (let index = 0; index < target.length; index++) target[index]! += values[index]!;
}
