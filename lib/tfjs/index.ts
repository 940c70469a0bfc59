/**
 * rxccl/tfjs: data-parallel training of TensorFlow.js models, Horovod-style. A distributed
 * optimizer that averages gradients across ranks with fusion, the initial weights broadcast from a
 * root, metrics averaged across ranks. Needs `@tensorflow/tfjs-core` (an optional peer dependency:
 * the rest of rxccl never loads it). See README, "Training with TensorFlow.js".
 */
export { DistributedOptimizer, type DistributedOptimizerOptions, type StepResult } from './distributed-optimizer.js';
export { broadcastModel, broadcastVariables, type WeightedModel } from './broadcast-weights.js';
export { averageMetrics } from './average-metrics.js';
export { GRADIENT_DTYPES, type GradientDtype } from './gradient-dtype.js';
export { type SavedTensor, type TrainingSnapshot, type TrainingState, trainingState } from './training-state.js';
