import { ConfigurationError } from '../../errors.js';
import type { Dependency, Schedule, Span } from './schedule.js';
import { ScheduleBuilder, type ScheduleIdentity } from './schedule-builder.js';

/** A message's step is a 12-bit field of its tags and labels, and the tags carry its channel mod 64 (docs/protocol.md 9.6). */
const MAX_STEPS_PER_CHANNEL = 0x1000;
const TAG_CHANNELS = 64;

/**
 * Writes an algorithm's schedules for every rank at once, as transfers (a send at one rank and its
 * receive at another) listed in an order where whatever a transfer waits for was listed before it.
 * Every rank's schedule keeps that order on each of its links, so both ends of a link list its
 * messages alike, and the native plane's links, which carry one message after the other, never
 * wait on one listed later. A message's channel is its share of the tensor, and its step its
 * index among the messages on its directed link whose channels are equal mod 64 (as the JS plane's
 * tags carry them): so tags are unique on the link, and a label names the share, so that a message
 * sent out of order by another share arrives as a mismatch on the native plane instead of being
 * taken for the one due (docs/protocol.md 9.6.6).
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
   * receives it into `into`, labelled `channel`; returns the receive, a dependency at `to`.
   */
  transfer(from: number, to: number, source: Span, into: Span, after: Dependency | null, channel = 0): Dependency {
    const key = (from * this.worldSize + to) * TAG_CHANNELS + (channel % TAG_CHANNELS);
    const label = { step: this.steps.get(key) ?? 0, channel };
    if (label.step >= MAX_STEPS_PER_CHANNEL) {
      throw new ConfigurationError(
        `${this.identity.algorithm} schedule of ${this.worldSize} ranks puts more than ${MAX_STEPS_PER_CHANNEL} messages of tag channel ${channel % TAG_CHANNELS} on the link from rank ${from} to rank ${to} (its tags number ${MAX_STEPS_PER_CHANNEL}): use fewer ring channels (GX1_RING_CHANNELS) or another algorithm`,
      );
    }
    this.steps.set(key, label.step + 1);
    this.at(from).send(to, source, label, after);
    return this.at(to).receive(from, into, label);
  }

  build(rank: number): Schedule {
    return this.at(rank).build();
  }
}
