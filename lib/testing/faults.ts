/**
 * Faults as data: what can go wrong in a simulated job, written down so fast-check can draw,
 * shrink and replay it. A rank's steps are the session calls its program makes (collectives,
 * sends, receives), counted from 0; a link's messages are those sent from `from` to `to` on any
 * rail, counted from 0.
 */

/** Rank `rank` dies as it starts step `atStep`: it never returns, and nothing reaches it any more. */
export interface KillFault {
  readonly kind: 'kill';
  readonly rank: number;
  readonly atStep: number;
}

/**
 * Rank `rank` calls `abort(reason)` instead of step `atStep` (default reason `injected at step
 * K`); that step fails with the abort once it comes back, as every rank's does: `rank R aborted:
 * <reason>`.
 */
export interface AbortFault {
  readonly kind: 'abort';
  readonly rank: number;
  readonly atStep: number;
  readonly reason?: string;
}

/** Rank `rank` stalls `ms` of (virtual) time before step `atStep`: past the timeout, the others give up on it. */
export interface StallFault {
  readonly kind: 'stall';
  readonly rank: number;
  readonly atStep: number;
  readonly ms: number;
}

/**
 * Message `message` (every message, if absent) from `from` to `to` is lost: the receiver times out
 * naming the sender (in a ring, ranks further on may time out first, each naming its predecessor).
 */
export interface DropFault {
  readonly kind: 'drop';
  readonly from: number;
  readonly to: number;
  readonly message?: number;
}

/** Every message from `from` to `to` arrives `ms` later (in order). */
export interface DelayFault {
  readonly kind: 'delay';
  readonly from: number;
  readonly to: number;
  readonly ms: number;
}

/**
 * Message `message` (every message, if absent) from `from` to `to` arrives with bit `bit` of its
 * frame flipped (modulo the frame's size). A flip in the 96-byte header fails its checksum and the
 * receiver ends the job naming the sender; GX1 has no payload checksum, so a flip in the payload
 * arrives as wrong data.
 */
export interface CorruptFault {
  readonly kind: 'corrupt';
  readonly from: number;
  readonly to: number;
  readonly message?: number;
  readonly bit: number;
}

/**
 * The ranks' links are cut in two (the coordinator is not: on tcp_host_staged collectives go
 * through it and only point-to-point messages are held):
 * the ranks of `side` and the others cannot reach each other from `fromMs` of virtual time until
 * `healMs`: a message between the two sides sent meanwhile is held, as TCP holds it, and arrives
 * at the heal (in order, before any sent later on its link). Without `healMs` the partition never
 * heals and those messages never arrive: the receivers time out naming the other side.
 */
export interface PartitionFault {
  readonly kind: 'partition';
  readonly side: readonly number[];
  readonly fromMs: number;
  readonly healMs?: number;
}

export type RankFault = KillFault | AbortFault | StallFault;
export type LinkFault = DropFault | DelayFault | CorruptFault | PartitionFault;
export type Fault = RankFault | LinkFault;

export function isRankFault(fault: Fault): fault is RankFault {
  return fault.kind === 'kill' || fault.kind === 'abort' || fault.kind === 'stall';
}

/** The faulty rank a fault's failure must name: the rank at fault, a link's sender, or for a partition the first rank of its side. */
export function faultyRank(fault: Fault): number {
  if (isRankFault(fault)) return fault.rank;
  return fault.kind === 'partition' ? fault.side[0]! : fault.from;
}

/**
 * How long a partition holds a message sent from `from` to `to` at `nowMs`: 0 when no partition
 * separates them then, `Infinity` when one does and never heals.
 */
export function partitionHold(faults: readonly LinkFault[], from: number, to: number, nowMs: number): number {
  let hold = 0;
  for (const fault of faults) {
    if (fault.kind !== 'partition' || fault.side.includes(from) === fault.side.includes(to) || nowMs < fault.fromMs) continue;
    const heal = fault.healMs ?? Infinity;
    if (nowMs < heal) hold = Math.max(hold, heal - nowMs);
  }
  return hold;
}
