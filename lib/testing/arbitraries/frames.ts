/**
 * fast-check generators of valid GX1 frames: every header field drawn across its whole range, the
 * payload consistent with the header (empty, elements, or a counts-prefixed layout).
 */
import fc from 'fast-check';
import {
  ANY_RANK,
  crc32c,
  ElementType,
  elementWidth,
  encodeCounts,
  encodeHeader,
  FLAG_COUNTS_PREFIX,
  FLAG_P2P_CHANNEL,
  FLAG_PAYLOAD,
  HEADER_CHECKSUM_OFFSET,
  MAX_U64,
  Opcode,
  REDUCE_OPS,
  UniqueId,
  type Frame,
  type FrameHeader,
} from '../../protocol/index.js';

/** Any job unique id (16 random bytes). */
export const arbUniqueId = fc.uint8Array({ minLength: 16, maxLength: 16 }).map((bytes) => UniqueId.fromBytes(bytes));

/** Any u64, with the edges (0, 2^53 +- 1, 2^63, 2^64-1) drawn often. */
export const arbU64 = fc.oneof(
  fc.bigInt({ min: 0n, max: MAX_U64 }),
  fc.constantFrom(0n, 1n, 2n ** 53n - 1n, 2n ** 53n, 2n ** 53n + 1n, 2n ** 63n, MAX_U64 - 1n, MAX_U64),
);

/** Any opcode GX1 defines. */
export const arbOpcode = fc.integer({ min: Opcode.Join, max: Opcode.PeerHello }) as fc.Arbitrary<Opcode>;
/** Any element type of data (u8 .. f64, not `None`). */
export const arbConcreteType = fc.integer({ min: ElementType.U8, max: ElementType.F64 }) as fc.Arbitrary<ElementType>;
/** Any element type, `None` (no data) included. */
export const arbAnyType = fc.integer({ min: ElementType.None, max: ElementType.F64 }) as fc.Arbitrary<ElementType>;
/** Any reduce-op byte of a header: 0 (no reduction) or an operator's code. */
export const arbReduceOp = fc.integer({ min: 0, max: REDUCE_OPS.length });

const arbWorldSize = fc.oneof(
  { weight: 4, arbitrary: fc.integer({ min: 1, max: 8 }) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 0xffffffff }) },
  { weight: 1, arbitrary: fc.constant(0xffffffff) },
);

const arbRank = (worldSize: number) =>
  fc.oneof(fc.constant(ANY_RANK), fc.integer({ min: 0, max: Math.min(worldSize, ANY_RANK) - 1 }));

/** The payload layouts a valid frame can have. */
type Layout =
  | { kind: 'empty'; elementType: ElementType; elementCount: number; worldSize: number; payload: Uint8Array }
  | { kind: 'elements'; elementType: ElementType; elementCount: number; worldSize: number; payload: Uint8Array }
  | { kind: 'counts'; elementType: ElementType; elementCount: number; worldSize: number; payload: Uint8Array; counts: number[] };

/** No payload: element type None with count 0, or a typed "contract" count up to 2^53-1. */
const arbEmptyLayout: fc.Arbitrary<Layout> = fc
  .record({
    worldSize: arbWorldSize,
    elementType: arbAnyType,
    count: fc.oneof(fc.nat(64), fc.constant(Number.MAX_SAFE_INTEGER), fc.maxSafeNat()),
  })
  .map(({ worldSize, elementType, count }) => ({
    kind: 'empty' as const,
    worldSize,
    elementType,
    elementCount: elementType === ElementType.None ? 0 : count,
    payload: new Uint8Array(0),
  }));

const arbElementsLayout = (maxCount: number): fc.Arbitrary<Layout> =>
  fc
    .record({ worldSize: arbWorldSize, elementType: arbConcreteType, count: fc.integer({ min: 1, max: maxCount }) })
    .chain(({ worldSize, elementType, count }) =>
      fc.uint8Array({ minLength: count * elementWidth(elementType), maxLength: count * elementWidth(elementType) }).map((payload) => ({
        kind: 'elements' as const,
        worldSize,
        elementType,
        elementCount: count,
        payload,
      })),
    );

