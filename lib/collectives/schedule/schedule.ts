import type { ReduceOp } from '../../protocol/reduce-op.js';
import type { TopologyGroups } from '../../topology/topology-groups.js';

/**
 * A collective's data movement at one rank, as data: the messages it sends and receives on each
 * link, the folds (reductions, copies) it computes, and what each waits for. One pure function per
 * algorithm (lib/collectives/<collective>/<algorithm>.ts) writes it; two executors run it: the
 * event loop over `Links` (the JS plane, ./links-executor.ts) and the addon's thread over the data
 * links (the native plane, ./plane-executor.ts). docs/architecture.md, "Schedules", shows both.
 *
 * Everything is in bytes of three memories the caller binds at run time, so one schedule serves
 * every call of the same shape (the native plane compiles it once).
 */

/** The caller's tensor (read only unless it is the result's memory too), the result, and scratch. */
export type MemoryName = 'input' | 'output' | 'scratch';

/** Bytes [offset, offset + bytes) of one memory. */
export interface Span {
  readonly memory: MemoryName;
  readonly offset: number;
  readonly bytes: number;
}

/**
 * What a send or a fold waits for, by index: a receive or a fold (what produces the bytes it
 * reads), or a send (done once its bytes have left: memory it reads may then be overwritten). A
 * dependency covers the same number of bytes as its dependent, so both planes can follow it
 * part by part (the JS plane piece by piece, the native plane byte by byte).
 */
export type Dependency = { readonly receive: number } | { readonly fold: number } | { readonly send: number };

/**
 * One message on one link. Messages between two ranks go in the order they are listed (the native
 * plane's link carries them one after the other); `step` and `channel` label them: in the JS
 * plane's tags (docs/protocol.md 9.6), where a message travels as pieces, and in the native plane's
 * headers (./message-label.ts). Two messages on one link never share both.
 */
export interface ScheduledMessage {
  readonly peer: number;
  readonly span: Span;
  readonly step: number;
  readonly channel: number;
  /**
   * The native plane's data link to `peer` it takes (./rail-stripes.ts cuts messages over the
   * rails; absent: rail 0). The JS plane spreads pieces over its rails itself.
   */
  readonly rail?: number;
  /** Which stripe of its message this is (./rail-stripes.ts; absent: 0, the message whole). */
  readonly stripe?: number;
}

/**
 * A send. Its bytes may go as far as `after` has produced them (a relay forwards a receive as it
 * arrives, a reduced segment goes as it is reduced); null: they are there from the start.
 */
export interface ScheduledSend extends ScheduledMessage {
  readonly after: Dependency | null;
}

/**
 * target = op over `sources`, folded left in their order (`avg` sums, then divides by `divisor`);
 * a single source is a copy. It runs as far as every dependency in `after` has got (the receives
 * and folds that produce its sources, the sends that still read its target). Every source has the
 * target's length; the target may be one source itself.
 */
export interface ScheduledFold {
  readonly target: Span;
  readonly sources: readonly Span[];
  readonly after: readonly Dependency[];
  readonly op: ReduceOp;
  readonly divisor: number;
}

export interface Schedule {
  /** The algorithm's name, as the table and `events$` say it. */
  readonly algorithm: string;
  /** What the ranks agree on beside the operation (hashed into the descriptor: docs/protocol.md 9.6). */
  readonly layout: string;
  /** The JS plane's tag prefix for this algorithm's pieces. */
  readonly tagPrefix: number;
  /** The JS plane cuts messages into pieces of this many times the session's piece size. */
  readonly pieceScale: number;
  readonly scratchBytes: number;
  readonly sends: readonly ScheduledSend[];
  readonly receives: readonly ScheduledMessage[];
  readonly folds: readonly ScheduledFold[];
}

/** What a schedule is written from: the collective's shape at this rank, and the job's tuning. */
export interface ScheduleInput {
  readonly rank: number;
  readonly worldSize: number;
  /** Elements of this rank's tensor (the count in the collective's descriptor). */
  readonly count: number;
  /** Bytes per element (1 where there is no tensor). */
  readonly width: number;
  /** The reduction, for collectives that reduce. */
  readonly op: ReduceOp | null;
  /** The root, for rooted collectives. */
  readonly root: number | null;
  /** The ring, every rank once, that ring and chain algorithms follow. */
  readonly ringOrder: readonly number[];
  /** Rings a ring algorithm stripes its data over (and shares a hierarchical one cuts each lane into). */
  readonly ringChannels: number;
  /** The topology groups hierarchical algorithms follow (GX1_TOPOLOGY_GROUPS); absent: one group of every rank. */
  readonly groups?: TopologyGroups;
  /**
   * The result is written in the input's own memory: the input itself (all-reduce, broadcast),
   * the input as this rank's slot of the output (all-gather), the output as this rank's shard of
   * the input (reduce-scatter).
   */
  readonly inPlace: boolean;
}

/** Writes one algorithm's schedule. */
export type ScheduleOf = (input: ScheduleInput) => Schedule;

export function span(memory: MemoryName, offset: number, bytes: number): Span {
  return { memory, offset, bytes };
}

/** Elements [start, start + count) of `memory`, as bytes. */
export function elements(memory: MemoryName, width: number, range: { readonly start: number; readonly count: number }): Span {
  return { memory, offset: range.start * width, bytes: range.count * width };
}
