import { ProtocolError } from '../errors.js';
import { ANY_RANK, FLAG_P2P_CHANNEL } from './constants.js';
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

/** The world size a joiner's JOIN claims, and its admission carries: it knows of no world yet (the largest a header holds). */
export const ANY_WORLD_SIZE = 0xffffffff;

/**
 * A process asking to join a running fault-tolerant job (docs/protocol.md 13.9): a JOIN on a new
 * connection that claims no rank (ANY_RANK) of no particular world (ANY_WORLD_SIZE). The coordinator answers once
 * the job's ranks admit it (a Ready carrying the grown job, `admissionFrame`), or refuses it.
 */
export function joinerHeader(uniqueId: UniqueId): FrameHeader {
  return makeHeader({ uniqueId, opcode: Opcode.Join, sourceRank: ANY_RANK, worldSize: ANY_WORLD_SIZE }, 0);
}

/** Whether a JOIN is a joiner's (`joinerHeader`), not a rank's. */
export function isJoinerHeader(header: FrameHeader): boolean {
  return header.opcode === Opcode.Join && header.sourceRank === ANY_RANK && header.worldSize === ANY_WORLD_SIZE && header.flags === 0 && header.tag === 0n;
}

/**
 * The coordinator's notice to `destination` (on its first rail) that `waiting` processes wait to
 * join: a JOIN from ANY_RANK with the count in the tag. Sent each time the count changes.
 */
export function joinersWaitingFrame(origin: FrameOrigin, destination: number, waiting: number): Frame {
  return makeFrame({ uniqueId: origin.uniqueId, opcode: Opcode.Join, sourceRank: ANY_RANK, destinationRank: destination, worldSize: origin.worldSize, tag: BigInt(waiting) }, new Uint8Array(0));
}

/**
 * A member's request (on its first rail) to grow the job: admit `joiners` of the processes
 * waiting, into a job of `members` (job ranks, in their new rank order) then the joiners. A JOIN
 * with a payload of one u32 (little-endian) per member and the joiner count in the tag.
 */
export function growRequestFrame(origin: FrameOrigin & { readonly rank: number }, joiners: number, members: readonly number[]): Frame {
  const payload = new Uint8Array(members.length * 4);
  const view = new DataView(payload.buffer);
  members.forEach((member, index) => view.setUint32(index * 4, member, true));
  return makeFrame(
    { uniqueId: origin.uniqueId, opcode: Opcode.Join, elementType: ElementType.U32, sourceRank: origin.rank, worldSize: origin.worldSize, tag: BigInt(joiners), elementCount: members.length },
    payload,
  );
}

/** The members of a grow request (`growRequestFrame`), as job ranks. */
export function growRequestMembers(frame: Frame): number[] {
  const { payload } = frame;
  if (frame.header.elementType !== ElementType.U32 || payload.length !== frame.header.elementCount * 4) {
    throw new ProtocolError(`grow request from rank ${frame.header.sourceRank}: ${payload.length} payload bytes for ${frame.header.elementCount} u32 members`);
  }
  const view = new DataView(payload.buffer, payload.byteOffset, payload.length);
  return Array.from({ length: frame.header.elementCount }, (_, index) => view.getUint32(index * 4, true));
}

/**
 * The coordinator's admission into a grown job (`GrownJob`, as text): a Ready with a UTF-8
 * payload, to a member on its first rail (`destination` its rank) or to a joiner on its connection
 * (`destination` ANY_RANK, world size ANY_WORLD_SIZE, as it joined).
 */
export function admissionFrame(origin: FrameOrigin, destination: number, admission: string): Frame {
  const payload = utf8(admission);
  return makeFrame(
    { uniqueId: origin.uniqueId, opcode: Opcode.Ready, elementType: ElementType.U8, destinationRank: destination, worldSize: origin.worldSize, elementCount: payload.length },
    payload,
  );
}
