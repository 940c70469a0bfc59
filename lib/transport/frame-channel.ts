import type { Socket } from 'node:net';
import { Observable, type Subscriber, type Subscription } from 'rxjs';
import { ChannelClosedError, RxcclError } from '../errors.js';
import { decodeFrames } from '../protocol/decode-frames.js';
import type { DirectReads } from './direct-reads.js';
import { FRAME_HEADER_BYTES } from '../protocol/constants.js';
import { encodeHeaderInto, type FrameHeader, validateHeader } from '../protocol/header.js';
import type { Frame } from '../protocol/frame.js';
import { assembleFragments, jumpsFragments, FragmentAssembly, fragments } from './fragments.js';

/** A frame to write: its header and the payload as one or more parts, written back to back. */
export interface OutgoingFrame {
  readonly header: FrameHeader;
  /** Payload parts; their lengths must add up to `header.payloadBytes`. Never concatenated. */
  readonly parts: readonly Uint8Array[];
}

export function outgoing(frame: Frame): OutgoingFrame {
  return { header: frame.header, parts: frame.payload.length > 0 ? [frame.payload] : [] };
}

/** How long a channel that failed to decode stays open for its owner's last word. */
const UNOWNED_LINGER_MS = 5_000;

/** Frames with at most this much payload (or below the socket's high-water mark) are copied into one buffer and written with one call. */
export const SMALL_FRAME_PAYLOAD_BYTES = 16 * 1024;

type Ending = { readonly error: unknown } | { readonly error?: undefined };

/** A socket's incoming bytes until it ends (complete) or fails (error). */
function socketChunks(socket: Socket): Observable<Uint8Array> {
  return new Observable<Uint8Array>((subscriber) => {
    const onData = (chunk: Buffer) => subscriber.next(chunk);
    const onEnd = () => subscriber.complete();
    const onError = (error: Error) => subscriber.error(error);
    socket.on('data', onData).on('end', onEnd).on('error', onError);
    return () => socket.off('data', onData).off('end', onEnd).off('error', onError);
  });
}

/**
 * One TCP connection speaking GX1: incoming bytes become `frames$`, outgoing frames are written as
 * header + payload parts in one corked batch (a single writev, no concatenation).
 *
 * Point-to-point messages travel in fragments (`sendInFragments`, docs/protocol.md 10.7): a large
 * one is written a fragment at a time, each once the socket drained the one before, and a
 * Heartbeat or an Abort sent meanwhile goes out between two fragments; every other frame keeps its
 * place behind the message. Incoming fragments are put back together before `frames$` sees them.
 *
 * `frames$` has one subscriber at a time. The channel keeps one decoder for the whole connection,
 * so a consumer may unsubscribe (say after a handshake frame) and another subscribe later without
 * losing a byte: frames that arrive while nobody listens wait in a backlog and the socket is
 * paused meanwhile, which also pushes back on the sender. The stream completes when the peer ends
 * the connection at a frame boundary and errors on a socket error or a `ProtocolError`.
 */
export class FrameChannel {
  readonly frames$: Observable<Frame>;
  /**
   * Where payloads that span socket chunks are assembled (see `FrameDecoder`); a consumer that
   * knows what comes next may point it at reusable memory.
   */
  allocatePayload: (header: FrameHeader) => Uint8Array = (header) => new Uint8Array(header.payloadBytes);
  /**
   * Sees each incoming header before its payload is awaited; throwing refuses it and ends the
   * stream with that error (a handshake bounds what an unauthenticated peer may declare).
   */
  admitHeader: (header: FrameHeader) => void = () => undefined;
  private readonly reading: Subscription;
  private readonly backlog: Frame[] = [];
  private subscriber: Subscriber<Frame> | null = null;
  private ending: Ending | null = null;
  private discarding = false;
  private draining: Promise<void> | null = null;
  /** Frames waiting to be written in order, the first one (its fragments) being written now. */
  private readonly outbox: OutgoingFrame[] = [];
  /** The fragments of `outbox[0]` still to write. */
  private writing: Iterator<OutgoingFrame> | null = null;
  /** Told once the outbox is empty (a finish, a `drained()`). */
  private outboxEmptied: (() => void)[] = [];
  /** The peer's host:port, kept from while the socket was connected: a destroyed socket no longer says. */
  private peer: string | null;

