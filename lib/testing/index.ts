/**
 * rxccl/testing: property-based testing of distributed programs built on rxccl. fast-check
 * arbitraries (GX1 frames, tensors of every dtype, collective programs, corruptions, faults), the
 * reference semantics of every collective (the oracle), and `simulateJob`, which runs a whole job
 * in one process on a virtual clock with fast-check choosing the message interleavings, and the
 * schedule model (`runScheduleModel`; `runConcurrentScheduleModel` for several communicators'
 * collectives at once). See docs/testing.md.
 */
export * from './arbitraries/frames.js';
export * from './arbitraries/tensors.js';
export * from './arbitraries/programs.js';
export * from './arbitraries/corruptions.js';
export * from './arbitraries/faults.js';
export * from './arbitraries/world.js';
export { concatBytes, hex } from './bytes.js';
export * from './collective-case.js';
export * from './random-data.js';
export { modelCollective } from './oracle.js';
export * from './run-collective.js';
export * from './program.js';
export * from './faults.js';
export { memoryJob, type MemoryJob, type MemoryJobOptions, type MemoryRank, type MemoryTraffic } from './memory-job.js';
export * from './simulate-job.js';
export {
  type ConcurrentScheduleModel,
  type ConcurrentScheduleModelResult,
  type HeaderRule,
  type ModelCollective,
  type ModelMemory,
  runConcurrentScheduleModel,
  runScheduleModel,
  runSplitScheduleModel,
  ScheduleModelError,
  type ScheduleModelResult,
  type SplitScheduleModel,
} from './schedule-model.js';
export { MEMORY_DATA_LINK_TAG, memoryDataPlane } from './memory-data-plane.js';
export * from './verdict.js';
export * from './job-verdict.js';
export type { HistoryEvent } from './history.js';
export * from './linearizability.js';
export type { RankDisk } from './rank-disk.js';
export { previewPayload } from './payload-preview.js';
