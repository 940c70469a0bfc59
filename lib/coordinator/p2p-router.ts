import { interval, Observable, type SchedulerLike } from 'rxjs';
import { ChannelClosedError, ConfigurationError, TimeoutError } from '../errors.js';
import type { Frame } from '../protocol/frame.js';
import { Opcode } from '../protocol/opcode.js';
import type { UniqueId } from '../protocol/unique-id.js';
import type { BusyWindow } from '../transport/busy-window.js';
import type { FrameChannel } from '../transport/frame-channel.js';
import { type CoordinatorEventSink, NO_EVENTS } from './coordinator-events.js';
import { type Delivery, P2pMatcher } from './p2p-matcher.js';
import { errorText, rankEvents } from './rank-events.js';

export interface P2pRouterOptions {
  readonly uniqueId: UniqueId;
  /** When set, every rank must show signs of life this often, and must LEAVE before closing. */
  readonly heartbeatTimeoutMs: number | null;
  readonly scheduler: SchedulerLike;
  /**
   * Tells a rank why its connection on this rail broke (a protocol error, a reset) when that does
   * not fail the session, and closes the connection: the stream lost its framing. Without it the
   * connection is only closed.
   */
  readonly refuse?: (rank: number, reason: string) => void;
  /** Acknowledged unmatched bytes per sending rank (see `P2pMatcher`); default 1 GiB. */
  readonly bufferLimitBytes?: number;
  /** The rail served, for error messages; default 0. */
  readonly rail?: number;
  /** Where `p2p-matched` and `heartbeat` events go (default: nowhere). */
  readonly events?: CoordinatorEventSink;
  /** Opened on each frame (see `CoordinatorOptions.busyWindow`). */
  readonly busyWindow?: BusyWindow | null;
  /**
   * A fault-tolerant job's: a rank whose connection ends is reported here as gone, `graceful` when
   * it said LEAVE first; one that closes without LEAVE, or whose lease runs out, is lost (and its
   * connection dropped) instead of failing the router. The others go on.
   */
  readonly onRankGone?: (rank: number, reason: string, graceful: boolean) => void;
  /** A fault-tolerant job's first rail: a member's request to grow the job (a JOIN, docs/protocol.md 13.9). */
  readonly onGrowRequest?: (rank: number, frame: Frame) => void;
}

/**
 * Serves one point-to-point rail (the reference design's `run_p2p_loop`): routes Send, Receive,
 * Heartbeat, Leave and Abort from every rank's connection on this rail through a `P2pMatcher`.
 *
 * Every connection is read all the time, so a rank's Heartbeat, Abort and Leave are handled
 * however much of its data waits for receivers. Memory is bounded by withholding
 * acknowledgements instead (a rank's `send` waits for its acknowledgement): past
 * `bufferLimitBytes` of a rank's unmatched sends its acknowledgements wait for receives, and a
 * rank that sends on regardless fails the session, named (see `P2pMatcher`).
 *
 * With a heartbeat timeout the rail holds a lease per rank, renewed by any frame (at its header
 * and when it is whole, so each fragment of a long message renews it too): a rank silent
 * for longer fails the session (`heartbeat lease for rank 1; last contact 153 ms ago`), checked
 * on a timer stream every quarter of the timeout (1..250 ms). Without a lease (or after LEAVE) a
 * connection that breaks only counts as closed: the rank is told why (`refuse`) and dropped. In a
 * fault-tolerant job (`onRankGone`) a rank gone without LEAVE, or past its lease, is lost instead.
 * Completes when every rank's connection has ended; errors with the first failure.
 */
