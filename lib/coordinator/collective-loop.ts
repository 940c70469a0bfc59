import { Observable, type SchedulerLike, type Subscription, timer } from 'rxjs';
import { ChannelClosedError, ProtocolError, TimeoutError } from '../errors.js';
import { CollectiveAgreement } from '../protocol/agreement.js';
import type { Frame } from '../protocol/frame.js';
import type { FrameHeader } from '../protocol/header.js';
import { Opcode, opcodeName } from '../protocol/opcode.js';
import type { UniqueId } from '../protocol/unique-id.js';
import type { BusyWindow } from '../transport/busy-window.js';
import type { FrameChannel } from '../transport/frame-channel.js';
import { MAX_TIMER_DELAY_MS } from '../transport/transport-kind.js';
import { type CoordinatorEventSink, NO_EVENTS } from './coordinator-events.js';
import { LazyDeadline, LazyDeadlines } from '../transport/lazy-deadlines.js';
import { errorText, rankEvents } from './rank-events.js';
import { routeCollective } from './route-collective.js';

export interface CollectiveLoopOptions {
  readonly uniqueId: UniqueId;
  readonly timeoutMs: number;
  readonly scheduler: SchedulerLike;
  /** How long a disconnect mid-sequence waits for a concurrent abort to explain it. */
  readonly disconnectGraceMs: number;
  /** Where `rank-left` and `collective-*` events go (default: nowhere). */
  readonly events?: CoordinatorEventSink;
  /** After how long (and again every as long) a collective still waiting is reported, naming where each rank is. */
  readonly slowCollectiveMs?: number;
  /** Opened on each request, so the last of a sequence opens it as the responses go (see `CoordinatorOptions.busyWindow`). */
  readonly busyWindow?: BusyWindow | null;
  /**
   * A fault-tolerant job's: a rank whose channel fails is reported here as lost instead of failing
   * the loop (one that closes cleanly is judged on its first rail: did it LEAVE?), and once a rank
   * is gone the world's collectives are over: requests are dropped (every rank's world session
   * fails on the coordinator's notice), no sequence times out.
   */
  readonly onRankGone?: (rank: number, reason: string, graceful: boolean) => void;
}

/** The sequence the loop is filling, for Abort frames sent when the loop fails. */
export interface CollectiveProgress {
  sequence: bigint;
}

/**
 * The coordinator's ordered collective loop over every rank's collective channel. Per sequence it
 * waits for one request from each rank, routes them (`routeCollective`) and answers each rank.
 *
 * - Each request must carry the sequence being filled (`rank 1 submitted collective sequence 5,
 *   expected 4`, a ProtocolError), checked as it arrives.
 * - The timeout starts when the first rank submits a sequence (a collective is then in flight),
 *   and names the ranks still missing: `collective sequence 3; missing ranks [1]`. SetTimeout
 *   changes it for every later sequence.
 * - A rank whose channel ends cleanly between sequences has left; the loop completes when all
 *   left, and a later sequence that needs a departed rank fails at once naming it. A channel that
 *   fails (protocol error, reset) fails the loop, between sequences too.
 * - A rank that disconnects mid-sequence fails the loop after a short grace, so that an abort
 *   racing the disconnect on another channel is reported instead.
 * - In a fault-tolerant job (`onRankGone`) a rank whose channel ends is gone instead, and the
 *   loop serves no more sequences; it completes when every channel ended.
 *
 * Emits nothing; completes on a clean end, errors with the failure.
 */
