import type { ReduceOp } from '../../protocol/reduce-op.js';
import type { Dependency, Producers, Schedule, ScheduledFold, ScheduledMessage, ScheduledSend, Span } from './schedule.js';
import { span, spanOfDependency } from './schedule.js';

/** Where a message sits among the JS plane's tags. */
export interface MessageLabel {
  readonly step: number;
  readonly channel?: number;
}

/** Who an algorithm is, for its schedule. */
export interface ScheduleIdentity {
  readonly algorithm: string;
  readonly layout: string;
  readonly tagPrefix: number;
  readonly pieceScale?: number;
}

/**
 * Collects a schedule's messages and folds in the order an algorithm states them, and hands out
 * scratch memory and the producers later steps wait for.
 */
export class ScheduleBuilder {
  private readonly sends: ScheduledSend[] = [];
  private readonly receives: ScheduledMessage[] = [];
  private readonly folds: ScheduledFold[] = [];
  private scratchBytes = 0;

  constructor(private readonly identity: ScheduleIdentity) {}

  /** `bytes` of scratch memory of the schedule's own. */
  scratch(bytes: number): Span {
    const offset = this.scratchBytes;
    this.scratchBytes += bytes;
    return span('scratch', offset, bytes);
  }

  /**
   * Sends `bytes` to `peer`, as far as `after` has produced them: one producer of its size, or
   * a list whose bytes in order hold it (from the first's first byte on); null or none: from the
   * start.
   */
  send(peer: number, bytes: Span, label: MessageLabel, after: Dependency | readonly Dependency[] | Producers | null = null): Dependency {
    this.sends.push({ peer, span: bytes, step: label.step, channel: label.channel ?? 0, after: this.producing(after, bytes.bytes) });
    return { send: this.sends.length - 1 };
  }

  /** Receives `peer`'s next message into `into`. */
  receive(peer: number, into: Span, label: MessageLabel): Dependency {
    this.receives.push({ peer, span: into, step: label.step, channel: label.channel ?? 0 });
    return { receive: this.receives.length - 1 };
  }

  /** target = op over `sources` in order (avg divides by `divisor`), as far as `after` has produced. */
  fold(target: Span, sources: readonly Span[], after: readonly (Dependency | Producers)[], op: ReduceOp, divisor = 1): Dependency {
    this.folds.push({ target, sources, after, op, divisor });
    return { fold: this.folds.length - 1 };
  }

  /** target = source (a fold of one source), as far as `after` has produced. */
  copy(target: Span, source: Span, after: readonly (Dependency | Producers)[] = []): Dependency {
    return this.fold(target, [source], after, 'sum');
  }

  /** A send's `after` as the schedule states it: a list of one producer of its size is that producer, of none null. */
  private producing(after: Dependency | readonly Dependency[] | Producers | null, bytes: number): ScheduledSend['after'] {
    if (after === null || !('length' in after)) return after;
    if (after.length === 0) return null;
    const only = after.length === 1 ? after[0]! : null;
    return only !== null && spanOfDependency({ sends: this.sends, receives: this.receives, folds: this.folds }, only).bytes === bytes ? only : { parts: after, skip: 0 };
  }

  build(): Schedule {
    const { algorithm, layout, tagPrefix, pieceScale } = this.identity;
    return {
      algorithm,
      layout,
      tagPrefix,
      pieceScale: pieceScale ?? 1,
      scratchBytes: this.scratchBytes,
      sends: this.sends,
      receives: this.receives,
      folds: this.folds,
    };
  }
}
