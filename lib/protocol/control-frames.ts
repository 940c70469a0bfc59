import { FLAG_P2P_CHANNEL } from './constants.js';
import { ElementType } from './element-type.js';
import { frameText, makeFrame, makeHeader, type Frame } from './frame.js';
import type { FrameHeader } from './header.js';
import { Opcode } from './opcode.js';
import type { UniqueId } from './unique-id.js';

/**
 * The control frames every layer builds and reads: JOIN, Abort, PeerHello and the endpoint table.
 * Built here once so the coordinator, the rails and the peer mesh cannot drift apart on their
 * layout (docs/protocol.md sections 8 to 10).
 */

/** Who sends a control frame. */
export interface FrameOrigin {
  readonly uniqueId: UniqueId;
  readonly worldSize: number;
  /** Omitted by a listener refusing a connection before it knows who dialled. */
  readonly rank?: number;
}

function utf8(text: string): Uint8Array {
  return new Uint8Array(Buffer.from(text, 'utf8'));
}

/** An Abort carrying `message` (UTF-8, never empty on the wire), to one rank or to any. */
export function abortFrame(origin: FrameOrigin, message: string, to: { readonly destination?: number; readonly sequence?: bigint } = {}): Frame {
  const payload = utf8(message);
  return makeFrame(
    {
      uniqueId: origin.uniqueId,
      opcode: Opcode.Abort,
      elementType: ElementType.U8,
      sourceRank: origin.rank ?? 0,
      ...(to.destination === undefined ? {} : { destinationRank: to.destination }),
      worldSize: origin.worldSize,
      sequence: to.sequence ?? 0n,
      elementCount: payload.length,
    },
    payload,
  );
}

/** The reason an Abort frame carries. */
export function abortReason(frame: Frame): string {
  return frameText(frame);
}

/** JOIN for the collective channel (`rail` null) or one point-to-point rail. */
export function joinHeader(origin: FrameOrigin & { readonly rank: number }, rail: number | null): FrameHeader {
  return makeHeader(
    {
      uniqueId: origin.uniqueId,
      opcode: Opcode.Join,
      sourceRank: origin.rank,
      worldSize: origin.worldSize,
      flags: rail === null ? 0 : FLAG_P2P_CHANNEL,
      tag: BigInt(rail ?? 0),
    },
    0,
  );
}

/** LEAVE: an empty control frame saying goodbye on a channel. */
export function leaveHeader(origin: FrameOrigin & { readonly rank: number }): FrameHeader {
  return makeHeader({ uniqueId: origin.uniqueId, opcode: Opcode.Leave, sourceRank: origin.rank, worldSize: origin.worldSize }, 0);
}

/** PeerHello from `origin.rank` to `peer` for `rail` (both directions of the mesh handshake). */
export function peerHelloHeader(origin: FrameOrigin & { readonly rank: number }, peer: number, rail: number): FrameHeader {
  return makeHeader(
    { uniqueId: origin.uniqueId, opcode: Opcode.PeerHello, sourceRank: origin.rank, destinationRank: peer, worldSize: origin.worldSize, tag: BigInt(rail) },
    0,
  );
}

/** A rank's PeerEndpoint request: its endpoints as text, with the rail count in the tag. */
export function peerEndpointFrame(origin: FrameOrigin & { readonly rank: number }, rails: number, endpoints: string): Frame {
  const payload = utf8(endpoints);
  return makeFrame(
    {
      uniqueId: origin.uniqueId,
      opcode: Opcode.PeerEndpoint,
      elementType: ElementType.U8,
      sourceRank: origin.rank,
      worldSize: origin.worldSize,
      tag: BigInt(rails),
      elementCount: payload.length,
    },
    payload,
  );
}

/**
 * In a fault-tolerant job, the coordinator's notice to `destination` that rank `lost` is gone: a
 * Leave whose sourceRank is that rank, tag 1 if it left (0: lost), carrying why (UTF-8)
 * (docs/protocol.md 13.7).
 */
export function rankLostFrame(origin: FrameOrigin, lost: number, destination: number, reason: string, left: boolean): Frame {
  const payload = utf8(reason);
  return makeFrame(
    {
      uniqueId: origin.uniqueId,
      opcode: Opcode.Leave,
      elementType: ElementType.U8,
      sourceRank: lost,
      destinationRank: destination,
      worldSize: origin.worldSize,
      tag: left ? 1n : 0n,
      elementCount: payload.length,
    },
    payload,
  );
}
