import type { ReduceOp } from '../protocol/reduce-op.js';
import type { ScheduleIdentity } from './schedule/schedule-builder.js';

/** Tree-family messages carry tags under this prefix ("TR") on the JS plane. */
export const TREE_TAG_PREFIX = 0x5452;

/**
 * What the log-depth algorithms (recursive doubling, Rabenseifner's, binomial trees, Bruck's, the
 * dissemination barrier) share: about log2 W dependent steps, each rank talking to one peer per
 * step, as MPICH's and Open MPI's tuned collectives do. A tree folds pairwise, each pair's lower
 * block of ranks first, so both partners of a fold compute the same bits (docs/protocol.md 9.6.7).
 */
export function treeIdentity(algorithm: string): ScheduleIdentity {
  return { algorithm, layout: algorithm, tagPrefix: TREE_TAG_PREFIX };
}

/** log2 of a power of two. */
export function log2(power: number): number {
  return 31 - Math.clz32(power);
}

/** The smallest power of two at least `worldSize`: a binomial tree's span. */
export function treeSpan(worldSize: number): number {
  return worldSize <= 1 ? 1 : 1 << (32 - Math.clz32(worldSize - 1));
}

/** The lowest set bit of a non-zero rank (the subtree size under it); for 0, the whole tree's span. */
export function lowBit(virtual: number, worldSize: number): number {
  return virtual === 0 ? treeSpan(worldSize) : virtual & -virtual;
}

/** A run of consecutive ranks' blocks, and the channel its message is labelled with. */
export interface RankRun {
  readonly start: number;
  readonly count: number;
  readonly channel: number;
}

/**
 * The blocks of `count` ranks from `first` on around the world (rank W - 1 followed by rank 0),
 * cut where they wrap: one run of consecutive ranks (channel 0), or two, the one from rank 0 on
 * labelled channel 1. A message of the binomial gather and of Bruck's all-gather is one such run,
 * so it lies in one piece of rank-ordered memory and both ends cut it alike.
 */
export function wrapRuns(first: number, count: number, worldSize: number): RankRun[] {
  const before = Math.min(count, worldSize - first);
  return before === count ? [{ start: first, count, channel: 0 }] : [{ start: first, count: before, channel: 0 }, { start: 0, count: count - before, channel: 1 }];
}

/**
 * A fold of a tree's reduction: `op` where it sums (avg sums on the way), and at the fold that
 * completes the reduction the op itself with the world size as avg's divisor, so it divides once.
 */
export function treeFold(op: ReduceOp, last: boolean, worldSize: number): { op: ReduceOp; divisor: number } {
  if (op !== 'avg') return { op, divisor: 1 };
  return last ? { op, divisor: worldSize } : { op: 'sum', divisor: 1 };
}

/**
 * Recursive doubling over a world that is not a power of two, as MPICH folds it: with P the
 * largest power of two at most W and E = W - P extra ranks, each even rank below 2E hands its
 * tensor to the odd rank above it and sits out; the others take virtual ranks 0..P-1 in rank order
 * (odd rank 2i + 1 below 2E is i, rank r from 2E on is r - E), so every virtual rank's values
 * cover a run of consecutive real ranks and a fold of lower block first keeps rank order.
 */
export interface DoublingPlace {
  /** P: the virtual world's size. */
  readonly power: number;
  /** This rank's virtual rank, or null for an even rank below 2E (it hands its tensor on). */
  readonly virtual: number | null;
  /** The rank this one folds in (an odd rank below 2E) or hands its tensor to (an even one); else null. */
  readonly extra: number | null;
  /** The real rank of a virtual one. */
  real(virtual: number): number;
}

export function doublingPlace(rank: number, worldSize: number): DoublingPlace {
  const power = 1 << log2(Math.max(1, worldSize));
  const extras = worldSize - power;
  const real = (virtual: number) => (virtual < extras ? 2 * virtual + 1 : virtual + extras);
  if (rank >= 2 * extras) return { power, virtual: rank - extras, extra: null, real };
  return rank % 2 === 1 ? { power, virtual: rank >> 1, extra: rank - 1, real } : { power, virtual: null, extra: rank + 1, real };
}
