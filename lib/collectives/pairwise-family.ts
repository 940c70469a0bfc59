import { mod } from './peer-data.js';
import type { ScheduleIdentity } from './schedule/schedule-builder.js';

/** Pairwise messages carry tags under this prefix ("PW") on the JS plane. */
export const PAIRWISE_TAG_PREFIX = 0x5057;

/**
 * The JS plane cuts pairwise messages into pieces of this many times the ring's piece size. Each
 * piece is a message on every link and a fold, and where these algorithms run (ranks sharing one
 * host, often more ranks than cores) the CPU each message costs limits them more than pipelining
 * depth does.
 */
export const PAIRWISE_PIECE_SCALE = 2;

/** The step labels of the pairwise algorithms: data travels to an owner, then from it. */
export const TO_OWNER = { step: 0 } as const;
export const FROM_OWNER = { step: 1 } as const;

/**
 * What the pairwise algorithms share: every pair of ranks exchanges at most one message each way
 * per step, all at once (one dependent step where a ring takes W-1). Reductions fold the W
 * contributions in rank order, so their bits are the staged path's.
 */
export const PAIRWISE: ScheduleIdentity = { algorithm: 'pairwise', layout: 'pairwise', tagPrefix: PAIRWISE_TAG_PREFIX, pieceScale: PAIRWISE_PIECE_SCALE };

/** Every other rank, from rank + 1 on: every rank starts with a different peer. */
export function peersFrom(rank: number, worldSize: number): number[] {
  return Array.from({ length: worldSize - 1 }, (_, index) => mod(rank + 1 + index, worldSize));
}

/** By rank, `own` at `rank` and each other rank's `of(rank)` (a reduction's sources, in rank order). */
export function inRankOrder<T>(worldSize: number, rank: number, own: T, of: (peer: number) => T): T[] {
  return Array.from({ length: worldSize }, (_, index) => (index === rank ? own : of(index)));
}
