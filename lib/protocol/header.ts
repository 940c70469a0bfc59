import { ProtocolError } from '../errors.js';
import {
  ANY_RANK,
  FLAG_COUNTS_PREFIX,
  FLAG_PAYLOAD,
  FLAG_PEER_DATA,
  FRAME_HEADER_BYTES,
  HEADER_CHECKSUM_OFFSET,
  KNOWN_FLAGS,
  MAX_FRAME_PAYLOAD_BYTES,
  MAX_U64,
  PROTOCOL_MAGIC,
  PROTOCOL_VERSION,
} from './constants.js';
import { crc32c } from './crc32c.js';
import { ElementType, elementWidth, isElementType } from './element-type.js';
import { isOpcode, Opcode } from './opcode.js';
import { REDUCE_OPS } from './reduce-op.js';
import { UniqueId } from './unique-id.js';

/**
 * The decoded fields of one GX1 header. Layout (little-endian, 96 bytes; docs/protocol.md):
 *
 * | off | size | field            | off | size | field          |
 * |-----|------|------------------|-----|------|----------------|
 * | 0   | 4    | magic "GX1F"     | 32  | 4    | sourceRank     |
 * | 4   | 2    | version          | 36  | 4    | destinationRank|
 * | 6   | 2    | headerBytes (96) | 40  | 4    | rootRank       |
 * | 8   | 1    | opcode           | 44  | 4    | worldSize      |
 * | 9   | 1    | elementType      | 48  | 8    | sequence       |
 * | 10  | 1    | reduceOp         | 56  | 8    | tag            |
 * | 11  | 1    | reserved (0)     | 64  | 8    | elementCount   |
 * | 12  | 2    | flags            | 72  | 8    | payloadBytes   |
 * | 14  | 2    | reserved (0)     | 80  | 12   | reserved (0)   |
 * | 16  | 16   | uniqueId         | 92  | 4    | crc32c(0..92)  |
 */
export interface FrameHeader {
  readonly opcode: Opcode;
  readonly elementType: ElementType;
  /** 0 = none, else 1 + index in REDUCE_OPS. */
  readonly reduceOp: number;
  readonly flags: number;
  readonly uniqueId: UniqueId;
  readonly sourceRank: number;
  readonly destinationRank: number;
  readonly rootRank: number;
  readonly worldSize: number;
  readonly sequence: bigint;
  readonly tag: bigint;
  readonly elementCount: number;
  readonly payloadBytes: number;
}

function fail(field: string, seen: unknown, expected: string): never {
  throw new ProtocolError(`header field ${field} is ${String(seen)}, expected ${expected}`);
}

function checkRank(field: string, rank: number, worldSize: number): void {
  // Integer and non-negative too: the encoder must never turn -1 into ANY_RANK or 0.5 into 0.
  if (rank !== ANY_RANK && !(Number.isInteger(rank) && rank >= 0 && rank < worldSize)) {
    fail(field, rank, `< worldSize ${worldSize} or ANY_RANK`);
  }
}

/**
 * Checks every rule that the header alone can decide, so a decoder can refuse a bad frame
 * before it waits for (or allocates) the payload the header declares.
 */
export function validateHeader(header: FrameHeader): void {
  const { opcode, elementType, reduceOp, flags, worldSize, elementCount, payloadBytes } = header;
  if (!isOpcode(opcode)) fail('opcode', opcode, `1..${Opcode.PeerHello}`);
  if (!isElementType(elementType)) fail('elementType', elementType, `0..${ElementType.F64}`);
  if (!(Number.isInteger(reduceOp) && reduceOp >= 0 && reduceOp <= REDUCE_OPS.length)) {
    fail('reduceOp', reduceOp, `0..${REDUCE_OPS.length}`);
  }
  if (!Number.isInteger(flags) || flags < 0 || flags > 0xffff || (flags & ~KNOWN_FLAGS) !== 0) {
    fail('flags', `0x${flags.toString(16)}`, `only bits 0x${KNOWN_FLAGS.toString(16)}`);
  }
  if (!(Number.isInteger(worldSize) && worldSize >= 1 && worldSize <= 0xffffffff)) fail('worldSize', worldSize, '>= 1');
  checkRank('sourceRank', header.sourceRank, worldSize);
  checkRank('destinationRank', header.destinationRank, worldSize);
  checkRank('rootRank', header.rootRank, worldSize);
  if (header.sequence < 0n || header.sequence > MAX_U64) fail('sequence', header.sequence, 'a u64');
  if (header.tag < 0n || header.tag > MAX_U64) fail('tag', header.tag, 'a u64');
  if (!Number.isSafeInteger(elementCount) || elementCount < 0) {
    fail('elementCount', elementCount, `0..${Number.MAX_SAFE_INTEGER}`);
  }
  if (!Number.isSafeInteger(payloadBytes) || payloadBytes < 0 || payloadBytes > MAX_FRAME_PAYLOAD_BYTES) {
    fail('payloadBytes', payloadBytes, `0..${MAX_FRAME_PAYLOAD_BYTES} (MAX_FRAME_PAYLOAD_BYTES)`);
  }
  const hasPayload = (flags & FLAG_PAYLOAD) !== 0;
  if (hasPayload !== payloadBytes > 0) {
    fail('flags.PAYLOAD', hasPayload ? 'set' : 'clear', `${payloadBytes > 0 ? 'set' : 'clear'} for payloadBytes ${payloadBytes}`);
  }
  const width = elementWidth(elementType);
  if (elementType === ElementType.None && elementCount !== 0) fail('elementCount', elementCount, '0 for element type None');
  if (!hasPayload) {
    if ((flags & FLAG_COUNTS_PREFIX) !== 0) fail('flags.COUNTS_PREFIX', 'set', 'clear without a payload');
    return;
  }
  if ((flags & FLAG_PEER_DATA) !== 0) fail('flags.PEER_DATA', 'set', 'clear on a frame with payload (the data travels over the peer mesh)');
  if (elementType === ElementType.None) fail('elementType', 'None', 'a concrete type for a frame with payload');
  // A payload always carries exactly the declared elements (after the counts prefix, if any);
  // a frame without payload may still declare a count (a receive's or a non-root's contract).
  const prefixBytes = (flags & FLAG_COUNTS_PREFIX) !== 0 ? worldSize * 8 : 0;
  const expected = prefixBytes + elementCount * width;
  if (payloadBytes !== expected) {
    fail(
      'payloadBytes',
      payloadBytes,
      prefixBytes > 0
        ? `${expected} (${worldSize} x 8-byte counts + ${elementCount} x ${width}-byte elements)`
        : `${expected} (${elementCount} x ${width}-byte elements)`,
    );
  }
}

