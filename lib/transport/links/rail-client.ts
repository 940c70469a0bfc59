import { Observable, type SchedulerLike, type Subscriber, type Subscription, timeout } from 'rxjs';
import { ChannelClosedError, ProtocolError, RemoteAbortError, TimeoutError } from '../../errors.js';
import { ANY_RANK, MAX_U64 } from '../../protocol/constants.js';
import { abortFrame, abortReason, leaveHeader } from '../../protocol/control-frames.js';
import { ElementType } from '../../protocol/element-type.js';
import { frameText, makeHeader, type Frame } from '../../protocol/frame.js';
import { keyFields, keyText } from '../../protocol/message-key.js';
import { Opcode, opcodeName } from '../../protocol/opcode.js';
import { readGrownJob } from '../../protocol/grown-job.js';
import type { UniqueId } from '../../protocol/unique-id.js';
import type { JobGrowth } from '../job-growth.js';
import { type FrameChannel, outgoing } from '../frame-channel.js';
import type { SessionFailure } from '../session-failure.js';
import { MAX_TIMER_DELAY_MS } from '../transport-kind.js';

export interface RailRequest {
  readonly opcode: Opcode.Send | Opcode.Receive | Opcode.Heartbeat;
  /** Destination of a Send, source of a Receive (ANY_RANK for any), ANY_RANK for Heartbeat. */
  readonly peer: number;
  readonly tag: bigint;
  readonly elementType: ElementType;
  readonly elementCount: number;
  readonly payload?: Uint8Array;
  readonly timeoutMs: number;
}

/** Who owns a rail, and what ends it. */
export interface RailOwner {
  readonly uniqueId: UniqueId;
  readonly rank: number;
  readonly worldSize: number;
  readonly failure: SessionFailure;
  readonly scheduler: SchedulerLike;
  /**
   * A fault-tolerant job's: the coordinator's notice that a rank is gone (a Leave naming it, tag 1
   * when it left, 0 when it was lost; docs/protocol.md 13.7).
   */
  readonly rankLost?: (rank: number, reason: string, left: boolean) => void;
  /** A fault-tolerant job's growth: the coordinator's notices of joiners waiting and the admission to the grown job (docs/protocol.md 13.9) on the first rail. */
  readonly growth?: JobGrowth;
}

const EMPTY = new Uint8Array(0);

/**
 * One channel from a rank to the coordinator's point-to-point router (the reference design's
 * `P2pClient`): a rail of tcp_host_staged, or tcp_peer's control channel. Requests are
 * multiplexed, each opcode numbering its own sequence, and responses are matched back by
 * (opcode, sequence), so many receives on different tags can be in flight at once.
 *
 * A request that times out fails the session: a receive the coordinator holds cannot be
 * withdrawn, so the rail's matching is no longer known. Unsubscribing before the response drops
 * the response when it comes.
 */
export class RailClient {
  private readonly sequences = new Map<Opcode, bigint>();
  private readonly pending = new Map<string, Subscriber<Frame>>();
  private readonly reader: Subscription;
  private closing = false;

  constructor(
    private readonly channel: FrameChannel,
    private readonly owner: RailOwner,
    readonly rail: number,
  ) {
    this.reader = channel.frames$.subscribe({
      next: (frame) => this.onFrame(frame),
      error: (error: unknown) => this.onEnd(error),
      complete: () => this.onEnd(new ChannelClosedError(`point-to-point coordinator closed rail ${rail}`)),
    });
    if (rail === 0) owner.growth?.attach(this);
  }

  /** Writes a control frame the coordinator answers on its own terms (a grow request). */
  sendControl(frame: Frame): void {
    this.channel.send(outgoing(frame));
  }

