import { firstValueFrom, type SchedulerLike, take, timeout } from 'rxjs';
import { AuthenticationError, ChannelClosedError, RemoteAbortError, TimeoutError } from '../errors.js';
import {
  acceptorMac,
  AUTH_MAC_BYTES,
  AUTH_NONCE_BYTES,
  AUTH_SCHEME,
  authAcceptFrame,
  authChallengeFrame,
  type AuthClaim,
  authContext,
  authResponseFrame,
  claimOf,
  dialerMac,
  MAX_HANDSHAKE_PAYLOAD_BYTES,
  macMatches,
  newNonce,
} from '../protocol/auth.js';
import { FLAG_P2P_CHANNEL } from '../protocol/constants.js';
import type { Frame } from '../protocol/frame.js';
import type { FrameHeader } from '../protocol/header.js';
import { Opcode, opcodeName } from '../protocol/opcode.js';
import { firstFrame } from './first-frame.js';
import { type FrameChannel, outgoing } from './frame-channel.js';
import type { JobSecret } from './job-secret.js';
import { MAX_TIMER_DELAY_MS } from './transport-kind.js';

/**
 * The first frames of every connection, on both sides (docs/protocol.md 8.4): with a secret, the
 * accepting side challenges and the dialer proves itself before it says who it is; then, or at
 * once without a secret, the dialer's JOIN or PeerHello. Until then the accepting side admits at
 * most one header-sized handshake frame: a header declaring more is refused before its payload.
 */

/** How long a new connection may take over its handshake before it is dropped (every listener). */
export const DEFAULT_HANDSHAKE_TIMEOUT_MS = 10_000;
/**
 * Connections one listener holds before they authenticate, at once; past it a newcomer evicts an
 * older one (admission.ts). Each holds at most a header and an AuthResponse (160 bytes) and lives
 * at most its handshake timeout.
 */
export const MAX_UNAUTHENTICATED_CONNECTIONS = 1_024;

export interface AcceptHandshakeOptions {
  readonly secret: JobSecret | null;
  /** From acceptance to the first frame after authentication. */
  readonly timeoutMs: number;
  readonly scheduler: SchedulerLike;
  /** Checks the header of the frame the dialer opens with (JOIN, PeerHello): throws to refuse. */
  readonly openingRule: (header: FrameHeader) => void;
}

/**
 * The accepting side: authenticates the dialer when there is a secret and returns its opening
 * frame (JOIN, PeerHello), which must claim what it authenticated as. Rejects with the raw cause:
 * EmptyError (closed), rxjs' TimeoutError, a ProtocolError of the stream, or the refusal.
 */
export async function acceptHandshake(channel: FrameChannel, options: AcceptHandshakeOptions): Promise<Frame> {
  const { secret, scheduler } = options;
  const deadline = scheduler.now() + options.timeoutMs;
  const next = () =>
    firstValueFrom(channel.frames$.pipe(take(1), timeout({ first: Math.max(1, Math.min(deadline - scheduler.now(), MAX_TIMER_DELAY_MS)), scheduler })));
  try {
    if (secret === null) {
      channel.admitHeader = options.openingRule;
      return await next();
    }
    const challenge = newNonce();
    channel.admitHeader = authResponseRule;
    channel.send(outgoing(authChallengeFrame(challenge)));
    const response = await next();
    const claim = claimOf(response.header);
    const mac = response.payload.subarray(0, AUTH_MAC_BYTES);
    const nonce = response.payload.slice(AUTH_MAC_BYTES);
    if (!macMatches(mac, dialerMac(secret, challenge, nonce, claim))) {
      throw new AuthenticationError(`authentication failed: the dialer of ${authContext(claim)} does not know the job's secret`);
    }
    channel.admitHeader = options.openingRule;
    channel.send(outgoing(authAcceptFrame(acceptorMac(secret, challenge, nonce, claim))));
    const opening = await next();
    if (!sameClaim(response.header, opening.header)) {
      throw new AuthenticationError(`connection authenticated as ${authContext(claim)} but opened as ${authContext(claimOf(opening.header))}`);
    }
    return opening;
  } finally {
    channel.admitHeader = () => undefined;
  }
}

