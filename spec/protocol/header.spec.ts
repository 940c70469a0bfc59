import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ProtocolError } from '../../lib/errors.js';
import {
  ANY_RANK,
  crc32c,
  decodeHeader,
  ElementType,
  encodeHeader,
  encodeHeaderInto,
  FLAG_COUNTS_PREFIX,
  FLAG_MORE,
  FLAG_PEER_DATA,
  FLAG_P2P_CHANNEL,
  FLAG_PAYLOAD,
  FRAME_HEADER_BYTES,
  HEADER_CHECKSUM_OFFSET,
  MAX_FRAME_PAYLOAD_BYTES,
  MAX_U64,
  Opcode,
  PROTOCOL_MAGIC,
  PROTOCOL_VERSION,
  UniqueId,
  type FrameHeader,
} from '../../lib/protocol/index.js';
import { arbFrame, fixChecksum, flipBit } from '../../lib/testing/index.js';

const ID = UniqueId.fromHex('00112233445566778899aabbccddeeff');

function header(fields: Partial<FrameHeader> = {}): FrameHeader {
  return {
    opcode: Opcode.AllReduce,
    elementType: ElementType.F32,
    reduceOp: 1,
    flags: FLAG_PAYLOAD,
    uniqueId: ID,
    sourceRank: 1,
    destinationRank: ANY_RANK,
    rootRank: ANY_RANK,
    worldSize: 4,
    sequence: 3n,
    tag: 0n,
    elementCount: 4,
    payloadBytes: 16,
    communicator: 0n,
    ...fields,
  };
}

/** Catches what `run` throws and checks it is a ProtocolError (code PROTOCOL) matching `message`. */
function expectProtocolError(run: () => unknown, message?: RegExp | string): ProtocolError {
  let caught: unknown;
  try {
    run();
  } catch (error) {
    caught = error;
  }
  expect(caught, 'expected a ProtocolError').toBeInstanceOf(ProtocolError);
  const error = caught as ProtocolError;
  expect(error.code).toBe('PROTOCOL');
  if (message !== undefined) expect(error.message).toMatch(message);
  return error;
}

/** Encodes `base`, lets `edit` change the bytes, rewrites the checksum and decodes. */
function decodeEdited(edit: (view: DataView, bytes: Uint8Array) => void, base: FrameHeader = header()): FrameHeader {
  const bytes = encodeHeader(base);
  edit(new DataView(bytes.buffer), bytes);
  fixChecksum(bytes);
  return decodeHeader(bytes);
}

describe('CRC-32C', () => {
  it('has the Castagnoli check value 0xE3069283 for "123456789"', () => {
    expect(crc32c(new TextEncoder().encode('123456789'))).toBe(0xe3069283);
    expect(crc32c(new Uint8Array(0))).toBe(0);
  });

  it('covers exactly bytes 0..92 of the header and is stored little-endian at 92', () => {
    const bytes = encodeHeader(header());
    const stored = new DataView(bytes.buffer).getUint32(HEADER_CHECKSUM_OFFSET, true);
    expect(stored).toBe(crc32c(bytes, 0, 92));
  });
});

