import { ProtocolError } from '../errors.js';
import {
  ANY_RANK,
  FLAG_COUNTS_PREFIX,
  FLAG_MORE,
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
import { isOpcode, LAST_OPCODE, Opcode, opcodeName } from './opcode.js';
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
 * | 14  | 2    | reserved (0)     | 80  | 8    | communicator   |
 * | 16  | 16   | uniqueId         | 88  | 4    | reserved (0)   |
 * |     |      |                  | 92  | 4    | crc32c(0..91)  |
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
  /** The communicator a point-to-point message belongs to (0: the job's whole world; docs/protocol.md 13.1). */
  readonly communicator: bigint;
}

/** What an encoder takes: a header whose communicator may be left out (the world's, 0). */
export type HeaderFields = Omit<FrameHeader, 'communicator'> & { readonly communicator?: bigint };

function fail(field: string, seen: unknown, expected: string): never {
  throw new ProtocolError(`header field ${field} is ${String(seen)}, expected ${expected}`);
}

/** A u64 field: a bigint in 0..2^64-1 (a number or nothing is named as such, not converted). */
function checkU64(field: string, value: unknown): void {
  if (typeof value !== 'bigint') fail(field, typeof value === 'number' ? `${value} (a number)` : value, 'a u64 bigint');
  if (value < 0n || value > MAX_U64) fail(field, value, 'a u64');
}

/** `0x` and `digits` lowercase hex digits: how flags (4) and checksums (8) appear in errors. */
function hex(value: number, digits: number): string {
  return `0x${value.toString(16).padStart(digits, '0')}`;
}

/** The bytes of a GX1 stream's magic, in stream order. */
const MAGIC_BYTES = [0, 1, 2, 3].map((index) => (PROTOCOL_MAGIC >>> (8 * index)) & 0xff);

/**
 * Refuses a stream whose first bytes are not `GX1F`, at the first differing byte: the message
 * shows the bytes up to and including that one, so it is the same however the stream was split.
 * `seen` is how many of the stream's first bytes are present in `bytes` from `offset` (up to 4).
 */
export function checkMagic(bytes: Uint8Array, offset: number, seen: number): void {
  for (let index = 0; index < Math.min(seen, MAGIC_BYTES.length); index++) {
    if (bytes[offset + index] !== MAGIC_BYTES[index]) {
      const start = Buffer.from(bytes.buffer, bytes.byteOffset + offset, index + 1).toString('hex');
      throw new ProtocolError(`header field magic starts 0x${start}, expected "GX1F" (47 58 31 46): not a GX1 stream`);
    }
  }
}

/** Refuses any version but 1 (bytes 4..5). */
export function checkVersion(version: number): void {
  if (version !== PROTOCOL_VERSION) {
    throw new ProtocolError(`unsupported GX1 protocol version ${version}; this implementation speaks version ${PROTOCOL_VERSION}`);
  }
}

