import { from as asyncIterableFrom } from 'ix/asynciterable/asynciterablex';
import { defer, lastValueFrom, map, type MonoTypeOperatorFunction, type Observable, repeat, type Subject, tap, throwError } from 'rxjs';
import type { AsyncIterableX } from './ix-types.js';
import { ConfigurationError } from '../errors.js';
import { ANY_COUNT, ANY_RANK, MAX_FRAME_PAYLOAD_BYTES } from '../protocol/constants.js';
import { type DType, dtypeOfElementType, ElementType, elementTypeOfDType } from '../protocol/element-type.js';
import { comesTagged, type Tensor, tensorFromBytes, type TensorOf, viewTensor } from '../tensor.js';
import type { ExpectedShape, Links, MessageEnvelope, SessionLinks } from '../transport/links/links.js';
import type { SessionFailure } from '../transport/session-failure.js';
import { checkRail, checkRank, checkShape, checkTag } from './arguments.js';
import type { EventLoopHold } from './event-loop-hold.js';
import type { SessionEvent } from './events.js';
import { decodeObject, encodeObject } from './object-codec.js';

/** The shape of a point-to-point receive: what the matching send must carry. */
export interface ReceiveShape<D extends DType = DType> {
  readonly dtype: D;
  readonly count: number;
}

/** Which rail a `send` or `receive` uses, where the caller chooses it. */
export interface RailOption {
  /** The P2P rail to use; default `tag % rails`. */
  readonly rail?: number;
}

/** A message waiting for its receive, as `probe` and `iprobe` report it (it stays waiting). */
export interface ProbedMessage {
  /** The sender (a rank of this communicator). */
  readonly source: number;
  /** The tag probed for, as given. */
  readonly tag: number | bigint;
  /** Its element type and count, as the sender sent it (an object message: u8, its size). */
  readonly dtype: DType;
  readonly count: number;
  readonly bytes: number;
}

/** The links point-to-point messages go over; probing is where messages wait at the receiver (the mesh). */
export type MessageLinks = Links & Pick<SessionLinks, 'waiting' | 'probe'>;

/**
 * A session's tagged point-to-point messages: validated, on the rail the tag (or the caller)
 * picks, ended by the session's failure, reported on the session's events. Not ordered with the
 * collectives: they are multiplexed beside them.
 */
export class PointToPoint {
  constructor(
    private readonly links: MessageLinks,
    private readonly failure: SessionFailure,
    private readonly loop: EventLoopHold,
    private readonly events: Subject<SessionEvent>,
  ) {}

  async send(destination: number, tag: number | bigint, data: Tensor, options: RailOption | null): Promise<void> {
    checkRank(destination, this.links.worldSize, 'destination');
    const wireTag = checkTag(tag);
    const view = viewTensor(data);
    const rail = this.rail(wireTag, options);
    const started = performance.now();
    await lastValueFrom(
      defer(() => this.links.send(rail, destination, wireTag, view.bytes, { elementType: view.elementType, count: view.count })).pipe(
        this.failure.untilEnded(),
        this.loop.during(),
        this.reportFailure('send', destination, wireTag, rail),
      ),
      { defaultValue: undefined },
    );
    if (this.events.observed) {
      this.events.next({ type: 'p2p-sent', destination, tag: wireTag, rail, bytes: view.bytes.length, durationMs: performance.now() - started });
    }
  }

  async receive<D extends DType>(source: number | null, tag: number | bigint, like: ReceiveShape<D>, options: RailOption | null): Promise<TensorOf<D>> {
    return lastValueFrom(this.receiveOne$(source, tag, like, options));
  }

  /**
   * Every matching message, one receive after another, until unsubscribed (cold: each
   * subscription receives for itself). One receive is posted at a time, so what waits beyond it
   * waits in the transport's matching (bounded by the unmatched-bytes limit); unsubscribing
   * withdraws the posted receive, and a message that comes later stays for a later receive (on
   * tcp_peer; the coordinator cannot take back a receive it holds, see `Links.receive`).
   */
  receive$<D extends DType>(source: number | null, tag: number | bigint, like: ReceiveShape<D>, options: RailOption | null): Observable<TensorOf<D>> {
    try {
      return this.receiveOne$(source, tag, like, options).pipe(repeat());
    } catch (error) {
      return throwError(() => error);
    }
  }

  /** Sends `value` serialized (`v8.serialize`) as one u8 message; refused before anything is sent if v8 cannot, or it is over a frame. */
  async sendObject(destination: number, tag: number | bigint, value: unknown, options: RailOption | null): Promise<void> {
    checkRank(destination, this.links.worldSize, 'destination');
    checkTag(tag);
    return this.send(destination, tag, encodeObject(value, this.links.rank, MAX_FRAME_PAYLOAD_BYTES, 'sendObject'), options);
  }