describe('header round trip', () => {
  it('decodeHeader(encodeHeader(h)) deep-equals h for every valid header', () => {
    fc.assert(
      fc.property(arbFrame(), ({ header: h }) => {
        const bytes = encodeHeader(h);
        expect(bytes.length).toBe(FRAME_HEADER_BYTES);
        expect(decodeHeader(bytes)).toEqual(h);
      }),
      { numRuns: 400 },
    );
  });

  it('writes the fixed fields byte for byte', () => {
    fc.assert(
      fc.property(arbFrame(), ({ header: h }) => {
        const bytes = encodeHeader(h);
        const view = new DataView(bytes.buffer);
        expect(Buffer.from(bytes.subarray(0, 4)).toString('latin1')).toBe('GX1F');
        expect(view.getUint32(0, true)).toBe(PROTOCOL_MAGIC);
        expect(view.getUint16(4, true)).toBe(PROTOCOL_VERSION);
        expect(view.getUint16(6, true)).toBe(FRAME_HEADER_BYTES);
        expect(bytes[8]).toBe(h.opcode);
        expect(bytes[9]).toBe(h.elementType);
        expect(bytes[10]).toBe(h.reduceOp);
        expect(bytes[11]).toBe(0);
        expect(view.getUint16(12, true)).toBe(h.flags);
        expect(view.getUint16(14, true)).toBe(0);
        expect(Buffer.from(bytes.subarray(16, 32)).equals(Buffer.from(h.uniqueId.bytes))).toBe(true);
        expect(view.getUint32(32, true)).toBe(h.sourceRank);
        expect(view.getUint32(36, true)).toBe(h.destinationRank);
        expect(view.getUint32(40, true)).toBe(h.rootRank);
        expect(view.getUint32(44, true)).toBe(h.worldSize);
        expect(view.getBigUint64(48, true)).toBe(h.sequence);
        expect(view.getBigUint64(56, true)).toBe(h.tag);
        expect(view.getBigUint64(64, true)).toBe(BigInt(h.elementCount));
        expect(view.getBigUint64(72, true)).toBe(BigInt(h.payloadBytes));
        expect(view.getBigUint64(80, true)).toBe(h.communicator);
        expect([...bytes.subarray(88, 92)].every((byte) => byte === 0)).toBe(true);
      }),
      { numRuns: 100 },
    );
  });

  it('encodeHeaderInto writes at an offset without touching the bytes around it', () => {
    const h = header();
    const target = new Uint8Array(300).fill(0xaa);
    encodeHeaderInto(h, target, 101);
    expect(target[100]).toBe(0xaa);
    expect(target[197]).toBe(0xaa);
    expect(decodeHeader(target, 101)).toEqual(h);
    expect(Buffer.from(target.subarray(101, 197)).equals(Buffer.from(encodeHeader(h)))).toBe(true);
  });

  it('keeps u64 sequence and tag exact above 2^53 and at 2^64-1', () => {
    for (const value of [2n ** 53n + 1n, 2n ** 63n + 7n, MAX_U64]) {
      const h = header({ sequence: value, tag: MAX_U64 - value });
      expect(decodeHeader(encodeHeader(h))).toEqual(h);
    }
  });

  it('takes a communicator left out as the world (0), and names a u64 field given as anything but a bigint', () => {
    const { communicator: _, ...withoutCommunicator } = header({});
    expect(decodeHeader(encodeHeader(withoutCommunicator))).toEqual(header({ communicator: 0n }));
    expect(() => encodeHeader({ ...header({}), tag: 7 as unknown as bigint })).toThrow(new ProtocolError('header field tag is 7 (a number), expected a u64 bigint'));
    expect(() => encodeHeader({ ...header({}), sequence: undefined as unknown as bigint })).toThrow(new ProtocolError('header field sequence is undefined, expected a u64 bigint'));
    expect(() => encodeHeader({ ...header({}), communicator: -1n })).toThrow(new ProtocolError('header field communicator is -1, expected a u64'));
  });

  it('accepts ANY_RANK in each rank field and the largest world size', () => {
    const h = header({ sourceRank: ANY_RANK, worldSize: 0xffffffff, rootRank: 0xfffffffe });
    expect(decodeHeader(encodeHeader(h))).toEqual(h);
  });
});

