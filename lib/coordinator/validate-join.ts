import { EmptyError, TimeoutError as RxTimeoutError } from 'rxjs';
import { ChannelClosedError, ConfigurationError, failureText, ProtocolError, RxcclError, WrongSessionError } from '../errors.js';
import { FLAG_P2P_CHANNEL } from '../protocol/constants.js';
import { ElementType } from '../protocol/element-type.js';
import type { Frame } from '../protocol/frame.js';
import type { FrameHeader } from '../protocol/header.js';
import { Opcode } from '../protocol/opcode.js';
import type { UniqueId } from '../protocol/unique-id.js';

/** Which of a rank's connections a JOIN opens: the ordered collective channel or a P2P rail. */
export type ChannelRole = { readonly kind: 'collective' } | { readonly kind: 'rail'; readonly rail: number };

export function roleKey(role: ChannelRole): string {
  return role.kind === 'collective' ? 'collective' : `rail ${role.rail}`;
}

const NOT_AN_EMPTY_JOIN = 'first rank frame must be an empty JOIN';

/**
 * The part of `validateJoin` a header alone decides, applied before its payload is awaited: a
 * connection's opening frame that declares a payload is refused at its header.
 */
export function emptyJoinRule(header: FrameHeader): void {
  if (header.opcode !== Opcode.Join || header.elementType !== ElementType.None || header.payloadBytes > 0) throw new ConfigurationError(NOT_AN_EMPTY_JOIN);
}

/**
 * Validates the first frame of a connection (the reference design's `validate_join`) and says
 * which rank and channel it opens. `rails` is the number of P2P channels each rank opens here.
 */
export function validateJoin(frame: Frame, uniqueId: UniqueId, worldSize: number, rails: number): { rank: number; role: ChannelRole } {
  const header = frame.header;
  emptyJoinRule(header);
  if (!header.uniqueId.equals(uniqueId)) throw new WrongSessionError('JOIN belongs to another session (unique id mismatch)');
  if (header.worldSize !== worldSize) {
    throw new ConfigurationError(`rank declares world size ${header.worldSize}, coordinator expects ${worldSize}`);
  }
  if (header.sourceRank >= worldSize) {
    throw new ConfigurationError(`JOIN source rank ${header.sourceRank} is outside world size ${worldSize}`);
  }
  const p2p = (header.flags & FLAG_P2P_CHANNEL) !== 0;
  if (!p2p) {
    if (header.tag !== 0n) throw new ConfigurationError(`rank joined point-to-point rail ${header.tag}, coordinator expects 0`);
    return { rank: header.sourceRank, role: { kind: 'collective' } };
  }
  if (header.tag >= BigInt(rails)) {
    throw new ConfigurationError(`rank joined point-to-point rail ${header.tag}, coordinator expects 0..=${rails - 1}`);
  }
  return { rank: header.sourceRank, role: { kind: 'rail', rail: Number(header.tag) } };
}

/**
 * Why a connection sent no valid first frame, keeping the category of the cause: a stream that is
 * not GX1 (bad magic, version, checksum, ...) is a PROTOCOL error, not a session rule.
 */
export function joinFailure(error: unknown, joinTimeoutMs: number): RxcclError {
  if (error instanceof ProtocolError) return new ProtocolError(`not a GX1 JOIN: ${error.message}`);
  // Refused at the handshake (no secret, an opening frame refused at its header): as it is.
  if (error instanceof RxcclError) return error;
  if (error instanceof EmptyError) return new ChannelClosedError('connection closed before JOIN');
  if (error instanceof RxTimeoutError) return new RxcclError('TIMEOUT', `no JOIN within ${joinTimeoutMs} ms`);
  return new ChannelClosedError(`connection failed before JOIN: ${failureText(error)}`);
}
