import { Observable, type OperatorFunction } from 'rxjs';
import type { Frame } from './frame.js';
import { FrameDecoder } from './frame-decoder.js';
import type { FrameHeader } from './header.js';

export interface DecodeFramesOptions {
  /** Where a payload that spans chunks is assembled (see `FrameDecoder`); default fresh memory. */
  readonly allocate?: (header: FrameHeader) => Uint8Array;
  /** Sees each header before its payload is awaited; may refuse it by throwing (see `FrameDecoder`). */
  readonly admit?: (header: FrameHeader) => void;
}

/**
 * Turns a stream of byte chunks (as a TCP socket delivers them, split anywhere) into GX1 frames.
 * Each frame is emitted as soon as it is complete; the first bad header errors the stream with a
 * `ProtocolError`; completing inside a frame is an error too. See `FrameDecoder` for the copy rules.
 */
export function decodeFrames(options: DecodeFramesOptions = {}): OperatorFunction<Uint8Array, Frame> {
  return (source) =>
    new Observable<Frame>((subscriber) => {
      const decoder = new FrameDecoder(options.allocate, options.admit);
      const emit = (frame: Frame) => subscriber.next(frame);
      return source.subscribe({
        next(chunk) {
          try {
            decoder.push(chunk, emit);
          } catch (error) {
            subscriber.error(error);
          }
        },
        error(error) {
          subscriber.error(error);
        },
        complete() {
          try {
            decoder.end();
            subscriber.complete();
          } catch (error) {
            subscriber.error(error);
          }
        },
      });
    });
}