describe('header corruption', () => {
  it('rejects every single-bit flip of a valid header with a ProtocolError', () => {
    const samples = fc.sample(arbFrame(), { numRuns: 12, seed: 42 });
    for (const { header: h } of samples) {
      const clean = encodeHeader(h);
      for (let bit = 0; bit < FRAME_HEADER_BYTES * 8; bit++) {
        const bytes = flipBit(clean, bit);
        expectProtocolError(() => decodeHeader(bytes));
      }
    }
  });

  it('names the field for each part of the fixed prefix', () => {
    expectProtocolError(() => decodeEdited((_view, bytes) => bytes.set([0x47, 0x58, 0x31, 0x47], 0)), 'header field magic starts 0x47583147, expected "GX1F" (47 58 31 46): not a GX1 stream');
    expectProtocolError(() => decodeEdited((view) => view.setUint16(6, 64, true)), 'header field headerBytes is 64, expected 96');
    const bytes = encodeHeader(header());
    bytes[50]! ^= 0x10;
    expectProtocolError(() => decodeHeader(bytes), /^header field checksum is 0x[0-9a-f]{8}, expected 0x[0-9a-f]{8} \(CRC-32C of bytes 0\.\.91\)$/);
  });

  it('names both versions when the version is unknown', () => {
    for (const version of [0, 2, 0xffff]) {
      expectProtocolError(
        () => decodeEdited((view) => view.setUint16(4, version, true)),
        `unsupported GX1 protocol version ${version}; this implementation speaks version ${PROTOCOL_VERSION}`,
      );
    }
  });

  it('rejects non-zero reserved bytes (11, 14, 15, 88..91) naming the first such byte and its value', () => {
    expectProtocolError(() => decodeEdited((view) => view.setUint8(11, 5)), 'header field reserved byte 11 is 5, expected 0');
    expectProtocolError(() => decodeEdited((view) => view.setUint16(14, 1, true)), 'header field reserved byte 14 is 1, expected 0');
    expectProtocolError(() => decodeEdited((view) => view.setUint16(14, 0x100, true)), 'header field reserved byte 15 is 1, expected 0');
    expectProtocolError(() => decodeEdited((view) => view.setUint16(14, 0x0302, true)), 'header field reserved byte 14 is 2, expected 0');
    for (let index = 88; index < 92; index++) {
      expectProtocolError(() => decodeEdited((view) => view.setUint8(index, 0x80)), `header field reserved byte ${index} is 128, expected 0`);
    }
  });

  it('rejects PEER_DATA on a frame that carries a payload', () => {
    expect(() => encodeHeader(header({ flags: FLAG_PAYLOAD | FLAG_PEER_DATA }))).toThrow(
      'header field flags.PEER_DATA is set, expected clear on a frame with payload',
    );
  });

  it('MORE: a fragment of a point-to-point Send or Receive, with whole elements fewer than it counts (10.7)', () => {
    const fragment = (fields: Partial<FrameHeader>) => header({ opcode: Opcode.Send, reduceOp: 0, flags: FLAG_PAYLOAD | FLAG_MORE, elementCount: 6, payloadBytes: 8, ...fields });
    expect(() => encodeHeader(fragment({}))).not.toThrow();
    expect(() => encodeHeader(fragment({ opcode: Opcode.Receive }))).not.toThrow();
    expect(() => encodeHeader(fragment({ flags: FLAG_MORE, payloadBytes: 0 }))).toThrow('header field flags.MORE is set, expected clear without a payload');
    expect(() => encodeHeader(fragment({ opcode: Opcode.AllGather }))).toThrow('header field flags.MORE is set, expected clear on opcode AllGather');
    expect(() => encodeHeader(fragment({ flags: FLAG_PAYLOAD | FLAG_MORE | FLAG_COUNTS_PREFIX }))).toThrow(
      'header field flags.MORE is set, expected clear on a frame with COUNTS_PREFIX',
    );
    expect(() => encodeHeader(fragment({ payloadBytes: 24 }))).toThrow('header field payloadBytes is 24, expected a multiple of 4 below 24 (a fragment of 6 x 4-byte elements)');
    expect(() => encodeHeader(fragment({ payloadBytes: 6 }))).toThrow('header field payloadBytes is 6, expected a multiple of 4 below 24 (a fragment of 6 x 4-byte elements)');
    // An empty fragment (it would only renew the lease) is refused by rule 15: a payload is never empty.
    expect(() => encodeHeader(fragment({ payloadBytes: 0 }))).toThrow('header field flags.PAYLOAD is set, expected clear for payloadBytes 0');
  });

  it('rejects unknown flag bits', () => {
    for (let bit = 5; bit < 16; bit++) {
      const flag = 1 << bit;
      expectProtocolError(
        () => decodeEdited((view) => view.setUint16(12, FLAG_PAYLOAD | flag, true)),
        `header field flags is 0x${(FLAG_PAYLOAD | flag).toString(16).padStart(4, '0')}, expected only bits 0x001f`,
      );
    }
  });

  it('rejects out-of-range opcode, element type and reduce op', () => {
    expectProtocolError(() => decodeEdited((view) => view.setUint8(8, 0)), 'header field opcode is 0, expected 1..23');
    expectProtocolError(() => decodeEdited((view) => view.setUint8(8, 24)), 'header field opcode is 24, expected 1..23');
    expectProtocolError(() => decodeEdited((view) => view.setUint8(9, 13)), 'header field elementType is 13, expected 0..12');
    expectProtocolError(() => decodeEdited((view) => view.setUint8(10, 9)), 'header field reduceOp is 9, expected 0..8');
  });

  it('rejects ranks >= worldSize (other than ANY_RANK) and worldSize 0', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 64 }),
        fc.constantFrom(32, 36, 40),
        fc.integer({ min: 0, max: 0xfffffffe }),
        (worldSize, offset, excess) => {
          const rank = Math.min(worldSize + excess, 0xfffffffe);
          const field = { 32: 'sourceRank', 36: 'destinationRank', 40: 'rootRank' }[offset]!;
          expectProtocolError(
            () =>
              decodeEdited((view) => {
                view.setUint32(44, worldSize, true);
                view.setUint32(32, 0, true);
                view.setUint32(offset, rank, true);
              }),
            `header field ${field} is ${rank}, expected < worldSize ${worldSize} or ANY_RANK`,
          );
        },
      ),
      { numRuns: 100 },
    );
    expectProtocolError(
      () =>
        decodeEdited((view) => {
          view.setUint32(32, ANY_RANK, true);
          view.setUint32(44, 0, true);
        }),
      'header field worldSize is 0, expected >= 1',
    );
  });

  it('rejects a PAYLOAD flag that disagrees with payloadBytes', () => {
    const empty = header({ elementType: ElementType.None, elementCount: 0, flags: 0, payloadBytes: 0 });
    expectProtocolError(
      () => decodeEdited((view) => view.setUint16(12, FLAG_PAYLOAD, true), empty),
      'header field flags.PAYLOAD is set, expected clear for payloadBytes 0',
    );
    expectProtocolError(
      () => decodeEdited((view) => view.setUint16(12, FLAG_P2P_CHANNEL, true)),
      'header field flags.PAYLOAD is clear, expected set for payloadBytes 16',
    );
  });

  it('rejects a payload size that is not count x element width', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1000 }), fc.integer({ min: 1, max: 64 }), (count, delta) => {
        const base = header({ elementType: ElementType.F64, elementCount: count, payloadBytes: count * 8 });
        const wrong = count * 8 + (delta % 2 === 0 ? delta : -Math.min(delta, count * 8 - 1));
        expectProtocolError(
          () => decodeEdited((view) => view.setBigUint64(72, BigInt(wrong), true), base),
          `header field payloadBytes is ${wrong}, expected ${count * 8} (${count} x 8-byte elements)`,
        );
      }),
      { numRuns: 100 },
    );
  });

  it('rejects counts-prefix sizes that omit the prefix, and a prefix without payload', () => {
    const prefixed = header({ opcode: Opcode.AllToAllV, elementType: ElementType.U16, worldSize: 3, elementCount: 5, flags: FLAG_PAYLOAD | FLAG_COUNTS_PREFIX, payloadBytes: 24 + 10 });
    expect(decodeHeader(encodeHeader(prefixed))).toEqual(prefixed);
    expectProtocolError(
      () => decodeEdited((view) => view.setBigUint64(72, 10n, true), prefixed),
      'header field payloadBytes is 10, expected 34 (3 x 8-byte counts + 5 x 2-byte elements)',
    );
    const empty = header({ elementType: ElementType.None, elementCount: 0, flags: 0, payloadBytes: 0 });
    expectProtocolError(
      () => decodeEdited((view) => view.setUint16(12, FLAG_COUNTS_PREFIX, true), empty),
      'header field flags.COUNTS_PREFIX is set, expected clear without a payload',
    );
  });

  it('rejects element type None with a count or a payload', () => {
    expectProtocolError(
      () => encodeHeader(header({ elementType: ElementType.None, elementCount: 3, flags: 0, payloadBytes: 0 })),
      'header field elementCount is 3, expected 0 for element type None',
    );
    expectProtocolError(
      () => encodeHeader(header({ elementType: ElementType.None, elementCount: 0, payloadBytes: 4 })),
      'header field elementType is None, expected a concrete type for a frame with payload',
    );
  });

  it('allows a typed count without payload (a receive or non-root contract)', () => {
    const contract = header({ opcode: Opcode.Receive, elementType: ElementType.F64, elementCount: Number.MAX_SAFE_INTEGER, flags: 0, payloadBytes: 0 });
    expect(decodeHeader(encodeHeader(contract))).toEqual(contract);
  });

  it('refuses payloadBytes above MAX_FRAME_PAYLOAD_BYTES and counts above 2^53-1', () => {
    for (const size of [BigInt(MAX_FRAME_PAYLOAD_BYTES) + 1n, 2n ** 40n, MAX_U64]) {
      expectProtocolError(
        () =>
          decodeEdited((view) => {
            view.setBigUint64(64, 1n, true);
            view.setBigUint64(72, size, true);
          }),
        `header field payloadBytes is ${size}, expected <= ${MAX_FRAME_PAYLOAD_BYTES}`,
      );
    }
    expectProtocolError(
      () => decodeEdited((view) => view.setBigUint64(64, 2n ** 53n, true)),
      `header field elementCount is ${2n ** 53n}, expected <= ${Number.MAX_SAFE_INTEGER}`,
    );
    const largest = header({ elementType: ElementType.U8, elementCount: MAX_FRAME_PAYLOAD_BYTES, payloadBytes: MAX_FRAME_PAYLOAD_BYTES });
    expect(decodeHeader(encodeHeader(largest))).toEqual(largest);
  });

  it('refuses fewer than 96 bytes', () => {
    expectProtocolError(() => decodeHeader(encodeHeader(header()).subarray(0, 95)), 'header field length is 95, expected 96 header bytes');
  });
});

