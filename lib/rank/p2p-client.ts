import type { Subscription } from 'rxjs';
import { ChannelClosedError, ProtocolError, RemoteAbortError, TimeoutError } from '../errors.js';
import { ANY_RANK, MAX_U64 } from '../protocol/constants.js';
import { ElementType } from '../protocol/element-type.js';
import { frameText, makeHeader, type Frame } from '../protocol/frame.js';
import { Opcode, opcodeName } from '../protocol/opcode.js';
import type { UniqueId } from '../protocol/unique-id.js';
import type { FrameChannel } from '../transport/frame-channel.js';
import { MAX_TIMER_DELAY_MS } from '../transport/transport-kind.js';
import type { SessionFailure } from './session-failure.js';

export interface P2pRequest {
  readonly opcode: Opcode.Send | Opcode.Receive | Opcode.Heartbeat;
  /** Destination of a Send, source of a Receive (ANY_RANK for any), ANY_RANK for Heartbeat. */
  readonly peer: number;
  readonly tag: bigint;
  readonly elementType: ElementType;
  readonly elementCount: number;
  readonly payload?: Uint8Array;
  readonly timeoutMs: number;
}

interface Pending {
  readonly resolve: (frame: Frame) => void;
  readonly timer: NodeJS.Timeout;
}

/**
 * One P2P rail of a rank (the reference design's `P2pClient`): requests are multiplexed, each
 * opcode numbering its own sequence, and responses are matched back by (opcode, sequence), so many
 * receives on different tags can be in flight at once. A request that times out fails the session,
 * as its posted receive can no longer be withdrawn from the coordinator.
 */
export class P2pClient {
  private readonly sequences = new Map<Opcode, bigint>();
  private readonly pending = new Map<string, Pending>();
  private readonly reader: Subscription;
  private closing = false;

  constructor(
    private readonly channel: FrameChannel,
    private readonly uniqueId: UniqueId,
    private readonly rank: number,
    private readonly worldSize: number,
    readonly rail: number,
    private readonly failure: SessionFailure,
  ) {
    this.reader = channel.frames$.subscribe({
      next: (frame) => this.onFrame(frame),
      error: (error: unknown) => this.onEnd(error),
      complete: () => this.onEnd(new ChannelClosedError(`point-to-point coordinator closed rail ${rail}`)),
    });
    failure.failure$.subscribe({ error: () => this.clearTimers() });
  }

  request(request: P2pRequest): Promise<Frame> {
    return this.failure.race(() => this.post(request));
  }

  private post(request: P2pRequest): Promise<Frame> {
    return new Promise<Frame>((resolve) => {
      const sequence = this.nextSequence(request.opcode);
      const key = `${request.opcode}:${sequence}`;
      const timer = setTimeout(() => {
        this.pending.delete(key);
        this.failure.fail(new TimeoutError(`point-to-point ${opcodeName(request.opcode)} with tag ${request.tag} on rail ${this.rail}`));
      }, Math.min(request.timeoutMs, MAX_TIMER_DELAY_MS));
      this.pending.set(key, { resolve, timer });
      const payload = request.payload ?? new Uint8Array(0);
      const header = makeHeader(
        {
          uniqueId: this.uniqueId,
          opcode: request.opcode,
          elementType: request.elementType,
          sourceRank: this.rank,
          destinationRank: request.peer,
          worldSize: this.worldSize,
          sequence,
          tag: request.tag,
          elementCount: request.elementCount,
        },
        payload.length,
      );
      this.channel.send({ header, parts: [payload] });
    });
  }

  /** Tells the coordinator this rank abandons the session (interrupts every rank's pending work). */
  abort(message: string): void {
    const payload = new Uint8Array(Buffer.from(message, 'utf8'));
    this.sendControl(Opcode.Abort, ElementType.U8, payload, this.nextSequence(Opcode.Send));
  }

  /** Says goodbye (LEAVE) and closes the rail. */
  close(): void {
    this.closing = true;
    if (!this.channel.closed) {
      try {
        this.sendControl(Opcode.Leave, ElementType.None, new Uint8Array(0), 0n);
      } catch {
        // Already closed by the peer: nothing to say goodbye to.
      }
    }
    this.reader.unsubscribe();
    this.clearTimers();
    this.channel.finish();
  }

  private sendControl(opcode: Opcode, elementType: ElementType, payload: Uint8Array, sequence: bigint): void {
    const header = makeHeader(
      { uniqueId: this.uniqueId, opcode, elementType, sourceRank: this.rank, worldSize: this.worldSize, sequence, elementCount: payload.length },
      payload.length,
    );
    this.channel.send({ header, parts: [payload] });
  }

  private nextSequence(opcode: Opcode): bigint {
    const sequence = this.sequences.get(opcode) ?? 0n;
    if (sequence === MAX_U64) throw new ProtocolError(`point-to-point ${opcodeName(opcode)} sequence overflow on rail ${this.rail}`);
    this.sequences.set(opcode, sequence + 1n);
    return sequence;
  }

  private onFrame(frame: Frame): void {
    const h = frame.header;
    if (!h.uniqueId.equals(this.uniqueId) || h.worldSize !== this.worldSize || (h.destinationRank !== this.rank && h.destinationRank !== ANY_RANK)) {
      this.failure.fail(new ProtocolError(`invalid point-to-point response envelope on rail ${this.rail}`));
      return;
    }
    if (h.opcode === Opcode.Abort) {
      this.failure.fail(new RemoteAbortError(frameText(frame)));
      return;
    }
    if (h.opcode !== Opcode.Send && h.opcode !== Opcode.Receive && h.opcode !== Opcode.Heartbeat) {
      this.failure.fail(new ProtocolError(`unexpected ${opcodeName(h.opcode)} response on point-to-point rail ${this.rail}`));
      return;
    }
    const key = `${h.opcode}:${h.sequence}`;
    const pending = this.pending.get(key);
    if (pending === undefined) return;
    this.pending.delete(key);
    clearTimeout(pending.timer);
    pending.resolve(frame);
  }

  private onEnd(error: unknown): void {
    if (!this.closing) this.failure.fail(error);
  }

  private clearTimers(): void {
    for (const pending of this.pending.values()) clearTimeout(pending.timer);
    this.pending.clear();
  }
}
