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
 * dependency covers the same number of bytes as its dependent (a send of what several producers
 * made waits for `Producers`), so both planes can follow it part by part (the JS plane piece by
 * piece, the native plane byte by byte).
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
 * What a send (or a fold) of bytes that several producers made waits for (a tree node forwarding
 * its own block with the blocks its children sent, an all-gather forwarding what it gathered so
 * far), or of some of one producer's (a reduce-scatter halving what it reduced): `parts`, each a
 * receive, fold or send, whose bytes laid end to end hold the dependent's from byte `skip` of them
 * on. Its byte j is byte skip + j of that concatenation and goes once that is produced: a send
 * goes part by part, the first producer's bytes, then the next's. The concatenation may run past
 * the dependent's end (the last part then only partly needed), never stop short of it.
 */
export interface Producers {
  readonly parts: readonly Dependency[];
  readonly skip: number;
}

/**
 * A send. Its bytes may go as far as `after` has produced them (a relay forwards a receive as it
 * arrives, a reduced segment goes as it is reduced): one producer of its size, or `Producers`
 * whose bytes together hold it; null: they are there from the start.
 */
export interface ScheduledSend extends ScheduledMessage {
  readonly after: Dependency | Producers | null;
}

/**
 * target = op over `sources`, folded left in their order (`avg` sums, then divides by `divisor`);
 * a single source is a copy. It runs as far as every dependency in `after` has got (the receives
 * and folds that produce its sources, the sends that still read its target), each of its size or
 * `Producers` holding its bytes. Every source has the target's length; the target may be one
 * source itself.
 */
export interface ScheduledFold {
  readonly target: Span;
  readonly sources: readonly Span[];
  readonly after: readonly (Dependency | Producers)[];
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

/** The span a dependency of `schedule` produces (a receive's, a fold's target) or reads (a send's). */
export function spanOfDependency(schedule: Pick<Schedule, 'sends' | 'receives' | 'folds'>, dependency: Dependency): Span {
  if ('receive' in dependency) return schedule.receives[dependency.receive]!.span;
  return 'fold' in dependency ? schedule.folds[dependency.fold]!.target : schedule.sends[dependency.send]!.span;
}

/** Bytes from `skip` on of what `dependency` produces (a part of a larger producer). */
export function producedFrom(dependency: Dependency, skip: number): Producers {
  return { parts: [dependency], skip };
}

/** A dependency as `Producers` (one of its size: itself, from byte 0; none: no part). */
export function producersOf(after: Dependency | Producers | null): Producers {
  if (after === null) return { parts: [], skip: 0 };
  return 'parts' in after ? after : { parts: [after], skip: 0 };
}

/** Bytes [start, end) of one producer, which send bytes from `at` on are. */
export interface ProducedPart {
  readonly dependency: Dependency;
  readonly start: number;
  readonly end: number;
  readonly at: number;
}

/**
 * What bytes [from, to) of a send of `producers` wait for: each part holding some of them, with
 * which of its own bytes, in order (`sizeOf` gives each producer's size). A range of no bytes (a
 * send of none) waits for every part whole, as a send of one producer waits for it.
 */
export function producedBytes(producers: Producers, sizeOf: (dependency: Dependency) => number, from: number, to: number): ProducedPart[] {
  const parts: ProducedPart[] = [];
  let first = 0;
  for (const dependency of producers.parts) {
    const size = sizeOf(dependency);
    const [low, high] = [Math.max(first, producers.skip + from), Math.min(first + size, producers.skip + to)];
    if (from === to) parts.push({ dependency, start: 0, end: size, at: from });
    else if (low < high) parts.push({ dependency, start: low - first, end: high - first, at: low - producers.skip });
    first += size;
  }
  return parts;
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
