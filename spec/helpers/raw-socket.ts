/**
 * Raw TCP clients for talking to a coordinator as a stranger would: bytes in, bytes out, and the
 * frames the coordinator answered with, decoded by `decodeFrames()`.
 */
import { connect, type Socket } from 'node:net';
import { from } from 'rxjs';
import { FLAG_P2P_CHANNEL, FRAME_HEADER_BYTES, HEADER_CHECKSUM_OFFSET } from '../../lib/protocol/constants.js';
import { crc32c } from '../../lib/protocol/crc32c.js';
import { decodeFrames } from '../../lib/protocol/decode-frames.js';
import { FrameDecoder } from '../../lib/protocol/frame-decoder.js';
import { type Frame, frameText, makeHeader } from '../../lib/protocol/frame.js';
import { encodeHeader } from '../../lib/protocol/header.js';
import { Opcode } from '../../lib/protocol/opcode.js';
import type { UniqueId } from '../../lib/protocol/unique-id.js';

export interface RawOutcome {
  /** The frames the peer sent, decoded. */
  readonly frames: Frame[];
  /** A decoding error of what the peer sent (it must never send a broken frame). */
  readonly decodeError: unknown;
  /** True when the peer closed the connection; false when `closeWithinMs` ran out first. */
  readonly dropped: boolean;
}

export interface RawConnection {
  readonly socket: Socket;
  /** Resolves once the connection is connected. */
  readonly connected: Promise<void>;
  /** Resolves when the peer closes the connection, or after `closeWithinMs` (then destroys it). */
  readonly outcome: Promise<RawOutcome>;
  /** Resolves when the first frame has arrived in full (or the connection closed without one). */
  readonly firstFrame: Promise<Frame | null>;
}

/** Opens a raw connection to `port` on loopback and records all it receives. */
export function rawConnection(port: number, closeWithinMs = 5_000): RawConnection {
  const socket = connect({ host: '127.0.0.1', port });
  const chunks: Uint8Array[] = [];
  // Incremental decoding, only to announce the first frame as soon as it is complete.
  const incremental = new FrameDecoder();
  let announce: (frame: Frame | null) => void = () => undefined;
  const firstFrame = new Promise<Frame | null>((resolve) => (announce = resolve));
  const connected = new Promise<void>((resolve, reject) => {
    socket.once('connect', () => resolve());
    socket.once('error', reject);
  });
  connected.catch(() => undefined);
  socket.on('error', () => undefined);
  socket.on('data', (chunk: Buffer) => {
    const bytes = new Uint8Array(chunk);
    chunks.push(bytes);
    try {
      incremental.push(bytes, (frame) => announce(frame));
    } catch {
      // Reported by the full decode below.
    }
  });
  const outcome = new Promise<RawOutcome>((resolve) => {
    const finish = (dropped: boolean) => {
      void decodeAll(chunks).then(({ frames, error }) => {
        announce(frames[0] ?? null);
        resolve({ frames, decodeError: error, dropped });
      });
    };
    const timer = setTimeout(() => {
      socket.removeAllListeners('close');
      socket.destroy();
      finish(false);
    }, closeWithinMs);
    socket.once('close', () => {
      clearTimeout(timer);
      finish(true);
    });
  });
  return { socket, connected, outcome, firstFrame };
}

/** Decodes everything received with the public `decodeFrames()` operator. */
async function decodeAll(chunks: readonly Uint8Array[]): Promise<{ frames: Frame[]; error: unknown }> {
  const frames: Frame[] = [];
  return new Promise((resolve) => {
    from(chunks)
      .pipe(decodeFrames())
      .subscribe({
        next: (frame) => frames.push(frame),
        error: (error: unknown) => resolve({ frames, error }),
        complete: () => resolve({ frames, error: null }),
      });
  });
}

/** The bytes of a JOIN frame (a valid header with no payload). */
export function joinBytes(options: { uniqueId: UniqueId; rank: number; worldSize: number; rail?: number }): Uint8Array {
  const p2p = options.rail !== undefined;
  return encodeHeader(
    makeHeader(
      {
        uniqueId: options.uniqueId,
        opcode: Opcode.Join,
        sourceRank: options.rank,
        worldSize: options.worldSize,
        flags: p2p ? FLAG_P2P_CHANNEL : 0,
        tag: BigInt(options.rail ?? 0),
      },
      0,
    ),
  );
}

/** A JOIN header rewritten to declare `payloadBytes` (checksum recomputed, so only that field is wrong). */
export function headerDeclaring(join: Uint8Array, payloadBytes: bigint, elementType = 1, elementCount = payloadBytes): Uint8Array {
  const bytes = Uint8Array.from(join);
  const view = new DataView(bytes.buffer);
  view.setUint8(9, elementType);
  view.setUint16(12, view.getUint16(12, true) | 0x0001, true);
  view.setBigUint64(64, elementCount, true);
  view.setBigUint64(72, payloadBytes, true);
  view.setUint32(HEADER_CHECKSUM_OFFSET, crc32c(bytes, 0, HEADER_CHECKSUM_OFFSET), true);
  if (bytes.length !== FRAME_HEADER_BYTES) throw new Error('not a header');
  return bytes;
}

/** The text of the Abort frame among `frames`, or null. */
export function abortText(frames: readonly Frame[]): string | null {
  const abort = frames.find((frame) => frame.header.opcode === Opcode.Abort);
  return abort === undefined ? null : frameText(abort);
}
