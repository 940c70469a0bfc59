/**
 * rxccl/tfjs (#48 item 1): data-parallel training of TensorFlow.js models. The example's task
 * trained at 1, 2 and 4 ranks gives the 1-rank losses (same global batch, seeds and data order:
 * only the order of the gradient sums differs), in one process and as separate processes; one
 * fused all-reduce per step for a model of 50+ tensors; `accumulate` (no_sync) steps as the whole
 * batch would; f16/bf16 gradients within their rounding; weights broadcast from a root; metrics
 * averaged; refusals typed and before anything is sent; elastic training (#48 item 2) that loses a
 * rank, takes a replacement and ends with the uninterrupted loss, as separate processes, and gives
 * the 1-rank loss on 3 ranks' uneven shares. Backend: cpu.
 */
import * as tf from '@tensorflow/tfjs-core';
import '@tensorflow/tfjs-backend-cpu';
import * as tfl from '@tensorflow/tfjs-layers';
import { afterEach, describe, expect, it } from 'vitest';
import { trainTeacherTask, trainTeacherTaskElastically } from '../../examples/tfjs/teacher-task.js';
import type { RankSession } from '../../lib/session/rank-session.js';
import { averageMetrics, broadcastModel, broadcastVariables, DistributedOptimizer } from '../../lib/tfjs/index.js';
import { runRxccl, tsNode } from '../cli/rxccl-process.js';
import { disposeGrowableJobs, startGrowableJob } from '../helpers/growable-job.js';
import { rejection, startJob, type TestJob } from '../helpers/job.js';

const jobs: TestJob[] = [];
afterEach(async () => {
  await Promise.all(jobs.splice(0).map((job) => job.dispose()));
  await disposeGrowableJobs();
});

async function ranks(worldSize: number): Promise<RankSession[]> {
  const job = await startJob(worldSize, { transport: 'tcp_peer', timeoutMs: 60_000 });
  jobs.push(job);
  return job.sessions;
}

const relative = (a: number, b: number) => Math.abs(a - b) / Math.abs(b);

describe('DistributedOptimizer on the teacher task', () => {
  it('gives the 1-rank losses at 2 and 4 ranks, every epoch, within 1e-4', async () => {
    const [single] = await ranks(1);
    const reference = await trainTeacherTask(single!);
    expect(reference).toHaveLength(5);
    // It learns: the last epoch's loss is a fraction of the first's.
    expect(reference.at(-1)!).toBeLessThan(reference[0]! / 4);
    for (const worldSize of [2, 4]) {
      const results = await Promise.all((await ranks(worldSize)).map((session) => trainTeacherTask(session)));
      for (const losses of results) {
        expect(losses).toEqual(results[0]);
        for (const [epoch, loss] of losses.entries()) expect(relative(loss, reference[epoch]!), `${worldSize} ranks, epoch ${epoch}`).toBeLessThan(1e-4);
      }
    }
  }, 120_000);

  it('gives the same final loss as separate processes under rxccl launch', async () => {
    const [single] = await ranks(1);
    const reference = (await trainTeacherTask(single!)).at(-1)!;
    const job = await runRxccl(['launch', '-n', '2', '--', ...tsNode('examples/tfjs-train.ts')]);
    expect(job.code, job.stderr).toBe(0);
    expect(job.stdout.match(/\[rank 0\] epoch \d loss /g)).toHaveLength(5);
    const final = Number(/\[rank 0\] final loss (\S+)/.exec(job.stdout)?.[1]);
    expect(relative(final, reference)).toBeLessThan(1e-4);
  }, 120_000);

  it('elastic (#48 item 2): rank 3 of 4 killed at epoch 2 under --keep-going --replace 1; 3 go on, the replacement joins, and the final loss is the uninterrupted one within 1e-3', async () => {
    const [single] = await ranks(1);
    const reference = (await trainTeacherTask(single!)).at(-1)!;
    const job = await runRxccl([
      'launch', '--keep-going', '--replace', '1', '-n', '4', '--',
      ...tsNode('examples/tfjs-train.ts', '--elastic', '--kill-rank', '3', '--kill-epoch', '2', '--min-ranks', '4'),
    ]);
    expect(job.code, job.stderr).toBe(0);
    expect(job.stderr).toContain('rxccl launch: started replacement 1 for rank 3');
    expect(job.stdout).toMatch(/\[rank 0\] rank 3 lost: 3 ranks from \d+/);
    expect(job.stdout).toMatch(/\[rank 0\] ranks \[3\] joined: 4 ranks from \d+/);
    expect(job.stdout.match(/\[rank 0\] epoch \d loss /g)).toHaveLength(5);
    const final = Number(/\[rank 0\] final loss (\S+)/.exec(job.stdout)?.[1]);
    expect(relative(final, reference)).toBeLessThan(1e-3);
  }, 120_000);

  it('elastic in one process: the loss does not depend on the world size, shares of the batch uneven included', async () => {
    const [single] = await ranks(1);
    const reference = (await trainTeacherTask(single!, { epochs: 2 })).at(-1)!;
    const growable = await startGrowableJob(3, 'tcp_peer');
    const sessions = await Promise.all([0, 1, 2].map((rank) => growable.openRank(rank)));
    const results = await Promise.all(sessions.map((session) => trainTeacherTaskElastically(session, { epochs: 2 })));
    for (const losses of results) expect(relative(losses.at(-1)!, reference)).toBeLessThan(1e-4);
  }, 120_000);

  it('trains with f16 and bf16 gradients to within their rounding of f32', async () => {
    const [single] = await ranks(1);
    const f32 = (await trainTeacherTask(single!, { epochs: 2 })).at(-1)!;
    for (const gradientDtype of ['f16', 'bf16'] as const) {
      const [session] = await ranks(1);
      const half = (await trainTeacherTask(session!, { epochs: 2, gradientDtype })).at(-1)!;
      expect(relative(half, f32), gradientDtype).toBeLessThan(0.05);
    }
  }, 120_000);
});