/** Before authentication only an AuthResponse is admitted, refused at its header otherwise. */
function authResponseRule(header: FrameHeader): void {
  if (header.opcode !== Opcode.AuthResponse || header.payloadBytes !== MAX_HANDSHAKE_PAYLOAD_BYTES) {
    throw new AuthenticationError(
      `authentication required: this job has a secret, and the connection opened with ${opcodeName(header.opcode)} declaring ${header.payloadBytes} payload bytes ` +
        `instead of an AuthResponse of ${MAX_HANDSHAKE_PAYLOAD_BYTES}`,
    );
  }
}

function sameClaim(response: FrameHeader, opening: FrameHeader): boolean {
  return (
    response.sourceRank === opening.sourceRank &&
    response.destinationRank === opening.destinationRank &&
    response.tag === opening.tag &&
    (response.flags & FLAG_P2P_CHANNEL) === (opening.flags & FLAG_P2P_CHANNEL) &&
    response.worldSize === opening.worldSize
  );
}

/**
 * The acceptor closed the connection, without a word, before the dialer authenticated: what a
 * listener saturated by unauthenticated connections does to its oldest (admission.ts); the
 * dialer dials again (dial-authenticated.ts).
 */
export class ClosedBeforeAuthenticationError extends ChannelClosedError {}

export interface DialHandshakeOptions {
  readonly secret: JobSecret | null;
  readonly claim: AuthClaim;
  readonly timeoutMs: number;
  readonly scheduler?: SchedulerLike;
  /** Who was dialled, for messages: `coordinator 10.0.0.1:29500`, `direct peer rank 0`. */
  readonly acceptor: string;
}

/**
 * The dialing side: with a secret, answers the challenge and checks the acceptor's proof before
 * the caller sends its JOIN or PeerHello (so the unique id only ever goes to a side that knows
 * the secret). Without one there is nothing to do.
 */
export async function dialHandshake(channel: FrameChannel, options: DialHandshakeOptions): Promise<void> {
  const { secret, claim, acceptor } = options;
  if (secret === null) return;
  const deadline = Date.now() + options.timeoutMs;
  const read = (what: string) =>
    firstFrame(channel, {
      timeoutMs: deadline - Date.now(),
      ...(options.scheduler ? { scheduler: options.scheduler } : {}),
      timedOut: () => new TimeoutError(`rank ${claim.rank} waiting for the ${what} of ${acceptor}`),
      closed: () => new ClosedBeforeAuthenticationError(`${acceptor} closed the connection before its ${what}`),
    });
  const challenge = await read('authentication challenge').catch((error: unknown) => {
    // Refused before any challenge: most likely a side that runs without a secret.
    if (error instanceof RemoteAbortError) throw new AuthenticationError(`${acceptor} refused rank ${claim.rank} without a challenge (${error.reason}): does it have the job's secret?`);
    throw error;
  });
  const h = challenge.header;
  if (h.opcode !== Opcode.AuthChallenge) {
    throw new AuthenticationError(`${acceptor} did not ask rank ${claim.rank} to authenticate (it opened with ${opcodeName(h.opcode)}): give it the job's secret too`);
  }
  if (h.tag !== BigInt(AUTH_SCHEME) || challenge.payload.length !== AUTH_NONCE_BYTES) {
    throw new AuthenticationError(`${acceptor} asks for authentication scheme ${h.tag} with a ${challenge.payload.length}-byte nonce; this rank speaks scheme ${AUTH_SCHEME}`);
  }
  const nonce = newNonce();
  const challengeNonce = challenge.payload.slice();
  channel.send(outgoing(authResponseFrame(claim, dialerMac(secret, challengeNonce, nonce, claim), nonce)));
  const accept = await read('proof of the secret').catch((error: unknown) => {
    // Refused after the response: the acceptor found this rank's proof wrong (another secret).
    if (error instanceof RemoteAbortError) throw new AuthenticationError(`${acceptor} refused rank ${claim.rank}: ${error.reason}`);
    throw error;
  });
  if (accept.header.opcode !== Opcode.AuthAccept || !macMatches(accept.payload, acceptorMac(secret, challengeNonce, nonce, claim))) {
    throw new AuthenticationError(`${acceptor} could not prove it knows the job's secret`);
  }
}

/** A dialer without a secret that meets a challenge: say what is missing. */
export function secretRequired(frame: Frame, acceptor: string): void {
  if (frame.header.opcode === Opcode.AuthChallenge) {
    throw new AuthenticationError(`${acceptor} requires the job's secret: set GX1_SECRET or GX1_SECRET_FILE (or the secret option), as the job's launcher printed it`);
  }
}
