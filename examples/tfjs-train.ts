/**
 * Data-parallel training of a TensorFlow.js model with rxccl/tfjs (Horovod-style): a student MLP
 * learns a teacher MLP's outputs; every rank trains on its shard of each global batch and the
 * DistributedOptimizer averages the gradients (fused) before each step.
 *
 *   rxccl launch -n 1 -- tsx examples/tfjs-train.ts
 *   rxccl launch -n 4 -- tsx examples/tfjs-train.ts      # the same losses, to float rounding
 *
 * Needs @tensorflow/tfjs-core, -layers and -backend-cpu (devDependencies here; in your project,
 * `npm install @tensorflow/tfjs-core @tensorflow/tfjs-layers @tensorflow/tfjs-backend-cpu`).
 * EXAMPLE_GRADIENT_DTYPE=f16 or bf16 sends the gradients in half the bytes.
 */
import { openSession } from '../lib/index.js';
import type { GradientDtype } from '../lib/tfjs/index.js';
import { trainTeacherTask } from './tfjs/teacher-task.js';

const session = await openSession();
const say = (line: string) => session.rank === 0 && console.log(line);
const gradientDtype = (process.env.EXAMPLE_GRADIENT_DTYPE ?? 'f32') as GradientDtype;
const losses = await trainTeacherTask(session, { gradientDtype, onEpoch: (epoch, loss) => say(`epoch ${epoch} loss ${loss.toPrecision(8)}`) });
say(`final loss ${losses.at(-1)!.toPrecision(8)}`);
await session.close();