/** A model of `layers` dense layers: two tensors (kernel, bias) each. */
function deepModel(layers: number, seed: number): tfl.Sequential {
  return tfl.sequential({
    layers: Array.from({ length: layers }, (_, index) =>
      tfl.layers.dense({ units: 4, kernelInitializer: tfl.initializers.glorotUniform({ seed: seed + index }), ...(index === 0 ? { inputShape: [4] } : {}) }),
    ),
  });
}

const variablesOf = (model: tfl.LayersModel) => model.trainableWeights.map((weight) => weight.read() as tf.Variable);
const weightsOf = (model: tfl.LayersModel) => model.getWeights().map((weight) => Array.from(weight.dataSync()));

describe('DistributedOptimizer', () => {
  it('averages the 52 gradients of a 26-layer model in one fused all-reduce per step, and every rank keeps the same weights', async () => {
    const sessions = await ranks(2);
    const models = sessions.map((_, rank) => deepModel(26, 10 + rank));
    await Promise.all(sessions.map((session, rank) => broadcastModel(session, models[rank]!, 0)));
    const started: number[] = [0, 0];
    sessions.forEach((session, rank) => session.events$.subscribe((event) => event.type === 'collective-started' && (started[rank]! += 1)));
    const optimizers = sessions.map((session) => new DistributedOptimizer(tf.train.sgd(0.1), session));
    const steps = await Promise.all(
      sessions.map((_, rank) => {
        const x = tf.fill([2, 4], rank + 1);
        return optimizers[rank]!.minimize(() => tf.mean(tf.square(models[rank]!.apply(x) as tf.Tensor)) as tf.Scalar, variablesOf(models[rank]!));
      }),
    );
    expect(steps[0]!.variables).toHaveLength(52);
    expect(started).toEqual([1, 1]);
    expect(weightsOf(models[1]!)).toEqual(weightsOf(models[0]!));
  }, 60_000);

  it('steps after accumulate (no_sync) as one step on the whole batch would', async () => {
    const [session] = await ranks(1);
    const [whole, split] = [deepModel(2, 3), deepModel(2, 3)];
    const x = tf.tensor2d([1, 2, 3, 4, -1, 0.5, 2, -3], [2, 4]);
    const loss = (model: tfl.LayersModel, input: tf.Tensor) => () => tf.mean(tf.square(model.apply(input) as tf.Tensor)) as tf.Scalar;
    await new DistributedOptimizer(tf.train.sgd(0.1), session!).minimize(loss(whole, x), variablesOf(whole));
    const accumulating = new DistributedOptimizer(tf.train.sgd(0.1), session!);
    const before = weightsOf(split);
    accumulating.accumulate(loss(split, tf.slice(x, [0, 0], [1, 4])), variablesOf(split));
    // No step yet: accumulate moves no weight and sends nothing.
    expect(weightsOf(split)).toEqual(before);
    await accumulating.minimize(loss(split, tf.slice(x, [1, 0], [1, 4])), variablesOf(split));
    const [a, b] = [weightsOf(whole).flat(), weightsOf(split).flat()];
    for (const [index, value] of a.entries()) expect(b[index]).toBeCloseTo(value, 6);
  }, 60_000);

  it('refuses a gradient dtype it does not know, naming it', async () => {
    const [session] = await ranks(1);
    expect(() => new DistributedOptimizer(tf.train.sgd(0.1), session!, { gradientDtype: 'f8' as never })).toThrow('gradientDtype "f8" is not one of f32 f16 bf16');
  });
});

describe('broadcastVariables, broadcastModel, averageMetrics', () => {
  it("gives every rank the root's weights and averages metrics", async () => {
    const sessions = await ranks(3);
    const models = sessions.map((_, rank) => deepModel(3, 100 * rank));
    await Promise.all(sessions.map((session, rank) => broadcastModel(session, models[rank]!, 1)));
    for (const model of models) expect(weightsOf(model)).toEqual(weightsOf(models[1]!));
    const counters = sessions.map((_, rank) => tf.variable(tf.tensor1d([rank, rank * 2], 'int32')));
    await Promise.all(sessions.map((session, rank) => broadcastVariables(session, [counters[rank]!], 2)));
    for (const counter of counters) expect(Array.from(counter.dataSync())).toEqual([2, 4]);
    const averaged = await Promise.all(sessions.map((session, rank) => averageMetrics(session, { loss: rank, accuracy: 0.5 + rank / 10 })));
    for (const metrics of averaged) {
      expect(metrics.loss).toBe(1);
      expect(metrics.accuracy).toBeCloseTo(0.6, 12);
    }
  }, 60_000);

  it('refuses a variable it cannot carry before anything is sent', async () => {
    const [session] = await ranks(1);
    const flag = tf.variable(tf.tensor1d([1, 0], 'bool'));
    const error = await rejection(broadcastVariables(session!, [flag], 0));
    expect(error.code).toBe('INVALID_CONFIGURATION');
    expect(error.message).toBe('cannot broadcast a bool tensor of shape [2]: float32 and int32 only');
  });
});