/** Writes the 96 header bytes into `target` at `offset` (validating first). */
export function encodeHeaderInto(header: FrameHeader, target: Uint8Array, offset = 0): void {
  validateHeader(header);
  const view = new DataView(target.buffer, target.byteOffset + offset, FRAME_HEADER_BYTES);
  view.setUint32(0, PROTOCOL_MAGIC, true);
  view.setUint16(4, PROTOCOL_VERSION, true);
  view.setUint16(6, FRAME_HEADER_BYTES, true);
  view.setUint8(8, header.opcode);
  view.setUint8(9, header.elementType);
  view.setUint8(10, header.reduceOp);
  view.setUint8(11, 0);
  view.setUint16(12, header.flags, true);
  view.setUint16(14, 0, true);
  target.set(header.uniqueId.bytes, offset + 16);
  view.setUint32(32, header.sourceRank, true);
  view.setUint32(36, header.destinationRank, true);
  view.setUint32(40, header.rootRank, true);
  view.setUint32(44, header.worldSize, true);
  view.setBigUint64(48, header.sequence, true);
  view.setBigUint64(56, header.tag, true);
  view.setBigUint64(64, BigInt(header.elementCount), true);
  view.setBigUint64(72, BigInt(header.payloadBytes), true);
  target.fill(0, offset + 80, offset + HEADER_CHECKSUM_OFFSET);
  view.setUint32(HEADER_CHECKSUM_OFFSET, crc32c(target, offset, offset + HEADER_CHECKSUM_OFFSET), true);
}

/** Encodes a header on its own; the payload is written after it untouched (writev-ready). */
export function encodeHeader(header: FrameHeader): Uint8Array {
  const bytes = new Uint8Array(FRAME_HEADER_BYTES);
  encodeHeaderInto(header, bytes);
  return bytes;
}

function safeU64(view: DataView, offset: number, field: string, limit: number): number {
  const value = view.getBigUint64(offset, true);
  if (value > BigInt(limit)) fail(field, value, `<= ${limit}`);
  return Number(value);
}

/** Decodes and validates the first 96 bytes of `bytes`; throws `ProtocolError` naming the field. */
export function decodeHeader(bytes: Uint8Array, offset = 0): FrameHeader {
  if (bytes.length - offset < FRAME_HEADER_BYTES) {
    fail('length', bytes.length - offset, `${FRAME_HEADER_BYTES} header bytes`);
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset + offset, FRAME_HEADER_BYTES);
  const magic = view.getUint32(0, true);
  if (magic !== PROTOCOL_MAGIC) fail('magic', `0x${magic.toString(16)}`, `0x${PROTOCOL_MAGIC.toString(16)} ("GX1F")`);
  const version = view.getUint16(4, true);
  if (version !== PROTOCOL_VERSION) {
    throw new ProtocolError(`unsupported GX1 protocol version ${version}; this implementation speaks version ${PROTOCOL_VERSION}`);
  }
  const headerBytes = view.getUint16(6, true);
  if (headerBytes !== FRAME_HEADER_BYTES) fail('headerBytes', headerBytes, String(FRAME_HEADER_BYTES));
  const checksum = view.getUint32(HEADER_CHECKSUM_OFFSET, true);
  const computed = crc32c(bytes, offset, offset + HEADER_CHECKSUM_OFFSET);
  if (checksum !== computed) fail('checksum', `0x${checksum.toString(16)}`, `0x${computed.toString(16)} (crc32c of bytes 0..92)`);
  if (view.getUint8(11) !== 0) fail('reserved byte 11', view.getUint8(11), '0');
  if (view.getUint16(14, true) !== 0) fail('reserved bytes 14..16', view.getUint16(14, true), '0');
  for (let index = 80; index < HEADER_CHECKSUM_OFFSET; index++) {
    if (bytes[offset + index] !== 0) fail(`reserved byte ${index}`, bytes[offset + index], '0');
  }
  const header: FrameHeader = {
    opcode: view.getUint8(8),
    elementType: view.getUint8(9),
    reduceOp: view.getUint8(10),
    flags: view.getUint16(12, true),
    uniqueId: UniqueId.fromBytes(bytes.subarray(offset + 16, offset + 32)),
    sourceRank: view.getUint32(32, true),
    destinationRank: view.getUint32(36, true),
    rootRank: view.getUint32(40, true),
    worldSize: view.getUint32(44, true),
    sequence: view.getBigUint64(48, true),
    tag: view.getBigUint64(56, true),
    elementCount: safeU64(view, 64, 'elementCount', Number.MAX_SAFE_INTEGER),
    payloadBytes: safeU64(view, 72, 'payloadBytes', MAX_FRAME_PAYLOAD_BYTES),
  };
  validateHeader(header);
  return header;
}