  /** `reads`: the socket was dialled with its `onread`, so frames are read straight into their payloads. */
  constructor(
    readonly socket: Socket,
    reads: DirectReads | null = null,
  ) {
    socket.setNoDelay(true);
    this.peer = peerAddress(socket);
    if (this.peer === null) socket.once('connect', () => (this.peer = peerAddress(socket)));
    const assembly = new FragmentAssembly();
    const hooks = {
      allocate: (header: FrameHeader) => assembly.target(header) ?? this.allocatePayload(header),
      admit: (header: FrameHeader) => {
        this.admitHeader(header);
        assembly.admit(header);
      },
    };
    const frames = reads === null ? socketChunks(socket).pipe(decodeFrames(hooks)) : reads.frames(socket, hooks);
    this.reading = frames.pipe(assembleFragments(assembly)).subscribe({
      next: (frame) => this.dispatch(frame),
      error: (error: unknown) => {
        if (error instanceof RxcclError) {
          // The stream lost its framing (or a header was refused): read no more (the decoder unsubscribed from the socket),
          // but leave it open so its owner can still say why (an Abort) before closing it; a
          // channel nobody finishes is cut off later.
          this.discarding = true;
          this.backlog.length = 0;
          setTimeout(() => socket.destroy(), UNOWNED_LINGER_MS).unref();
        }
        this.end({ error });
      },
      complete: () => this.end({}),
    });
    // Stays after the decoder let go of the socket: an 'error' nobody listens to kills the process.
    socket.on('error', (error) => this.end({ error }));
    socket.on('close', () => {
      this.end({});
      this.emptyOutbox();
    });
    this.frames$ = new Observable<Frame>((subscriber) => {
      if (this.subscriber !== null) {
        subscriber.error(new ChannelClosedError(`frame channel ${this.describe()} already has a reader`));
        return;
      }
      this.subscriber = subscriber;
      while (this.backlog.length > 0 && this.subscriber === subscriber) subscriber.next(this.backlog.shift()!);
      if (this.subscriber === subscriber) {
        if (this.ending !== null) this.deliverEnding(subscriber);
        else socket.resume();
      }
      return () => {
        if (this.subscriber === subscriber) this.subscriber = null;
      };
    });
  }

  get closed(): boolean {
    return this.ending !== null || this.socket.destroyed;
  }

  /**
   * Writes one frame. Returns false when the socket's buffer is full: the caller should wait for
   * `drained()` before writing more (the frame itself is queued, never dropped). Behind a message
   * being written in fragments it waits its turn, unless it is a Heartbeat or an Abort.
   */
  send(frame: OutgoingFrame): boolean {
    this.checkOpen();
    if (this.outbox.length === 0 || jumpsFragments(frame.header)) return this.write(frame);
    this.enqueue(frame);
    return false;
  }

  /**
   * Writes a point-to-point message (a Send or a Receive response) after the frames waiting, in
   * fragments of `FRAGMENT_BYTES` when it is larger (docs/protocol.md 10.7); a Heartbeat or an
   * Abort at once. Parts are written by reference: they must stay as they are until the peer
   * answered.
   */
  sendInFragments(frame: OutgoingFrame): void {
    this.checkOpen();
    if (jumpsFragments(frame.header)) this.write(frame);
    else this.enqueue(frame);
  }

  private checkOpen(): void {
    if (this.socket.destroyed || this.socket.writableEnded) {
      throw new ChannelClosedError(`cannot send on closed connection ${this.describe()}`);
    }
  }

  private enqueue(frame: OutgoingFrame): void {
    validateHeader(frame.header);
    this.outbox.push(frame);
    if (this.outbox.length === 1) this.pump();
  }

  /** Writes the outbox a fragment at a time: the next fragment only once the socket's buffer drained. */
  private readonly pump = (): void => {
    while (this.outbox.length > 0 && !this.socket.destroyed) {
      if (this.socket.writableNeedDrain) {
        this.socket.once('drain', this.pump);
        return;
      }
      this.writing ??= fragments(this.outbox[0]!);
      const fragment = this.writing.next();
      if (fragment.done === true) {
        this.outbox.shift();
        this.writing = null;
      } else {
        this.write(fragment.value);
      }
    }
    this.emptyOutbox();
  };

  /** Drops what the outbox still holds (the socket closed) and tells who waits for it to empty. */
  private emptyOutbox(): void {
    this.outbox.length = 0;
    this.writing = null;
    for (const emptied of this.outboxEmptied.splice(0)) emptied();
  }

  private whenOutboxEmpty(then: () => void): void {
    if (this.outbox.length === 0) then();
    else this.outboxEmptied.push(then);
  }

