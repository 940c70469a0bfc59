import { ChannelClosedError, RxcclError } from '../errors.js';
import type { FrameChannel } from './frame-channel.js';
import { ClosedBeforeAuthenticationError } from './handshake.js';

/** The first wait before dialling again, doubled after each early close up to the longest. */
const FIRST_RETRY_MS = 50;
const LONGEST_RETRY_MS = 1_000;

export interface DialAuthenticatedOptions {
  /** Who is dialled, for messages: `coordinator 10.0.0.1:29500`, `direct peer rank 0`. */
  readonly listener: string;
  readonly rank: number;
  /** Wall-clock time (`Date.now()`) by which the connection must be authenticated. */
  readonly deadline: number;
  /**
   * Opens one connection within `timeoutMs` (TCP, and TLS when configured). `redial`: after an
   * early close, when a refused connection means the listener is gone (not yet started).
   */
  readonly connect: (timeoutMs: number, redial: boolean) => Promise<FrameChannel>;
  /** Authenticates over the channel within `timeoutMs` (dialHandshake). */
  readonly authenticate: (channel: FrameChannel, timeoutMs: number) => Promise<void>;
  /**
   * After the first connection closed before authenticating: why, where that is something else
   * than a saturated listener (a TLS listener met without TLS), thrown at once; null dials again.
   */
  readonly explainEarlyClose?: () => Promise<Error | null>;
}

/**
 * Dials and authenticates, dialling again with backoff while the listener closes the connection
 * before the handshake is done: what a listener saturated by connections that never authenticate
 * does to its older ones (admission.ts). Past the deadline it fails with TIMEOUT saying so; any
 * other failure is thrown at once.
 */
export async function dialAuthenticated(options: DialAuthenticatedOptions): Promise<FrameChannel> {
  const started = Date.now();
  let closedEarly = 0;
  let wait = FIRST_RETRY_MS;
  for (;;) {
    const channel = await options.connect(options.deadline - Date.now(), closedEarly > 0).catch((error: unknown) => {
      if (closedEarly > 0 && causeCode(error) === 'ECONNREFUSED') {
        throw new ChannelClosedError(`${options.listener} closed rank ${options.rank}'s connection before authenticating it, then refused the next: it stopped listening`);
      }
      if (causeCode(error) !== 'ECONNRESET') throw error;
      return null;
    });
    if (channel !== null) {
      try {
        await options.authenticate(channel, options.deadline - Date.now());
        return channel;
      } catch (error) {
        channel.destroy();
        if (!(error instanceof ClosedBeforeAuthenticationError)) throw error;
      }
    }
    closedEarly += 1;
    const explained = closedEarly === 1 && options.explainEarlyClose !== undefined ? await options.explainEarlyClose() : null;
    if (explained !== null) throw explained;
    const timedOut = () =>
      new RxcclError(
        'TIMEOUT',
        `rank ${options.rank} connecting to ${options.listener} timed out after ${Date.now() - started} ms: it closed ${closedEarly} connections before authenticating them, ` +
          'so its listener is most likely saturated by connections that never authenticate (a flood or a scan); see docs/errors.md',
      );
    // Jittered, so ranks turned away together do not come back together. A pause that reaches
    // the deadline is the last: the rank waits until then (not giving up early), then fails (a
    // timer may fire a moment early, so this is decided before, not by the clock after).
    const left = options.deadline - Date.now();
    const pause = wait * (0.5 + Math.random());
    if (pause >= left) {
      if (left > 0) await new Promise((resolve) => setTimeout(resolve, left));
      throw timedOut();
    }
    await new Promise((resolve) => setTimeout(resolve, pause));
    wait = Math.min(wait * 2, LONGEST_RETRY_MS);
  }
}

/** The system error under a dial's failure: ECONNRESET for a TLS dial closed before its handshake finished. */
function causeCode(error: unknown): string | undefined {
  const cause = error instanceof RxcclError ? error.cause : error;
  return (cause as NodeJS.ErrnoException | undefined)?.code;
}