/** A u64 count limited to `limit` (elementCount, payloadBytes): the same text as the decoder's. */
function checkCount(field: string, value: number, limit: number): void {
  if (Number.isInteger(value) && value > limit) fail(field, value, `<= ${limit}`);
  if (!Number.isInteger(value) || value < 0) fail(field, value, `an integer 0..${limit}`);
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
export function validateHeader(header: HeaderFields): void {
  const { opcode, elementType, reduceOp, flags, worldSize, elementCount, payloadBytes } = header;
  // Rules 7 and 8 (docs/protocol.md 5.1), then 9 to 20 in order, with the decoder's texts.
  checkCount('elementCount', elementCount, Number.MAX_SAFE_INTEGER);
  checkCount('payloadBytes', payloadBytes, MAX_FRAME_PAYLOAD_BYTES);
  if (!isOpcode(opcode)) fail('opcode', opcode, `1..${LAST_OPCODE}`);
  if (!isElementType(elementType)) fail('elementType', elementType, `0..${ElementType.F64}`);
  if (!(Number.isInteger(reduceOp) && reduceOp >= 0 && reduceOp <= REDUCE_OPS.length)) {
    fail('reduceOp', reduceOp, `0..${REDUCE_OPS.length}`);
  }
  if (!Number.isInteger(flags) || flags < 0 || flags > 0xffff || (flags & ~KNOWN_FLAGS) !== 0) {
    fail('flags', Number.isInteger(flags) && flags >= 0 ? hex(flags, 4) : flags, `only bits ${hex(KNOWN_FLAGS, 4)}`);
  }
  if (worldSize < 1) fail('worldSize', worldSize, '>= 1');
  if (!(Number.isInteger(worldSize) && worldSize <= 0xffffffff)) fail('worldSize', worldSize, 'an integer 1..4294967295');
  checkRank('sourceRank', header.sourceRank, worldSize);
  checkRank('destinationRank', header.destinationRank, worldSize);
  checkRank('rootRank', header.rootRank, worldSize);
  checkU64('sequence', header.sequence);
  checkU64('tag', header.tag);
  // Left out, the job's world (0): a frame of no communicator (docs/protocol.md 13.1).
  if (header.communicator !== undefined) checkU64('communicator', header.communicator);
  const hasPayload = (flags & FLAG_PAYLOAD) !== 0;
  if (hasPayload !== payloadBytes > 0) {
    fail('flags.PAYLOAD', hasPayload ? 'set' : 'clear', `${payloadBytes > 0 ? 'set' : 'clear'} for payloadBytes ${payloadBytes}`);
  }
  const width = elementWidth(elementType);
  if (elementType === ElementType.None && elementCount !== 0) fail('elementCount', elementCount, '0 for element type None');
  const fragment = (flags & FLAG_MORE) !== 0;
  if (!hasPayload) {
    if ((flags & FLAG_COUNTS_PREFIX) !== 0) fail('flags.COUNTS_PREFIX', 'set', 'clear without a payload');
    if (fragment) fail('flags.MORE', 'set', 'clear without a payload');
    return;
  }
  if ((flags & FLAG_PEER_DATA) !== 0) fail('flags.PEER_DATA', 'set', 'clear on a frame with payload');
  // Only point-to-point data is cut into fragments (10.7), and never with a counts prefix.
  if (fragment && ((opcode !== Opcode.Send && opcode !== Opcode.Receive) || (flags & FLAG_COUNTS_PREFIX) !== 0)) {
    fail('flags.MORE', 'set', `clear on ${(flags & FLAG_COUNTS_PREFIX) !== 0 ? 'a frame with COUNTS_PREFIX' : `opcode ${opcodeName(opcode)}`}`);
  }
  if (elementType === ElementType.None) fail('elementType', 'None', 'a concrete type for a frame with payload');
  // A fragment carries whole elements, fewer than the elements it counts (its own and the later fragments').
  if (fragment) {
    if (payloadBytes % width === 0 && payloadBytes < elementCount * width) return;
    fail('payloadBytes', payloadBytes, `a multiple of ${width} below ${BigInt(elementCount) * BigInt(width)} (a fragment of ${elementCount} x ${width}-byte elements)`);
  }
  // A payload always carries exactly the declared elements (after the counts prefix, if any);
  // a frame without payload may still declare a count (a receive's or a non-root's contract).
  // In bigint when it matters: elementCount x width may exceed 2^53, and the message must show it
  // exactly; every header passes here, so the common case stays in numbers.
  const prefixBytes = (flags & FLAG_COUNTS_PREFIX) !== 0 ? worldSize * 8 : 0;
  const exact = prefixBytes + elementCount * width;
  if (Number.isSafeInteger(exact) && payloadBytes === exact) return;
  const expected = BigInt(prefixBytes) + BigInt(elementCount) * BigInt(width);
  if (BigInt(payloadBytes) !== expected) {
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
export function encodeHeaderInto(header: HeaderFields, target: Uint8Array, offset = 0): void {
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
  setU53(view, 64, header.elementCount);
  setU53(view, 72, header.payloadBytes);
  view.setBigUint64(80, header.communicator ?? 0n, true);
  target.fill(0, offset + 88, offset + HEADER_CHECKSUM_OFFSET);
  view.setUint32(HEADER_CHECKSUM_OFFSET, crc32c(target, offset, offset + HEADER_CHECKSUM_OFFSET), true);
}

/** Encodes a header on its own; the payload is written after it untouched (writev-ready). */
export function encodeHeader(header: HeaderFields): Uint8Array {
  const bytes = new Uint8Array(FRAME_HEADER_BYTES);
  encodeHeaderInto(header, bytes);
  return bytes;
}

/** Header bytes that must be 0, in the order they are checked: 11, 14, 15, 88..91. */
const RESERVED_BYTES: readonly number[] = [11, 14, 15, ...Array.from({ length: 4 }, (_, index) => 88 + index)];

/** A u64 field known to hold a safe integer, as two u32 halves (no bigint per header). */
function setU53(view: DataView, offset: number, value: number): void {
  view.setUint32(offset, value >>> 0, true);
  view.setUint32(offset + 4, Math.floor(value / 2 ** 32), true);
}

function safeU64(view: DataView, offset: number, field: string, limit: number): number {
  const high = view.getUint32(offset + 4, true);
  // Below 2^53 the halves make the exact number; above, the message needs the bigint.
  const value = high < 2 ** 21 ? high * 2 ** 32 + view.getUint32(offset, true) : view.getBigUint64(offset, true);
  if (value > limit) fail(field, value, `<= ${limit}`);
  return Number(value);
}

/** The unique id of the last header decoded: a connection's headers all carry the same one. */
let lastUniqueId: UniqueId | null = null;

/** The unique id at `offset`, the last one decoded again if it is the same (no copy per header). */
function uniqueIdAt(bytes: Uint8Array, offset: number): UniqueId {
  if (lastUniqueId !== null && lastUniqueId.isAt(bytes, offset)) return lastUniqueId;
  lastUniqueId = UniqueId.fromBytes(bytes.subarray(offset, offset + UniqueId.BYTES));
  return lastUniqueId;
}

/** Decodes and validates the first 96 bytes of `bytes`; throws `ProtocolError` naming the field. */
export function decodeHeader(bytes: Uint8Array, offset = 0): FrameHeader {
  if (bytes.length - offset < FRAME_HEADER_BYTES) {
    fail('length', bytes.length - offset, `${FRAME_HEADER_BYTES} header bytes`);
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset + offset, FRAME_HEADER_BYTES);
  checkMagic(bytes, offset, FRAME_HEADER_BYTES);
  checkVersion(view.getUint16(4, true));
  const headerBytes = view.getUint16(6, true);
  if (headerBytes !== FRAME_HEADER_BYTES) fail('headerBytes', headerBytes, String(FRAME_HEADER_BYTES));
  const checksum = view.getUint32(HEADER_CHECKSUM_OFFSET, true);
  const computed = crc32c(bytes, offset, offset + HEADER_CHECKSUM_OFFSET);
  if (checksum !== computed) fail('checksum', hex(checksum, 8), `${hex(computed, 8)} (CRC-32C of bytes 0..91)`);
  for (const index of RESERVED_BYTES) {
    if (bytes[offset + index] !== 0) fail(`reserved byte ${index}`, bytes[offset + index], '0');
  }
  const header: FrameHeader = {
    opcode: view.getUint8(8),
    elementType: view.getUint8(9),
    reduceOp: view.getUint8(10),
    flags: view.getUint16(12, true),
    uniqueId: uniqueIdAt(bytes, offset + 16),
    sourceRank: view.getUint32(32, true),
    destinationRank: view.getUint32(36, true),
    rootRank: view.getUint32(40, true),
    worldSize: view.getUint32(44, true),
    sequence: view.getBigUint64(48, true),
    tag: view.getBigUint64(56, true),
    elementCount: safeU64(view, 64, 'elementCount', Number.MAX_SAFE_INTEGER),
    payloadBytes: safeU64(view, 72, 'payloadBytes', MAX_FRAME_PAYLOAD_BYTES),
    communicator: view.getBigUint64(80, true),
  };
  validateHeader(header);
  return header;
}
