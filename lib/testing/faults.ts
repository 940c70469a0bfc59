/**
 * Faults as data: what can go wrong in a simulated job, written down so fast-check can draw,
 * shrink and replay it. A rank's steps are the session calls its program makes (collectives,
 * sends, receives), counted from 0; its fault points are the names it passes to
 * `rank.faultPoint(name)`; a link's messages are those sent from `from` to `to` on any rail,
 * counted from 0 (afresh in each generation of a job that restarts).
 */

/**
 * When a rank fault strikes: as the rank starts step `atStep`, or as its program reaches
 * `rank.faultPoint(atPoint)` for the `occurrence`-th time (from 0, the default); in the job's
 * generation `generation` (default 0: a job restarted by `restarts` runs its later generations
 * clean unless a fault names them).
 */
export type FaultMoment = (
  | { readonly atStep: number; readonly atPoint?: undefined; readonly occurrence?: undefined }
  | { readonly atPoint: string; readonly occurrence?: number; readonly atStep?: undefined }
) & { readonly generation?: number };

/**
 * Rank `rank` dies at its moment: it never returns, and nothing reaches it any more. In a job with
 * `restarts` left, the whole job restarts (see `SimulateJobOptions.restarts`); in a fault-tolerant
 * job the others lose it.
 */
export type KillFault = { readonly kind: 'kill'; readonly rank: number } & FaultMoment;

/**
 * Rank `rank` calls `abort(reason)` at its moment, instead of its step (default reason `injected
 * at step K` or `injected at fault point P`); the step (or the fault point) fails with the abort
 * once it comes back, as every rank's does: `rank R aborted: <reason>`.
 */
export type AbortFault = { readonly kind: 'abort'; readonly rank: number; readonly reason?: string } & FaultMoment;

/** Rank `rank` stalls `ms` of (virtual) time at its moment: past the timeout, the others give up on it. */
export type StallFault = { readonly kind: 'stall'; readonly rank: number; readonly ms: number } & FaultMoment;

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

/** A fault of one rank: killed, aborting or stalled at a step or fault point. */
export type RankFault = KillFault | AbortFault | StallFault;
/** A fault of the links between ranks: a message dropped, delayed or corrupted, or a partition. */
export type LinkFault = DropFault | DelayFault | CorruptFault | PartitionFault;
/** Any fault `simulateJob` can inject. */
export type Fault = RankFault | LinkFault;

/** Whether rank fault `fault` strikes at `moment` of its rank in generation `generation`. */
export function strikesAt(fault: RankFault, generation: number, moment: { readonly step: number } | { readonly point: string; readonly occurrence: number }): boolean {
  if ((fault.generation ?? 0) !== generation) return false;
  if ('step' in moment) return fault.atStep === moment.step;
  return fault.atPoint === moment.point && (fault.occurrence ?? 0) === moment.occurrence;
}

/** A rank fault's moment as people read it: `step 3` or `fault point "saved" (occurrence 1)`, with its generation past the first. */
export function describeMoment(fault: RankFault): string {
  const at = fault.atPoint === undefined ? `step ${fault.atStep}` : `fault point ${JSON.stringify(fault.atPoint)}${(fault.occurrence ?? 0) > 0 ? ` (occurrence ${fault.occurrence})` : ''}`;
  return (fault.generation ?? 0) > 0 ? `${at} of generation ${fault.generation}` : at;
}

/** Whether `fault` strikes a rank (rather than a link). */
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
