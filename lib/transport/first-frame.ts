import { asyncScheduler, EmptyError, firstValueFrom, type SchedulerLike, throwError, timeout } from 'rxjs';
import { RemoteAbortError } from '../errors.js';
import { abortReason } from '../protocol/control-frames.js';
import type { Frame } from '../protocol/frame.js';
import { Opcode } from '../protocol/opcode.js';
import type { FrameChannel } from './frame-channel.js';
import { MAX_TIMER_DELAY_MS } from './transport-kind.js';

export interface FirstFrameOptions {
  readonly timeoutMs: number;
  /** The error when nothing came in time. */
  readonly timedOut: () => Error;
  /** The error when the channel closed first. */
  readonly closed: () => Error;
  readonly scheduler?: SchedulerLike;
}

/**
 * The next frame of a handshake (READY, the endpoint table): an Abort in its place rejects with
 * the Abort's reason. The channel keeps every later frame for its next reader.
 */
export async function firstFrame(channel: FrameChannel, options: FirstFrameOptions): Promise<Frame> {
  const frame = await firstValueFrom(
    channel.frames$.pipe(
      timeout({ first: Math.max(1, Math.min(options.timeoutMs, MAX_TIMER_DELAY_MS)), scheduler: options.scheduler ?? asyncScheduler, with: () => throwError(options.timedOut) }),
    ),
  ).catch((error: unknown) => {
    throw error instanceof EmptyError ? options.closed() : error;
  });
  if (frame.header.opcode === Opcode.Abort) throw new RemoteAbortError(abortReason(frame));
  return frame;
}