export function p2pRouter(channels: readonly FrameChannel[], options: P2pRouterOptions): Observable<never> {
  return new Observable<never>((subscriber) => {
    const worldSize = channels.length;
    const { scheduler, heartbeatTimeoutMs } = options;
    const refuse = options.refuse ?? ((rank: number) => channels[rank]!.finish());
    const matcher = new P2pMatcher(options.uniqueId, worldSize, options.bufferLimitBytes, options.rail);
    const lastSeen = new Array<number>(worldSize).fill(scheduler.now());
    const graceful = new Array<boolean>(worldSize).fill(false);
    const closed = new Array<boolean>(worldSize).fill(false);
    const sink = options.events ?? NO_EVENTS;
    const rail = options.rail ?? 0;
    // A delivery of Receive is a send meeting its receive: the data goes to the receiver.
    const report = (rank: number, opcode: Opcode, deliveries: readonly Delivery[]) => {
      if (opcode === Opcode.Heartbeat) sink.next({ type: 'heartbeat', rank, rail });
      for (const { rank: destination, frame } of deliveries) {
        if (frame.header.opcode !== Opcode.Receive) continue;
        sink.next({ type: 'p2p-matched', rail, source: frame.header.sourceRank, destination, tag: frame.header.tag, bytes: frame.header.payloadBytes });
      }
    };

    const onFrame = (rank: number, frame: Parameters<P2pMatcher['route']>[1]) => {
      options.busyWindow?.open();
      lastSeen[rank] = scheduler.now();
      if (graceful[rank]) throw new ConfigurationError(`point-to-point rank ${rank} sent data after LEAVE`);
      if (frame.header.opcode === Opcode.Join && options.onGrowRequest !== undefined) {
        options.onGrowRequest(rank, frame);
        return;
      }
      const deliveries = matcher.route(rank, frame);
      if (sink.observed) report(rank, frame.header.opcode, deliveries);
      for (const delivery of deliveries) {
        try {
          // In fragments: a Heartbeat echo or an Abort to that rank is written between them, never behind the data.
          channels[delivery.rank]!.sendInFragments(delivery.frame);
        } catch (error) {
          // A rank that already went away cannot take its reply; its departure is handled on its own.
          if (!(error instanceof ChannelClosedError)) throw error;
        }
      }
      if (frame.header.opcode === Opcode.Leave) graceful[rank] = true;
      if (leaving.size > 0) reportLeft();
    };

    // Ranks that left with sends still waiting here for their receives: reported once those are taken.
    const leaving = new Set<number>();
    const reportLeft = () => {
      for (const rank of leaving) {
        if (matcher.bufferedBy(rank) > 0) continue;
        leaving.delete(rank);
        options.onRankGone?.(rank, 'it left the job', true);
      }
    };

    const onGone = (rank: number, reason: string | null) => {
      closed[rank] = true;
      if (options.onRankGone !== undefined) {
        if (graceful[rank]) {
          // What it sent before it left is still delivered before the others hear it is gone.
          leaving.add(rank);
          reportLeft();
        } else {
          options.onRankGone(rank, reason === null ? `its point-to-point rail ${rail} closed without LEAVE` : `its point-to-point rail ${rail} failed: ${reason}`, false);
        }
      } else if (heartbeatTimeoutMs !== null && !graceful[rank]) {
        throw new ChannelClosedError(
          reason === null
            ? `point-to-point rank ${rank} disconnected without LEAVE`
            : `point-to-point rank ${rank} failed without LEAVE: ${reason}`,
        );
      }
      if (reason !== null) refuse(rank, reason);
      if (closed.every(Boolean)) subscriber.complete();
    };

    // Every header is contact, a fragment's too: a rank writing a long message is heard all along.
    channels.forEach((channel, rank) => (channel.admitHeader = () => (lastSeen[rank] = scheduler.now())));
    const events = rankEvents(channels).subscribe((event) => {
      try {
        if (event.kind === 'frame') onFrame(event.rank, event.frame);
        else onGone(event.rank, event.kind === 'failed' ? errorText(event.error) : null);
      } catch (error) {
        subscriber.error(error);
      }
    });
    if (heartbeatTimeoutMs !== null) {
      const poll = Math.min(250, Math.max(1, Math.floor(heartbeatTimeoutMs / 4)));
      events.add(
        interval(poll, scheduler).subscribe(() => {
          const now = scheduler.now();
          const stale = lastSeen.findIndex((seen, rank) => !closed[rank] && !graceful[rank] && now - seen >= heartbeatTimeoutMs);
          if (stale < 0) return;
          const expired = `heartbeat lease for rank ${stale}; last contact ${Math.round(now - lastSeen[stale]!)} ms ago`;
          if (options.onRankGone === undefined) {
            subscriber.error(new TimeoutError(expired));
            return;
          }
          closed[stale] = true;
          options.onRankGone(stale, expired, false);
          if (closed.every(Boolean)) subscriber.complete();
        }),
      );
    }
    return () => events.unsubscribe();
  });
}