describe('encoder validation', () => {
  it('refuses headers that the wire could not carry faithfully', () => {
    const cases: [Partial<FrameHeader>, string][] = [
      [{ sourceRank: -1 }, 'header field sourceRank is -1'],
      [{ destinationRank: 0.5 }, 'header field destinationRank is 0.5'],
      [{ rootRank: 4 }, 'header field rootRank is 4'],
      [{ worldSize: 0 }, 'header field worldSize is 0'],
      [{ worldSize: 2 ** 32 }, 'header field worldSize'],
      [{ flags: FLAG_PAYLOAD | 0x10000 }, 'header field flags'],
      [{ flags: -1 }, 'header field flags'],
      [{ sequence: -1n }, 'header field sequence is -1, expected a u64'],
      [{ tag: MAX_U64 + 1n }, 'header field tag is 18446744073709551616, expected a u64'],
      [{ elementCount: 1.5 }, 'header field elementCount is 1.5'],
      [{ elementCount: 2 ** 53 }, 'header field elementCount'],
      [{ payloadBytes: MAX_FRAME_PAYLOAD_BYTES + 4 }, 'header field payloadBytes'],
      [{ reduceOp: 1.5 }, 'header field reduceOp is 1.5'],
      [{ opcode: 99 as Opcode }, 'header field opcode is 99'],
    ];
    for (const [fields, message] of cases) expectProtocolError(() => encodeHeader(header(fields)), message);
  });
});
