import type { ReduceOp } from '../protocol/reduce-op.js';
import { mod } from './peer-data.js';
import type { ScheduleIdentity } from './schedule/schedule-builder.js';

/** Ring messages carry tags under this prefix ("RG") on the JS plane. */
export const RING_TAG_PREFIX = 0x5247;

/**
 * What the ring algorithms (all-reduce, all-gather, reduce-scatter) share: W-1 steps round the
 * ring order per pass, each step one message to the next position and one from the previous; the
 * data cut into `ringChannels` parts, each going round at the same time (its messages labelled
 * with its channel). The layout names the ring and the channels, so ranks configured with
 * different rings are named at the agreement instead of waiting on each other.
 */
export function ringIdentity(order: readonly number[], channels: number): ScheduleIdentity {
  return { algorithm: 'ring', layout: `ring ${order.join(',')} channels ${channels}`, tagPrefix: RING_TAG_PREFIX };
}

/** This rank's position on the ring and its neighbours there. */
export interface RingPlace {
  readonly size: number;
  readonly position: number;
  readonly next: number;
  readonly previous: number;
  /** The rank at `position` (wrapping). */
  at(position: number): number;
}

export function ringPlace(order: readonly number[], rank: number): RingPlace {
  const size = order.length;
  const position = order.indexOf(rank);
  const at = (where: number) => order[mod(where, size)]!;
  return { size, position, next: at(position + 1), previous: at(position - 1), at };
}

/**
 * A fold step of a ring's reduce-scatter: `op` where it sums (avg sums on the way), and at the
 * last step the op itself with the world size as avg's divisor, so the owner divides its segment
 * once, before it travels on.
 */
export function ringFold(op: ReduceOp, last: boolean, size: number): { op: ReduceOp; divisor: number } {
  if (op !== 'avg') return { op, divisor: 1 };
  return last ? { op, divisor: size } : { op: 'sum', divisor: 1 };
}
