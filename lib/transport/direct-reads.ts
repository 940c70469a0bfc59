import type { Socket } from 'node:net';
import { Observable, type Subscriber } from 'rxjs';
import type { DecodeFramesOptions } from '../protocol/decode-frames.js';
import type { Frame } from '../protocol/frame.js';
import { FrameDecoder } from '../protocol/frame-decoder.js';

/** Between payloads the socket is read into one reused buffer of this size. */
export const STAGING_BYTES = 64 * 1024;

/** The `onread` option of `net.connect` / `tls.connect`. */
export interface OnReadOption {
  readonly buffer: () => Uint8Array;
  readonly callback: (bytes: number, buffer: Uint8Array) => boolean;
}

/**
 * Reads a socket with Node's `onread` option, so the kernel copies incoming bytes into memory this
 * side chooses: between frames, one reused staging buffer (headers and small payloads are copied
 * out of it); once a payload has begun, the rest of that payload's own buffer (the destination a
 * receive named, or pooled memory), so a large payload is written once, by the kernel, and never
 * copied again. The default stream path instead allocates a fresh 64 KiB chunk per read and copies
 * it into the payload, which on loopback costs as much as the transfer and feeds the garbage
 * collector.
 *
 * Node 20 honours `onread` only on sockets a process opened itself, not on those its server
 * accepted: pass `onread` to the dial, then read the socket's frames with `frames`.
 *
 * Until `frames` is subscribed (the channel is built once the dial resolved), the first bytes wait
 * in the staging buffer and reading stops, so nothing is decoded before its hooks are in place.
 */
export class DirectReads {
  readonly onread: OnReadOption;
  private readonly staging = new Uint8Array(STAGING_BYTES);
  /** Staged bytes read before anyone subscribed. */
  private held = 0;
  /** Set while subscribed; null before (bytes are held) and after (bytes are dropped). */
  private decoder: FrameDecoder | null = null;
  private done = false;
  private subscriber: Subscriber<Frame> | null = null;
  private readonly emit = (frame: Frame) => this.subscriber?.next(frame);

  constructor() {
    this.onread = { buffer: () => this.nextBuffer(), callback: (bytes, buffer) => this.onRead(bytes, buffer) };
  }

  /** The frames of `socket` (dialled with this `onread`), decoded with `hooks`; one subscriber, once. */
  frames(socket: Socket, hooks: DecodeFramesOptions): Observable<Frame> {
    return new Observable<Frame>((subscriber) => {
      if (this.done || this.subscriber !== null) throw new Error('DirectReads frames are read once');
      const decoder = new FrameDecoder(hooks.allocate, hooks.admit);
      this.decoder = decoder;
      this.subscriber = subscriber;
      const onEnd = () => {
        try {
          decoder.end();
          subscriber.complete();
        } catch (error) {
          subscriber.error(error);
        }
      };
      const onError = (error: Error) => subscriber.error(error);
      socket.on('end', onEnd).on('error', onError);
      if (this.held > 0) {
        const held = this.held;
        this.held = 0;
        this.decode(this.staging.subarray(0, held));
      }
      if (!subscriber.closed) socket.resume();
      return () => {
        socket.off('end', onEnd).off('error', onError);
        this.subscriber = null;
        this.decoder = null;
        this.done = true;
      };
    });
  }

  /**
   * Where the next read goes: the rest of the payload being received, else the staging buffer.
   * Before anyone reads, the buffer offered last is also the first one after `frames` resumes the
   * socket (Node asks again only after a read): it keeps the staging buffer's last byte free, so
   * it is never empty (an empty read buffer fails the socket with ENOBUFS).
   */
  private nextBuffer(): Uint8Array {
    if (this.decoder !== null) return this.decoder.payloadTarget() ?? this.staging;
    if (this.done) return this.staging;
    return this.staging.subarray(Math.min(this.held, STAGING_BYTES - 1), this.held < STAGING_BYTES - 1 ? STAGING_BYTES - 1 : STAGING_BYTES);
  }

  private onRead(bytes: number, buffer: Uint8Array): boolean {
    const decoder = this.decoder;
    if (decoder === null) {
      // After the reader left, bytes are dropped (so the peer's end is still seen); before it
      // came, they are kept and reading stops until it does.
      if (this.done) return true;
      this.held += bytes;
      return false;
    }
    if (buffer.buffer === this.staging.buffer) this.decode(buffer.subarray(0, bytes));
    else this.step(() => decoder.payloadWritten(bytes, this.emit));
    return true;
  }

  private decode(chunk: Uint8Array): void {
    const decoder = this.decoder!;
    this.step(() => decoder.pushReused(chunk, this.emit));
  }

  /** A decoding error ends the stream (its teardown drops later bytes). */
  private step(run: () => void): void {
    try {
      run();
    } catch (error) {
      this.subscriber?.error(error);
    }
  }
}
