import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { ANY_RANK, FLAG_P2P_CHANNEL } from './constants.js';
import { ElementType } from './element-type.js';
import { makeFrame, type Frame } from './frame.js';
import type { FrameHeader } from './header.js';
import { Opcode } from './opcode.js';
import { UniqueId } from './unique-id.js';

/**
 * The challenge-response that authenticates a connection with the job's secret before anything
 * of the job is said on it (docs/protocol.md 8.4). Pure: building and reading the three frames
 * and computing the two MACs; the transport runs the exchange.
 */

/** Authentication scheme 1: HMAC-SHA256 over nonces and claim. Carried in the challenge's tag. */
export const AUTH_SCHEME = 1;
export const AUTH_NONCE_BYTES = 32;
export const AUTH_MAC_BYTES = 32;
/** The largest payload a connection may declare before it is authenticated: an AuthResponse. */
export const MAX_HANDSHAKE_PAYLOAD_BYTES = AUTH_MAC_BYTES + AUTH_NONCE_BYTES;

/** Authentication frames carry no unique id: nothing of the job is revealed before it succeeds. */
const NO_JOB = UniqueId.fromBytes(new Uint8Array(UniqueId.BYTES));
const DIALER_LABEL = 'GX1-AUTH-1 dialer\0';
const ACCEPTOR_LABEL = 'GX1-AUTH-1 acceptor\0';

/** What a dialer claims to be: its rank, and the channel it opens. */
export interface AuthClaim {
  readonly rank: number;
  readonly worldSize: number;
  /** The rank dialled on the peer mesh; ANY_RANK for the coordinator. */
  readonly peer: number;
  /** The rail; null for the coordinator's collective channel. */
  readonly rail: number | null;
}

export function newNonce(): Uint8Array {
  return new Uint8Array(randomBytes(AUTH_NONCE_BYTES));
}

/** The claim as the text both MACs cover, e.g. `rank 2 to coordinator rail 0`. */
export function authContext(claim: AuthClaim): string {
  const to = claim.peer === ANY_RANK ? 'coordinator' : `rank ${claim.peer}`;
  const channel = claim.rail === null ? 'collective channel' : `rail ${claim.rail}`;
  return `rank ${claim.rank} to ${to} ${channel}`;
}

/** The accepting side's first frame: a fresh nonce (worldSize 1, no ranks, no unique id). */
export function authChallengeFrame(nonce: Uint8Array): Frame {
  return makeFrame(
    { uniqueId: NO_JOB, opcode: Opcode.AuthChallenge, elementType: ElementType.U8, sourceRank: ANY_RANK, worldSize: 1, tag: BigInt(AUTH_SCHEME), elementCount: nonce.length },
    nonce,
  );
}

/** The dialer's answer: its claim in the header, `mac || nonce` as payload. */
export function authResponseFrame(claim: AuthClaim, mac: Uint8Array, nonce: Uint8Array): Frame {
  const payload = new Uint8Array(AUTH_MAC_BYTES + AUTH_NONCE_BYTES);
  payload.set(mac, 0);
  payload.set(nonce, AUTH_MAC_BYTES);
  const coordinatorRail = claim.peer === ANY_RANK && claim.rail !== null;
  return makeFrame(
    {
      uniqueId: NO_JOB,
      opcode: Opcode.AuthResponse,
      elementType: ElementType.U8,
      sourceRank: claim.rank,
      destinationRank: claim.peer,
      worldSize: claim.worldSize,
      flags: coordinatorRail ? FLAG_P2P_CHANNEL : 0,
      tag: BigInt(claim.rail ?? 0),
      elementCount: payload.length,
    },
    payload,
  );
}

/** The claim an AuthResponse (or the JOIN / PeerHello after it) makes. */
export function claimOf(header: FrameHeader): AuthClaim {
  const toCoordinator = header.destinationRank === ANY_RANK;
  const rail = toCoordinator && (header.flags & FLAG_P2P_CHANNEL) === 0 ? null : Number(header.tag);
  return { rank: header.sourceRank, worldSize: header.worldSize, peer: header.destinationRank, rail };
}

/** The accepting side's proof that it knows the secret too. */
export function authAcceptFrame(mac: Uint8Array): Frame {
  return makeFrame(
    { uniqueId: NO_JOB, opcode: Opcode.AuthAccept, elementType: ElementType.U8, sourceRank: ANY_RANK, worldSize: 1, tag: BigInt(AUTH_SCHEME), elementCount: mac.length },
    mac,
  );
}

function mac(secret: Uint8Array, label: string, challenge: Uint8Array, response: Uint8Array, claim: AuthClaim): Uint8Array {
  const hmac = createHmac('sha256', secret);
  hmac.update(label, 'utf8').update(challenge).update(response).update(authContext(claim), 'utf8');
  return new Uint8Array(hmac.digest());
}

/** HMAC-SHA256(secret, "GX1-AUTH-1 dialer\0" || challenge nonce || response nonce || context). */
export function dialerMac(secret: Uint8Array, challenge: Uint8Array, response: Uint8Array, claim: AuthClaim): Uint8Array {
  return mac(secret, DIALER_LABEL, challenge, response, claim);
}

/** HMAC-SHA256(secret, "GX1-AUTH-1 acceptor\0" || challenge nonce || response nonce || context). */
export function acceptorMac(secret: Uint8Array, challenge: Uint8Array, response: Uint8Array, claim: AuthClaim): Uint8Array {
  return mac(secret, ACCEPTOR_LABEL, challenge, response, claim);
}

/** Constant-time comparison of a received MAC with the expected one. */
export function macMatches(received: Uint8Array, expected: Uint8Array): boolean {
  return received.length === expected.length && timingSafeEqual(received, expected);
}
