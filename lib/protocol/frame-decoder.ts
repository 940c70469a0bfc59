import { ProtocolError, RxcclError } from '../errors.js';
import { FRAME_HEADER_BYTES } from './constants.js';
import { validateFrame, type Frame } from './frame.js';
import { checkMagic, checkVersion, decodeHeader, type FrameHeader } from './header.js';

const EMPTY = new Uint8Array(0);

/**
 * Incremental GX1 decoder: feed it chunks in arrival order, it hands out each frame as soon as
 * the last byte of it arrives.
 *
 * - A payload that lies inside one chunk is handed out as a view of that chunk (no copy); one
 *   that spans chunks is copied once into a buffer of exactly the declared size.
 * - A header is validated completely (checksum included) before any payload byte is awaited,
 *   and a wrong magic or version is refused as soon as those bytes arrive, so a stray
 *   connection is told off at once and nothing beyond MAX_FRAME_PAYLOAD_BYTES is ever allocated.
 * - Chunks must not be modified after they were pushed: frames may be views of them.
 * - After a ProtocolError the decoder is poisoned: the stream has lost its framing.
 * - `allocate` chooses where a spanning payload is assembled (default: a fresh buffer), so a
 *   consumer that knows what is coming can supply reusable memory. It is called only after the
 *   header was validated, with its declared size, and must return exactly that many bytes.
 * - `admit` sees each validated header before anything else happens with it (before its payload
 *   is awaited): an error it throws poisons the decoder like a ProtocolError, so a connection can
 *   refuse what it does not accept yet (a large payload before authentication) at the header.
 * - For a reader that reuses its memory (`DirectReads`), `pushReused` keeps no view of its chunk
 *   (every payload goes to `allocate`), and once a payload has begun, `payloadTarget` is the rest
 *   of its buffer: bytes read straight into it are announced with `payloadWritten`, never copied.
 */
export class FrameDecoder {
  constructor(
    private readonly allocate: (header: FrameHeader) => Uint8Array = (header) => new Uint8Array(header.payloadBytes),
    private readonly admit: (header: FrameHeader) => void = () => undefined,
  ) {}

  private readonly headerBytes = new Uint8Array(FRAME_HEADER_BYTES);
  private headerFill = 0;
  private header: FrameHeader | null = null;
  private payload: Uint8Array | null = null;
  private payloadFill = 0;
  private failure: { readonly error: unknown } | null = null;

  /** Bytes of an incomplete frame held so far (0 at a frame boundary). */
  get pendingBytes(): number {
    return this.header ? FRAME_HEADER_BYTES + this.payloadFill : this.headerFill;
  }

  push(chunk: Uint8Array, emit: (frame: Frame) => void): void {
    this.guarded(() => this.consume(chunk, emit, true));
  }

  /** Like `push`, but `chunk` may be overwritten once this returns: no frame is a view of it. */
  pushReused(chunk: Uint8Array, emit: (frame: Frame) => void): void {
    this.guarded(() => this.consume(chunk, emit, false));
  }

  /** The unwritten rest of the payload being received, or null between payloads. */
  payloadTarget(): Uint8Array | null {
    return this.payload === null ? null : this.payload.subarray(this.payloadFill);
  }

  /** `bytes` bytes were written straight into `payloadTarget()`; emits the frame once it is whole. */
  payloadWritten(bytes: number, emit: (frame: Frame) => void): void {
    this.guarded(() => {
      const payload = this.payload;
      if (payload === null || bytes > payload.length - this.payloadFill) throw new RangeError(`${bytes} bytes written past the payload being received`);
      this.payloadFill += bytes;
      if (this.payloadFill === payload.length) this.completePayload(emit);
    });
  }

  /** Throws if the stream ended inside a frame. */
  end(): void {
    if (this.pendingBytes > 0) {
      const expected = this.header ? FRAME_HEADER_BYTES + this.header.payloadBytes : FRAME_HEADER_BYTES;
      throw new ProtocolError(`stream ended inside a frame: ${this.pendingBytes} of ${expected} bytes received`);
    }
  }

  private guarded(step: () => void): void {
    if (this.failure) throw this.failure.error;
    try {
      step();
    } catch (error) {
      if (error instanceof RxcclError) this.failure = { error };
      throw error;
    }
  }

  private consume(chunk: Uint8Array, emit: (frame: Frame) => void, views: boolean): void {
    let offset = 0;
    while (offset < chunk.length) {
      if (this.header === null) {
        let header: FrameHeader;
        if (this.headerFill === 0 && chunk.length - offset >= FRAME_HEADER_BYTES) {
          header = decodeHeader(chunk, offset);
          offset += FRAME_HEADER_BYTES;
        } else {
          const take = Math.min(FRAME_HEADER_BYTES - this.headerFill, chunk.length - offset);
          this.headerBytes.set(chunk.subarray(offset, offset + take), this.headerFill);
          this.headerFill += take;
          offset += take;
          this.checkPrefix();
          if (this.headerFill < FRAME_HEADER_BYTES) return;
          this.headerFill = 0;
          header = decodeHeader(this.headerBytes);
        }
        this.admit(header);
        if (header.payloadBytes === 0) {
          this.deliver({ header, payload: EMPTY }, emit);
          continue;
        }
        this.header = header;
        // Reading straight into the payload (`payloadTarget`) needs its buffer as soon as the header is known.
        if (!views) this.startPayload(header);
      }
      if (this.payload === null) {
        // No payload byte has arrived yet: if the whole payload lies in this chunk, hand out a
        // view, even when the header came in earlier chunks (a header-only chunk is common).
        const header = this.header;
        if (chunk.length - offset >= header.payloadBytes) {
          this.header = null;
          this.deliver({ header, payload: chunk.subarray(offset, offset + header.payloadBytes) }, emit);
          offset += header.payloadBytes;
          continue;
        }
        if (offset === chunk.length) return;
        this.startPayload(header);
      }
      const payload = this.payload!;
      const take = Math.min(payload.length - this.payloadFill, chunk.length - offset);
      payload.set(chunk.subarray(offset, offset + take), this.payloadFill);
      this.payloadFill += take;
      offset += take;
      if (this.payloadFill === payload.length) this.completePayload(emit);
    }
  }

  private startPayload(header: FrameHeader): void {
    const payload = this.allocate(header);
    if (payload.length !== header.payloadBytes) throw new RangeError(`payload allocator returned ${payload.length} bytes for a ${header.payloadBytes}-byte payload`);
    this.payload = payload;
    this.payloadFill = 0;
  }

  private completePayload(emit: (frame: Frame) => void): void {
    const header = this.header!;
    const payload = this.payload!;
    this.header = null;
    this.payload = null;
    this.payloadFill = 0;
    this.deliver({ header, payload }, emit);
  }

  /** Refuses a foreign byte stream from its first bytes instead of waiting for a whole header. */
  private checkPrefix(): void {
    const bytes = this.headerBytes;
    checkMagic(bytes, 0, this.headerFill);
    if (this.headerFill >= 6) checkVersion(bytes[4]! | (bytes[5]! << 8));
  }

  private deliver(frame: Frame, emit: (frame: Frame) => void): void {
    validateFrame(frame);
    emit(frame);
  }
}
