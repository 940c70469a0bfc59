import { ConfigurationError } from '../../errors.js';
import type { Dependency, Schedule, Span } from './schedule.js';
import { ScheduleBuilder, type ScheduleIdentity } from './schedule-builder.js';

/** A message's step and channel are 12- and 6-bit fields of the JS plane's tags (docs/protocol.md 9.6). */
const MAX_STEPS_PER_LINK = 0x1000;
const MAX_CHANNELS = 64;

/**
 * Writes an algorithm's schedules for every rank at once, as transfers (a send at one rank and its
 * receive at another) listed in an order where whatever a transfer waits for was listed before it.
 * Every rank's schedule keeps that order on each of its links, so both ends of a link list its
 * messages alike, and the native plane's links, which carry one message after the other, never
 * wait on one listed later. A message's step is its index on its directed link: unique there, as
 * the JS plane's tags need; its channel (0..63) only spreads its pieces over the rails.
 *
 * For algorithms whose messages are easiest to state as who sends what to whom (the hierarchical
 * family); the ring and pairwise families write one rank's schedule directly.
 */
export class WorldScheduleBuilder {
  private readonly ranks: ScheduleBuilder[];
  private readonly steps = new Map<number, number>();

  constructor(
    private readonly worldSize: number,
    private readonly identity: ScheduleIdentity,
  ) {
    this.ranks = Array.from({ length: worldSize }, () => new ScheduleBuilder(identity));
  }

  /** The schedule of `rank`, for its scratch memory, folds and copies. */
  at(rank: number): ScheduleBuilder {
    return this.ranks[rank]!;
  }

  /**
   * `from` sends `source` (as far as `after`, a dependency at `from`, has produced it) and `to`
   * receives it into `into`, labelled `channel` mod 64; returns the receive, a dependency at `to`.
   */
  transfer(from: number, to: number, source: Span, into: Span, after: Dependency | null, channel = 0): Dependency {
    const link = from * this.worldSize + to;
    const step = this.steps.get(link) ?? 0;
    if (step >= MAX_STEPS_PER_LINK) {
      throw new ConfigurationError(
        `${this.identity.algorithm} schedule of ${this.worldSize} ranks puts more than ${MAX_STEPS_PER_LINK} messages on the link from rank ${from} to rank ${to} (its tags number ${MAX_STEPS_PER_LINK}): use fewer ring channels (GX1_RING_CHANNELS) or another algorithm`,
      );
    }
    this.steps.set(link, step + 1);
    const label = { step, channel: channel % MAX_CHANNELS };
    this.at(from).send(to, source, label, after);
    return this.at(to).receive(from, into, label);
  }

  build(rank: number): Schedule {
    return this.at(rank).build();
  }
}