export function collectiveLoop(
  channels: readonly FrameChannel[],
  options: CollectiveLoopOptions,
  progress: CollectiveProgress,
): Observable<never> {
  return new Observable<never>((subscriber) => {
    const worldSize = channels.length;
    const agreement = new CollectiveAgreement(worldSize);
    let timeoutMs = options.timeoutMs;
    const requests = new Array<Frame | undefined>(worldSize).fill(undefined);
    let submitted = 0;
    const left = new Array<boolean>(worldSize).fill(false);
    let grace: Subscription | null = null;
    let startedAt = 0;
    let startedWith = Opcode.Barrier;
    const sink = options.events ?? NO_EVENTS;
    // What each rank last submitted, for the slow report (a header: nothing is built per request).
    const lastSubmitted = new Array<FrameHeader | null>(worldSize).fill(null);

    const fail = (error: unknown) => subscriber.error(error);
    const sequence = () => agreement.nextSequence();
    const missingRanks = () => requests.flatMap((request, missingRank) => (request === undefined ? [missingRank] : []));
    // Set when a sequence starts and cleared when it completes: lazy, as most sequences complete.
    const deadlines = new LazyDeadlines(options.scheduler);
    const deadline = new LazyDeadline(deadlines, () => fail(new TimeoutError(`collective sequence ${sequence()}; missing ranks [${missingRanks().join(',')}]`)));
    const slowMs = options.slowCollectiveMs;
    const slow = new LazyDeadline(deadlines, () => {
      slow.set(Math.min(slowMs!, MAX_TIMER_DELAY_MS));
      sink.next({
        type: 'collective-waiting',
        sequence: Number(sequence()),
        operation: opcodeName(startedWith),
        waitedMs: options.scheduler.now() - startedAt,
        missing: missingRanks(),
        ranks: lastSubmitted.map((header, rank) => ({
          rank,
          sequence: header === null ? null : Number(header.sequence),
          operation: header === null ? null : opcodeName(header.opcode),
        })),
      });
    });

    // A fault-tolerant job that lost a rank: its world is over (see `onRankLost`).
    let worldLost = false;

    const onRequest = (rank: number, frame: Frame) => {
      options.busyWindow?.open();
      if (worldLost) return;
      // Every rank numbers its collectives from 0, one per answered request (docs 8.2, 9.2).
      if (frame.header.sequence !== sequence()) {
        throw new ProtocolError(`rank ${rank} submitted collective sequence ${frame.header.sequence}, expected ${sequence()}`);
      }
      if (requests[rank] !== undefined) {
        throw new ProtocolError(`rank ${rank} submitted collective sequence ${sequence()} twice`);
      }
      requests[rank] = frame;
      submitted += 1;
      lastSubmitted[rank] = frame.header;
      const departed = left.indexOf(true);
      if (departed >= 0) throw new ChannelClosedError(`rank ${departed} left before collective sequence ${sequence()}`);
      if (submitted === 1) {
        deadline.set(Math.min(timeoutMs, MAX_TIMER_DELAY_MS));
        if (slowMs !== undefined && slowMs < timeoutMs) slow.set(Math.min(slowMs, MAX_TIMER_DELAY_MS));
        startedAt = options.scheduler.now();
        startedWith = frame.header.opcode;
        if (sink.observed) sink.next({ type: 'collective-started', sequence: Number(sequence()), operation: opcodeName(frame.header.opcode), rank });
      }
      if (submitted < worldSize) return;
      // A rank whose connection went away during this sequence cannot take its response: leave the
      // report to the grace timer, which names that rank (sending would only fail "closed").
      if (grace !== null) return;
      deadline.clear();
      slow.clear();
      const round = requests as Frame[];
      const routed = Number(sequence());
      const responses = routeCollective(agreement, options.uniqueId, sequence(), round);
      responses.forEach((response, destination) => channels[destination]!.send(response));
      if (round[0]!.header.opcode === Opcode.SetTimeout) timeoutMs = Number(round[0]!.header.tag);
      if (sink.observed) {
        const bytes = round.reduce((sum, request) => sum + request.payload.length, 0);
        sink.next({ type: 'collective-completed', sequence: routed, operation: opcodeName(round[0]!.header.opcode), bytes, durationMs: options.scheduler.now() - startedAt });
      }
      // The responses hold payloads, never this array: it is reused for the next sequence.
      requests.fill(undefined);
      submitted = 0;
      progress.sequence = sequence();
    };

    const onGone = (rank: number, reason: string | null) => {
      if (options.onRankGone !== undefined) {
        left[rank] = true;
        worldLost = true;
        deadlines.stop();
        if (reason !== null) options.onRankGone(rank, `its collective channel failed: ${reason}`, false);
        if (left.every(Boolean)) subscriber.complete();
        return;
      }
      // Only a clean close between sequences is a departure; a connection that fails (a protocol
      // error, a reset) fails the session even when no collective is in flight, as in the
      // reference design.
      if (submitted === 0 && reason === null) {
        left[rank] = true;
        sink.next({ type: 'rank-left', rank });
        if (left.every(Boolean)) subscriber.complete();
        return;
      }
      const what =
        reason === null
          ? `rank ${rank} disconnected during collective sequence ${sequence()}`
          : submitted === 0
            ? `rank ${rank} failed before collective sequence ${sequence()}: ${reason}`
            : `rank ${rank} failed during collective sequence ${sequence()}: ${reason}`;
      grace ??= timer(options.disconnectGraceMs, options.scheduler).subscribe(() => fail(new ChannelClosedError(what)));
    };

    const events = rankEvents(channels).subscribe((event) => {
      try {
        if (event.kind === 'frame') onRequest(event.rank, event.frame);
        else onGone(event.rank, event.kind === 'failed' ? errorText(event.error) : null);
      } catch (error) {
        fail(error);
      }
    });
    return () => {
      events.unsubscribe();
      deadlines.stop();
      grace?.unsubscribe();
    };
  });
}