  /** The next matching object message's value (a u8 message of any length). */
  async receiveObject(source: number | null, tag: number | bigint, options: RailOption | null): Promise<unknown> {
    const wireTag = checkTag(tag);
    const payload = await lastValueFrom(this.take$(source, tag, { elementType: ElementType.U8, count: null }, options));
    // No refusal notices here (sendObject refuses before sending): the sender is not named, its bytes are only decoded.
    return decodeObject(payload, null, 'receiveObject', wireTag);
  }

  /** The next matching message's envelope once one waits here, left waiting (MPI_Probe). */
  async probe(source: number | null, tag: number | bigint, options: RailOption | null): Promise<ProbedMessage> {
    const { links, wireTag, rail } = this.probing(source, tag, options);
    return lastValueFrom(
      defer(() => links.probe!(rail, source ?? ANY_RANK, wireTag)).pipe(
        map((envelope) => probed(envelope, tag)),
        this.failure.untilEnded(),
        this.loop.during(),
      ),
    );
  }

  /** The envelope of a matching message waiting here now, left waiting; undefined if none is (MPI_Iprobe). */
  iprobe(source: number | null, tag: number | bigint, options: RailOption | null): ProbedMessage | undefined {
    const { links, wireTag, rail } = this.probing(source, tag, options);
    const envelope = links.waiting!(rail, source ?? ANY_RANK, wireTag);
    return envelope === null ? undefined : probed(envelope, tag);
  }

  /** Pull-based receives: each pull posts one, and leaving the loop posts no more. */
  messages<D extends DType>(source: number | null, tag: number | bigint, like: ReceiveShape<D>): AsyncIterableX<TensorOf<D>> {
    if (source !== null) checkRank(source, this.links.worldSize, 'source');
    checkTag(tag);
    checkShape(like);
    const self = this;
    return asyncIterableFrom(
      (async function* () {
        for (;;) yield await self.receive(source, tag, like, {});
      })(),
    );
  }

  /** One receive of a `like`-shaped message, as the caller's tensor. */
  private receiveOne$<D extends DType>(source: number | null, tag: number | bigint, like: ReceiveShape<D>, options: RailOption | null): Observable<TensorOf<D>> {
    const { dtype, count } = checkShape(like);
    // ANY_COUNT is the wire's "any count"; the links take it as null, on either transport.
    return this.take$(source, tag, { elementType: elementTypeOfDType(dtype), count: count === ANY_COUNT ? null : count }, options).pipe(map((payload) => tensorFromBytes(dtype, payload, comesTagged(dtype)) as TensorOf<D>));
  }

  /** One receive's payload (validated now, posted when subscribed), reported on the session's events. */
  private take$(source: number | null, tag: number | bigint, shape: ExpectedShape, options: RailOption | null): Observable<Uint8Array> {
    if (source !== null) checkRank(source, this.links.worldSize, 'source');
    const wireTag = checkTag(tag);
    const rail = this.rail(wireTag, options);
    return defer(() => {
      const started = performance.now();
      return this.links.receive(rail, source ?? ANY_RANK, wireTag, shape).pipe(
        this.failure.untilEnded(),
        this.loop.during(),
        this.reportFailure('receive', source, wireTag, rail),
        tap((payload) => {
          if (this.events.observed) {
            this.events.next({ type: 'p2p-received', source, tag: wireTag, rail, bytes: payload.length, durationMs: performance.now() - started });
          }
        }),
      );
    });
  }

  /** A probe's checked arguments, and links that can probe (refused, named, where they cannot). */
  private probing(source: number | null, tag: number | bigint, options: RailOption | null): { links: MessageLinks; wireTag: bigint; rail: number } {
    if (source !== null) checkRank(source, this.links.worldSize, 'source');
    const wireTag = checkTag(tag);
    const rail = this.rail(wireTag, options);
    if (this.links.waiting === undefined || this.links.probe === undefined) {
      throw new ConfigurationError('probe needs direct peer links (tcp_peer): with tcp_host_staged the coordinator holds the messages that wait for a receive');
    }
    return { links: this.links, wireTag, rail };
  }

  /**
   * A failed send or receive as an event, before the caller sees the error: a rank that exits on
   * it at once (process.exit in a catch) has its flight record written all the same.
   */
  private reportFailure<T>(operation: 'send' | 'receive', peer: number | null, tag: bigint, rail: number): MonoTypeOperatorFunction<T> {
    return tap({ error: (error: unknown) => this.events.observed && this.events.next({ type: 'p2p-failed', operation, peer, tag, rail, error }) });
  }

  private rail(tag: bigint, options: RailOption | null): number {
    const rail = options?.rail;
    return rail === undefined ? Number(tag % BigInt(this.links.rails)) : checkRail(rail, this.links.rails);
  }
}

function probed(envelope: MessageEnvelope, tag: number | bigint): ProbedMessage {
  return { source: envelope.source, tag, dtype: dtypeOfElementType(envelope.elementType), count: envelope.count, bytes: envelope.bytes };
}
