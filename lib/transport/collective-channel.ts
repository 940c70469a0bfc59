import { Observable, type Subscriber, type Subscription } from 'rxjs';
import { ChannelClosedError, ProtocolError, RemoteAbortError, TimeoutError } from '../errors.js';
import { MAX_U64 } from '../protocol/constants.js';
import { abortReason } from '../protocol/control-frames.js';
import { makeHeader, type Frame, type FrameFields } from '../protocol/frame.js';
import { Opcode, opcodeName } from '../protocol/opcode.js';
import type { BufferPool } from './buffer-pool.js';
import type { FrameChannel } from './frame-channel.js';
import { LazyDeadline, LazyDeadlines } from './lazy-deadlines.js';
import type { RailOwner } from './links/rail-client.js';
import { MAX_TIMER_DELAY_MS } from './transport-kind.js';
import { validateResponse } from './validate-response.js';

/** Extra time a rank waits for a collective response beyond the session timeout (as the reference). */
export const COLLECTIVE_RESPONSE_GRACE_MS = 250;

/** A collective request as an algorithm states it; the channel fills in who sends it and the sequence. */
export type CollectiveRequest = Omit<FrameFields, 'uniqueId' | 'sourceRank' | 'worldSize' | 'sequence'>;

interface Waiter {
  readonly sequence: bigint;
  readonly opcode: Opcode;
  /** The response only feeds a kernel: assemble it in pooled memory. */
  readonly scratch: boolean;
  readonly subscriber: Subscriber<Frame>;
}

/**
 * A rank's ordered collective channel to the coordinator: each request is answered with the
 * response for its sequence, and the sequence advances with each answer. Requests must come one at
 * a time (the session's collective queue sees to it). An Abort on this channel fails the session;
 * a response that does not come within the session timeout (plus a grace for the coordinator's
 * own collective timeout to speak first) fails it too.
 */
export class CollectiveChannel {
  private sequence = 0n;
  private waiter: Waiter | null = null;
  private readonly reader: Subscription;
  /** When the pending request's response is overdue: set and cleared per collective, lazily. */
  private readonly overdue: LazyDeadline;
  private readonly deadlines: LazyDeadlines;

  constructor(
    private readonly channel: FrameChannel,
    private readonly owner: RailOwner,
    private readonly timeoutMs: () => number,
    private readonly pool: BufferPool,
  ) {
    const { failure } = owner;
    this.deadlines = new LazyDeadlines(owner.scheduler);
    this.overdue = new LazyDeadline(this.deadlines, () => {
      const waiter = this.waiter;
      if (waiter !== null) failure.fail(new TimeoutError(`rank ${owner.rank} collective sequence ${waiter.sequence} (${opcodeName(waiter.opcode)}) response`));
    });
    channel.allocatePayload = (header) => (this.waiter?.scratch ? this.pool.take(header.payloadBytes) : new Uint8Array(header.payloadBytes));
    this.reader = channel.frames$.subscribe({
      next: (frame) => this.onFrame(frame),
      error: (error: unknown) => failure.fail(error),
      complete: () => failure.fail(new ChannelClosedError('coordinator closed the collective channel')),
    });
  }

  /**
   * Cold: sends one collective request on subscribe and emits the coordinator's response (callers
   * run it inside the session's queue, which ends it with the session's failure). With
   * `scratch`, a response payload that spans socket chunks is assembled in the pool's memory: the
   * caller must give it back once consumed (and must not hand it out).
   */
  exchange(fields: CollectiveRequest, parts: readonly Uint8Array[], scratch = false): Observable<Frame> {
    const { uniqueId, rank, worldSize } = this.owner;
    return new Observable<Frame>((subscriber) => {
      if (this.waiter !== null) throw new ProtocolError(`rank ${rank} submitted a collective while sequence ${this.waiter.sequence} is pending`);
      const sequence = this.sequence;
      if (sequence === MAX_U64) throw new ProtocolError('collective sequence overflow');
      const payloadBytes = parts.reduce((total, part) => total + part.length, 0);
      // Field by field, not `{ ...fields }`: a spread of the callers' differently shaped requests
      // costs microseconds per collective, a fixed literal a fraction of one.
      const header = makeHeader(
        {
          opcode: fields.opcode,
          elementType: fields.elementType,
          reduceOp: fields.reduceOp,
          flags: fields.flags,
          destinationRank: fields.destinationRank,
          rootRank: fields.rootRank,
          tag: fields.tag,
          elementCount: fields.elementCount,
          uniqueId,
          sourceRank: rank,
          worldSize,
          sequence,
        },
        payloadBytes,
      );
      const waiter: Waiter = { sequence, opcode: fields.opcode, scratch, subscriber };
      this.waiter = waiter;
      // The session's failure ends this exchange (its caller runs it under the session).
      this.overdue.set(Math.min(this.timeoutMs() + COLLECTIVE_RESPONSE_GRACE_MS, MAX_TIMER_DELAY_MS));
      this.channel.send({ header, parts });
      return () => {
        if (this.waiter !== waiter) return;
        this.waiter = null;
        this.overdue.clear();
      };
    });
  }

  close(): void {
    this.deadlines.stop();
    this.reader.unsubscribe();
    this.channel.finish();
  }

  private onFrame(frame: Frame): void {
    try {
      if (frame.header.opcode === Opcode.Abort) throw new RemoteAbortError(abortReason(frame));
      const waiter = this.waiter;
      if (waiter === null) {
        throw new ProtocolError(`unexpected ${opcodeName(frame.header.opcode)} frame on rank ${this.owner.rank}'s collective channel`);
      }
      validateResponse(frame, this.owner.uniqueId, this.owner.rank, this.owner.worldSize, waiter.sequence);
      if (frame.header.opcode !== waiter.opcode) {
        throw new ProtocolError(`collective sequence ${waiter.sequence} answered with ${opcodeName(frame.header.opcode)}, expected ${opcodeName(waiter.opcode)}`);
      }
      this.sequence += 1n;
      this.waiter = null;
      this.overdue.clear();
      waiter.subscriber.next(frame);
      waiter.subscriber.complete();
    } catch (error) {
      this.owner.failure.fail(error);
    }
  }
}
