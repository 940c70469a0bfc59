import { ProtocolError } from '../errors.js';
import { ANY_RANK, FLAG_COUNTS_PREFIX, FLAG_PAYLOAD } from './constants.js';
import { readCountsPrefix } from './counts.js';
import { ElementType } from './element-type.js';
import { validateHeader, type FrameHeader } from './header.js';
import { Opcode } from './opcode.js';
import type { UniqueId } from './unique-id.js';

/** One GX1 frame: a header and the payload bytes it declares (often a slice of a larger buffer). */
export interface Frame {
  readonly header: FrameHeader;
  readonly payload: Uint8Array;
}

const EMPTY = new Uint8Array(0);

/** The fields a frame builder must be told; everything else has the protocol's neutral value. */
export interface FrameFields {
  readonly uniqueId: UniqueId;
  readonly opcode: Opcode;
  readonly worldSize: number;
  readonly elementType?: ElementType;
  readonly reduceOp?: number;
  readonly flags?: number;
  readonly sourceRank?: number;
  readonly destinationRank?: number;
  readonly rootRank?: number;
  readonly sequence?: bigint;
  readonly tag?: bigint;
  readonly elementCount?: number;
  readonly communicator?: bigint;
}

/**
 * Builds a header for a payload of `payloadBytes` bytes; `payloadBytes` and the PAYLOAD flag follow
 * the payload, so they can never disagree with it. Throws `ProtocolError` for an invalid header.
 */
export function makeHeader(fields: FrameFields, payloadBytes: number): FrameHeader {
  const flags = ((fields.flags ?? 0) & ~FLAG_PAYLOAD) | (payloadBytes > 0 ? FLAG_PAYLOAD : 0);
  const header: FrameHeader = {
    opcode: fields.opcode,
    elementType: fields.elementType ?? ElementType.None,
    reduceOp: fields.reduceOp ?? 0,
    flags,
    uniqueId: fields.uniqueId,
    sourceRank: fields.sourceRank ?? 0,
    destinationRank: fields.destinationRank ?? ANY_RANK,
    rootRank: fields.rootRank ?? ANY_RANK,
    worldSize: fields.worldSize,
    sequence: fields.sequence ?? 0n,
    tag: fields.tag ?? 0n,
    elementCount: fields.elementCount ?? 0,
    payloadBytes,
    communicator: fields.communicator ?? 0n,
  };
  validateHeader(header);
  return header;
}

/** Builds a frame around `payload` without copying it (see `makeHeader`). */
export function makeFrame(fields: FrameFields, payload: Uint8Array = EMPTY): Frame {
  return { header: makeHeader(fields, payload.length), payload };
}

/** Checks a decoded header against the payload that arrived with it. */
export function validateFrame(frame: Frame): void {
  const { header, payload } = frame;
  if (payload.length !== header.payloadBytes) {
    throw new ProtocolError(`frame payload has ${payload.length} bytes, header declares ${header.payloadBytes}`);
  }
  if ((header.flags & FLAG_COUNTS_PREFIX) !== 0) {
    const { total } = readCountsPrefix(payload, header.worldSize);
    if (total !== header.elementCount) {
      throw new ProtocolError(`counts prefix sums to ${total}, header field elementCount is ${header.elementCount}`);
    }
  }
}

/** The UTF-8 text an Abort (or other U8 message) frame carries. */
export function frameText(frame: Frame): string {
  return Buffer.from(frame.payload.buffer, frame.payload.byteOffset, frame.payload.byteLength).toString('utf8');
}
