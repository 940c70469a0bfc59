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
    if (this.failure) throw this.failure.error;
    try {
      this.consume(chunk, emit);
    } catch (error) {
      if (error instanceof RxcclError) this.failure = { error };
      throw error;
    }
  }

  /** Throws if the stream ended inside a frame. */
  end(): void {
    if (this.pendingBytes > 0) {
      const expected = this.header ? FRAME_HEADER_BYTES + this.header.payloadBytes : FRAME_HEADER_BYTES;
      throw new ProtocolError(`stream ended inside a frame: ${this.pendingBytes} of ${expected} bytes received`);
    }
  }

  private consume(chunk: Uint8Array, emit: (frame: Frame) => void): void {
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
      }
      if (this.payload === null) {
        // No payload byte has arrived yet: if the whole payload lies in this chunk, hand out a
        // view, even when the header came in earlier chunks (a header-only chunk is common).
        const header = this.header;
        const size = header.payloadBytes;
        if (chunk.length - offset >= size) {
          this.header = null;
          this.deliver({ header, payload: chunk.subarray(offset, offset + size) }, emit);
          offset += size;
          continue;
        }
        if (offset === chunk.length) return;
        this.payload = this.allocate(header);
        if (this.payload.length !== size) throw new RangeError(`payload allocator returned ${this.payload.length} bytes for a ${size}-byte payload`);
        this.payloadFill = 0;
      }
      const payload = this.payload;
      const take = Math.min(payload.length - this.payloadFill, chunk.length - offset);
      payload.set(chunk.subarray(offset, offset + take), this.payloadFill);
      this.payloadFill += take;
      offset += take;
      if (this.payloadFill === payload.length) {
        const header = this.header;
        this.header = null;
        this.payload = null;
        this.payloadFill = 0;
        this.deliver({ header, payload }, emit);
      }
    }
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