  /** Cold: each subscription posts the request and emits the coordinator's response frame. */
  request(request: RailRequest): Observable<Frame> {
    const { failure, scheduler } = this.owner;
    return new Observable<Frame>((subscriber) => {
      const sequence = this.nextSequence(request.opcode);
      const key = `${request.opcode}:${sequence}`;
      this.pending.set(key, subscriber);
      const payload = request.payload ?? EMPTY;
      const { uniqueId, rank, worldSize } = this.owner;
      const header = makeHeader(
        {
          uniqueId,
          opcode: request.opcode,
          elementType: request.elementType,
          sourceRank: rank,
          destinationRank: request.peer,
          worldSize,
          sequence,
          ...keyFields(request.tag),
          elementCount: request.elementCount,
        },
        payload.length,
      );
      // A large Send goes in fragments; a Heartbeat is written between them, never behind the data.
      this.channel.sendInFragments({ header, parts: [payload] });
      return () => this.pending.delete(key);
    }).pipe(
      timeout({
        first: Math.min(request.timeoutMs, MAX_TIMER_DELAY_MS),
        scheduler,
        with: () => {
          failure.fail(new TimeoutError(`point-to-point ${opcodeName(request.opcode)} with ${keyText(request.tag)} on rail ${this.rail}`));
          return failure.ended$;
        },
      }),
      failure.untilEnded(),
    );
  }

  /** Tells the coordinator this rank abandons the session (interrupts every rank's pending work). */
  abort(message: string): void {
    const { uniqueId, rank, worldSize } = this.owner;
    this.channel.send(outgoing(abortFrame({ uniqueId, rank, worldSize }, message, { sequence: this.nextSequence(Opcode.Send) })));
  }

  /** Says goodbye (LEAVE) and closes the rail. */
  close(): void {
    this.closing = true;
    if (!this.channel.closed) {
      try {
        this.channel.send({ header: leaveHeader(this.owner), parts: [] });
      } catch {
        // Already closed by the peer: nothing to say goodbye to.
      }
    }
    this.reader.unsubscribe();
    this.pending.clear();
    this.channel.finish();
  }

  private nextSequence(opcode: Opcode): bigint {
    const sequence = this.sequences.get(opcode) ?? 0n;
    if (sequence === MAX_U64) throw new ProtocolError(`point-to-point ${opcodeName(opcode)} sequence overflow on rail ${this.rail}`);
    this.sequences.set(opcode, sequence + 1n);
    return sequence;
  }

  private onFrame(frame: Frame): void {
    const h = frame.header;
    const { uniqueId, rank, worldSize, failure } = this.owner;
    if (!h.uniqueId.equals(uniqueId) || h.worldSize !== worldSize || (h.destinationRank !== rank && h.destinationRank !== ANY_RANK)) {
      failure.fail(new ProtocolError(`invalid point-to-point response envelope on rail ${this.rail}`));
      return;
    }
    if (h.opcode === Opcode.Abort) {
      failure.fail(new RemoteAbortError(abortReason(frame)));
      return;
    }
    if (h.opcode === Opcode.Leave && this.owner.rankLost !== undefined) {
      this.owner.rankLost(h.sourceRank, frameText(frame), h.tag === 1n);
      return;
    }
    if (h.opcode !== Opcode.Send && h.opcode !== Opcode.Receive && h.opcode !== Opcode.Heartbeat) {
      if (!this.onGrowth(frame)) failure.fail(new ProtocolError(`unexpected ${opcodeName(h.opcode)} response on point-to-point rail ${this.rail}`));
      return;
    }
    const key = `${h.opcode}:${h.sequence}`;
    const subscriber = this.pending.get(key);
    if (subscriber === undefined) return;
    this.pending.delete(key);
    subscriber.next(frame);
    subscriber.complete();
  }

  /**
   * A fault-tolerant job's first rail also carries its growth (docs/protocol.md 13.9): the count
   * of processes waiting (a Join) and this rank's admission to the grown job (a Ready). Whether
   * `frame` was one.
   */
  private onGrowth(frame: Frame): boolean {
    const growth = this.rail === 0 ? this.owner.growth : undefined;
    const { opcode, tag } = frame.header;
    if (growth === undefined || (opcode !== Opcode.Join && opcode !== Opcode.Ready)) return false;
    try {
      if (opcode === Opcode.Join) growth.noticeWaiting(Number(tag));
      else growth.admitted(readGrownJob(frameText(frame)));
    } catch (error) {
      this.owner.failure.fail(error);
    }
    return true;
  }

  private onEnd(error: unknown): void {
    if (!this.closing) this.owner.failure.fail(error);
  }
}