  private write(frame: OutgoingFrame): boolean {
    const socket = this.socket;
    let payloadBytes = 0;
    for (const part of frame.parts) payloadBytes += part.length;
    // A frame below the socket's high-water mark is copied too: written by reference, it could
    // still sit in the socket's queue when write() says there is room (Node 22+ marks at 64 KiB),
    // and the caller, told the frame is sent, may reuse its memory. A larger one fills the mark,
    // so write() returns false and the caller waits for `drained()`, when the bytes are out.
    if (payloadBytes <= SMALL_FRAME_PAYLOAD_BYTES || FRAME_HEADER_BYTES + payloadBytes < socket.writableHighWaterMark) {
      // One buffer, one write(2): for a small frame the syscall costs far more than the copy,
      // and a two-buffer writev more than a single write.
      const bytes = Buffer.allocUnsafe(FRAME_HEADER_BYTES + payloadBytes);
      encodeHeaderInto(frame.header, bytes);
      let offset = FRAME_HEADER_BYTES;
      for (const part of frame.parts) {
        bytes.set(part, offset);
        offset += part.length;
      }
      return socket.write(bytes);
    }
    // The header in a slice of Node's shared small-buffer pool: a Uint8Array of its own would be an
    // ArrayBuffer per frame for V8 to track and sweep.
    const head = Buffer.allocUnsafe(FRAME_HEADER_BYTES);
    encodeHeaderInto(frame.header, head);
    socket.cork();
    let writable = socket.write(head);
    for (const part of frame.parts) if (part.length > 0) writable = socket.write(part);
    socket.uncork();
    return writable;
  }

  /**
   * Stops (or restarts) reading from the socket, so a peer that sends faster than its data is
   * consumed fills its own socket buffer instead of this process's memory. Frames already
   * decoded from the last chunk are still delivered.
   */
  setReading(reading: boolean): void {
    if (this.discarding || this.socket.destroyed) return;
    if (reading) this.socket.resume();
    else this.socket.pause();
  }

  /**
   * Resolves once the socket can take more data (at once if it already can). Every writer that
   * waits shares one promise, so many pending sends add one listener, not one each.
   */
  drained(): Promise<void> {
    if (this.outbox.length > 0) return new Promise<void>((resolve) => this.whenOutboxEmpty(resolve)).then(() => this.drained());
    if (!this.socket.writableNeedDrain || this.socket.destroyed) return Promise.resolve();
    this.draining ??= new Promise<void>((resolve) => {
      const done = () => {
        this.socket.off('drain', done);
        this.socket.off('close', done);
        this.draining = null;
        resolve();
      };
      this.socket.on('drain', done);
      this.socket.on('close', done);
    });
    return this.draining;
  }

  /**
   * Ends the connection after queued writes (the outbox's too) are flushed. Nothing more is read:
   * later frames are discarded and the socket keeps flowing so the peer's end is seen and the socket closes (a
   * peer that never closes is cut off after `lingerMs`).
   */
  finish(lingerMs = 2_000): void {
    this.stopReading();
    if (this.socket.destroyed) return;
    this.socket.resume();
    this.whenOutboxEmpty(() => {
      if (!this.socket.destroyed && !this.socket.writableEnded) this.socket.end();
    });
    setTimeout(() => this.socket.destroy(), lingerMs).unref();
  }

  destroy(): void {
    this.socket.destroy();
  }

  /**
   * Stops reading for good and returns the socket, for a reader outside Node (the native data
   * plane) that takes the descriptor from here on. Only a connection both sides have quiesced may
   * be handed over: bytes already read would be lost to the new reader (see `PeerMesh`).
   */
  handOver(): Socket {
    this.stopReading();
    // pause() alone lets Node keep reading into the stream's buffer: stop the handle itself.
    const handle = (this.socket as unknown as { _handle: { readStop(): number; reading: boolean } | null })._handle;
    if (handle !== null) {
      handle.reading = false;
      handle.readStop();
    }
    return this.socket;
  }

  /** The peer's host:port (`[::1]:port` for IPv6), also once the connection closed. */
  describe(): string {
    return this.peer ?? peerAddress(this.socket) ?? '(never connected)';
  }

  /** Decodes nothing more and drops what waits: the channel's frames end here. */
  private stopReading(): void {
    this.discarding = true;
    this.reading.unsubscribe();
    this.backlog.length = 0;
    this.subscriber = null;
  }

  private dispatch(frame: Frame): void {
    if (this.discarding) return;
    if (this.subscriber !== null && this.backlog.length === 0) {
      this.subscriber.next(frame);
      return;
    }
    this.backlog.push(frame);
    this.socket.pause();
  }

  private end(ending: Ending): void {
    if (this.ending !== null) return;
    this.ending = ending;
    const subscriber = this.subscriber;
    if (subscriber !== null && this.backlog.length === 0) this.deliverEnding(subscriber);
  }

  private deliverEnding(subscriber: Subscriber<Frame>): void {
    this.subscriber = null;
    const ending = this.ending!;
    if (ending.error !== undefined) subscriber.error(ending.error);
    else subscriber.complete();
  }
}

/** A connected socket's peer as host:port (`[::1]:port` for IPv6), or null before it connected. */
function peerAddress(socket: Socket): string | null {
  const { remoteAddress, remotePort } = socket;
  if (remoteAddress === undefined || remotePort === undefined) return null;
  return remoteAddress.includes(':') ? `[${remoteAddress}]:${remotePort}` : `${remoteAddress}:${remotePort}`;
}