const arbCountsLayout = (maxCount: number): fc.Arbitrary<Layout> =>
  fc
    .record({ worldSize: fc.integer({ min: 1, max: 8 }), elementType: arbConcreteType })
    .chain(({ worldSize, elementType }) =>
      fc.array(fc.nat(Math.max(0, Math.floor(maxCount / worldSize))), { minLength: worldSize, maxLength: worldSize }).chain((counts) => {
        const total = counts.reduce((a, b) => a + b, 0);
        const bytes = total * elementWidth(elementType);
        return fc.uint8Array({ minLength: bytes, maxLength: bytes }).map((data) => {
          const payload = new Uint8Array(worldSize * 8 + bytes);
          payload.set(encodeCounts(counts), 0);
          payload.set(data, worldSize * 8);
          return { kind: 'counts' as const, worldSize, elementType, elementCount: total, payload, counts };
        });
      }),
    );

/** What `arbFrame` draws. */
export interface ArbFrameOptions {
  /** Largest element count of a payload-carrying frame. */
  readonly maxCount?: number;
  /** Only frames of this opcode (default: any). */
  readonly opcode?: Opcode;
}

/** A valid frame: header fields drawn across their whole ranges, payload consistent with them. */
export function arbFrame(options: ArbFrameOptions = {}): fc.Arbitrary<Frame> {
  const maxCount = options.maxCount ?? 48;
  return fc
    .oneof(arbEmptyLayout, arbElementsLayout(maxCount), arbCountsLayout(maxCount))
    .chain((layout) =>
      fc
        .record({
          opcode: options.opcode === undefined ? arbOpcode : fc.constant(options.opcode),
          reduceOp: arbReduceOp,
          p2p: fc.boolean(),
          uniqueId: arbUniqueId,
          sourceRank: arbRank(layout.worldSize),
          destinationRank: arbRank(layout.worldSize),
          rootRank: arbRank(layout.worldSize),
          sequence: arbU64,
          tag: arbU64,
          communicator: fc.oneof(fc.constant(0n), arbU64),
        })
        .map((f) => {
          const flags =
            (f.p2p ? FLAG_P2P_CHANNEL : 0) |
            (layout.payload.length > 0 ? FLAG_PAYLOAD : 0) |
            (layout.kind === 'counts' ? FLAG_COUNTS_PREFIX : 0);
          const header: FrameHeader = {
            opcode: f.opcode,
            elementType: layout.elementType,
            reduceOp: f.reduceOp,
            flags,
            uniqueId: f.uniqueId,
            sourceRank: f.sourceRank,
            destinationRank: f.destinationRank,
            rootRank: f.rootRank,
            worldSize: layout.worldSize,
            sequence: f.sequence,
            tag: f.tag,
            elementCount: layout.elementCount,
            payloadBytes: layout.payload.length,
            communicator: f.communicator,
          };
          return { header, payload: layout.payload };
        }),
    );
}

/** A valid header (of `options.opcode`, if given). */
export function arbHeader(options: ArbFrameOptions = {}): fc.Arbitrary<FrameHeader> {
  return arbFrame(options).map((frame) => frame.header);
}

/** Header + payload as one fresh byte array. */
export function frameBytes(frame: Frame): Uint8Array {
  const bytes = new Uint8Array(96 + frame.payload.length);
  bytes.set(encodeHeader(frame.header), 0);
  bytes.set(frame.payload, 96);
  return bytes;
}

/** Rewrites the header checksum (bytes 92..96) after a deliberate edit of bytes 0..92. */
export function fixChecksum(bytes: Uint8Array, offset = 0): Uint8Array {
  new DataView(bytes.buffer, bytes.byteOffset + offset, 96).setUint32(
    HEADER_CHECKSUM_OFFSET,
    crc32c(bytes, offset, offset + HEADER_CHECKSUM_OFFSET),
    true,
  );
  return bytes;
}
