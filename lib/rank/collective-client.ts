import type { Subscription } from 'rxjs';
import { ChannelClosedError, ProtocolError, RemoteAbortError, TimeoutError } from '../errors.js';
import { MAX_U64 } from '../protocol/constants.js';
import { frameText, makeHeader, type Frame, type FrameFields } from '../protocol/frame.js';
import { Opcode, opcodeName } from '../protocol/opcode.js';
import type { UniqueId } from '../protocol/unique-id.js';
import type { BufferPool } from '../transport/buffer-pool.js';
import type { FrameChannel } from '../transport/frame-channel.js';
import { MAX_TIMER_DELAY_MS } from '../transport/transport-kind.js';
import { validateResponse } from '../transport/validate-response.js';
import type { SessionFailure } from './session-failure.js';

/** Extra time a rank waits for a collective response beyond the session timeout (as the reference). */
export const COLLECTIVE_RESPONSE_GRACE_MS = 250;


export type CollectiveRequest = Omit<FrameFields, 'uniqueId' | 'sourceRank' | 'worldSize' | 'sequence'>;

interface Waiter {
  readonly sequence: bigint;
  readonly opcode: Opcode;
  /** The response only feeds a kernel: assemble it in pooled memory. */
  readonly scratch: boolean;
  readonly resolve: (frame: Frame) => void;
  readonly timer: NodeJS.Timeout;
}

/**
 * A rank's ordered collective channel: one request at a time, in call order, each answered by the
 * coordinator with the response for that sequence. An Abort on this channel fails the session.
 */
export class CollectiveClient {
  private sequence = 0n;
  private queue: Promise<unknown> = Promise.resolve();
  private waiter: Waiter | null = null;
  private readonly reader: Subscription;

  constructor(
    private readonly channel: FrameChannel,
    private readonly uniqueId: UniqueId,
    private readonly rank: number,
    private readonly worldSize: number,
    private readonly failure: SessionFailure,
    public timeoutMs: number,
    private readonly pool: BufferPool,
  ) {
    channel.allocatePayload = (header) => (this.waiter?.scratch ? this.pool.take(header.payloadBytes) : new Uint8Array(header.payloadBytes));
    this.reader = channel.frames$.subscribe({
      next: (frame) => this.onFrame(frame),
      error: (error: unknown) => failure.fail(error),
      complete: () => failure.fail(new ChannelClosedError('coordinator closed the collective channel')),
    });
    const stopTimer = () => {
      if (this.waiter) clearTimeout(this.waiter.timer);
    };
    failure.failure$.subscribe({ error: stopTimer, complete: stopTimer });
  }

  /**
   * Queues a collective behind earlier ones; resolves with the coordinator's response frame. With
   * `scratch`, a response payload that spans socket chunks is assembled in the pool's memory: the
   * caller must give it back once consumed (and must not hand it out).
   */
  request(fields: CollectiveRequest, parts: readonly Uint8Array[], scratch = false): Promise<Frame> {
    const run = () => this.failure.race(() => this.exchange(fields, parts, scratch));
    const result = this.queue.then(run, run);
    this.queue = result.catch(() => undefined);
    return result;
  }

  close(): void {
    this.reader.unsubscribe();
    if (this.waiter) clearTimeout(this.waiter.timer);
    this.channel.finish();
  }

  private exchange(fields: CollectiveRequest, parts: readonly Uint8Array[], scratch: boolean): Promise<Frame> {
    this.failure.check();
    const sequence = this.sequence;
    if (sequence === MAX_U64) throw new ProtocolError('collective sequence overflow');
    const payloadBytes = parts.reduce((total, part) => total + part.length, 0);
    const header = makeHeader({ ...fields, uniqueId: this.uniqueId, sourceRank: this.rank, worldSize: this.worldSize, sequence }, payloadBytes);
    return new Promise<Frame>((resolve) => {
      const timer = setTimeout(() => {
        this.failure.fail(new TimeoutError(`rank ${this.rank} collective sequence ${sequence} (${opcodeName(fields.opcode)}) response`));
      }, Math.min(this.timeoutMs + COLLECTIVE_RESPONSE_GRACE_MS, MAX_TIMER_DELAY_MS));
      this.waiter = { sequence, opcode: fields.opcode, scratch, resolve, timer };
      this.channel.send({ header, parts });
    }).finally(() => {
      if (this.waiter?.sequence === sequence) {
        clearTimeout(this.waiter.timer);
        this.waiter = null;
      }
    });
  }

  private onFrame(frame: Frame): void {
    try {
      if (frame.header.opcode === Opcode.Abort) throw new RemoteAbortError(frameText(frame));
      const waiter = this.waiter;
      if (waiter === null) {
        throw new ProtocolError(`unexpected ${opcodeName(frame.header.opcode)} frame on rank ${this.rank}'s collective channel`);
      }
      validateResponse(frame, this.uniqueId, this.rank, this.worldSize, waiter.sequence);
      if (frame.header.opcode !== waiter.opcode) {
        throw new ProtocolError(`collective sequence ${waiter.sequence} answered with ${opcodeName(frame.header.opcode)}, expected ${opcodeName(waiter.opcode)}`);
      }
      this.sequence += 1n;
      waiter.resolve(frame);
    } catch (error) {
      this.failure.fail(error);
    }
  }
}
