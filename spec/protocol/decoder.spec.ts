import fc from 'fast-check';
import { from, Subject, toArray, lastValueFrom } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { ProtocolError } from '../../lib/errors.js';
import {
  decodeFrames,
  ElementType,
  encodeCounts,
  encodeHeader,
  FLAG_COUNTS_PREFIX,
  FLAG_PAYLOAD,
  FRAME_HEADER_BYTES,
  FrameDecoder,
  frameText,
  makeFrame,
  MAX_FRAME_PAYLOAD_BYTES,
  Opcode,
  PROTOCOL_VERSION,
  readCountsPrefix,
  UniqueId,
  validateFrame,
  type Frame,
} from '../../lib/protocol/index.js';
import { arbFrame, concatBytes, fixChecksum, flipBit, frameBytes, splitAt } from '../../lib/testing/index.js';

const ID = UniqueId.fromHex('00112233445566778899aabbccddeeff');

/** Runs chunks through decodeFrames synchronously and reports exactly how the stream ended. */
function runOperator(chunks: readonly Uint8Array[]): { frames: Frame[]; ended: 'complete' | 'error' | 'open'; error?: unknown } {
  const frames: Frame[] = [];
  let ended: 'complete' | 'error' | 'open' = 'open';
  let error: unknown;
  from(chunks)
    .pipe(decodeFrames())
    .subscribe({
      next: (frame) => frames.push(frame),
      error: (caught) => {
        ended = 'error';
        error = caught;
      },
      complete: () => {
        ended = 'complete';
      },
    });
  return { frames, ended, error };
}

function expectSameFrame(actual: Frame, expected: Frame): void {
  expect(actual.header).toEqual(expected.header);
  expect(Buffer.from(actual.payload).equals(Buffer.from(expected.payload))).toBe(true);
}

/** Start offsets of each chunk within the stream. */
function chunkStarts(chunks: readonly Uint8Array[]): number[] {
  const starts: number[] = [];
  let offset = 0;
  for (const chunk of chunks) {
    starts.push(offset);
    offset += chunk.length;
  }
  return starts;
}

/** Index of the chunk holding stream byte `position`. */
function chunkAt(starts: readonly number[], position: number): number {
  let index = 0;
  while (index + 1 < starts.length && starts[index + 1]! <= position) index++;
  return index;
}

/** The zero-copy rule: a payload inside one chunk is a view of it, else a fresh exact buffer. */
function expectCopyRule(frames: readonly Frame[], chunks: readonly Uint8Array[]): void {
  const starts = chunkStarts(chunks);
  let position = 0;
  for (const frame of frames) {
    const start = position + FRAME_HEADER_BYTES;
    const end = start + frame.payload.length;
    position = end;
    if (frame.payload.length === 0) continue;
    const first = chunkAt(starts, start);
    const last = chunkAt(starts, end - 1);
    if (first === last) {
      expect(frame.payload.buffer, 'payload inside one chunk must be a view of it').toBe(chunks[first]!.buffer);
      expect(frame.payload.byteOffset).toBe(chunks[first]!.byteOffset + start - starts[first]!);
    } else {
      expect(frame.payload.byteOffset).toBe(0);
      expect(frame.payload.buffer.byteLength, 'spanning payload is copied into an exact-size buffer').toBe(frame.payload.length);
      for (const chunk of chunks) expect(frame.payload.buffer).not.toBe(chunk.buffer);
    }
  }
}

const arbStream = fc.array(arbFrame(), { minLength: 1, maxLength: 5 });

/** Cut points for a stream of `length` bytes: none, 1-byte chunks, or arbitrary cuts. */
const arbCuts = (length: number): fc.Arbitrary<number[]> =>
  fc.oneof(
    { weight: 1, arbitrary: fc.constant(Array.from({ length }, (_, index) => index)) },
    { weight: 1, arbitrary: fc.constant<number[]>([]) },
    { weight: 6, arbitrary: fc.array(fc.integer({ min: 1, max: Math.max(1, length - 1) }), { maxLength: 24 }) },
  );

describe('decodeFrames round trip', () => {
  it('gives back identical header fields and payload bytes for any valid frame', () => {
    fc.assert(
      fc.property(arbFrame(), (frame) => {
        const result = runOperator([frameBytes(frame)]);
        expect(result.ended).toBe('complete');
        expect(result.frames).toHaveLength(1);
        expectSameFrame(result.frames[0]!, frame);
        validateFrame(result.frames[0]!);
      }),
      { numRuns: 300 },
    );
  });

  it('decodes any chunking of a multi-frame stream to the same frames, honouring the copy rule', () => {
    fc.assert(
      fc.property(
        arbStream.chain((frames) => {
          const bytes = concatBytes(frames.map(frameBytes));
          return fc.tuple(fc.constant(frames), fc.constant(bytes), arbCuts(bytes.length));
        }),
        ([frames, bytes, cuts]) => {
          const chunks = splitAt(bytes, cuts);
          const result = runOperator(chunks);
          expect(result.error).toBeUndefined();
          expect(result.ended).toBe('complete');
          expect(result.frames).toHaveLength(frames.length);
          result.frames.forEach((frame, index) => expectSameFrame(frame, frames[index]!));
          expectCopyRule(result.frames, chunks);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('hands out a view when a header-only chunk is followed by the whole payload', () => {
    const frame = makeFrame({ uniqueId: ID, opcode: Opcode.AllGather, worldSize: 2, elementType: ElementType.U32, elementCount: 3 }, new Uint8Array(12).fill(5));
    const header = encodeHeader(frame.header);
    const payload = frame.payload.slice();
    const decoder = new FrameDecoder();
    const out: Frame[] = [];
    decoder.push(header, (f) => out.push(f));
    expect(out).toHaveLength(0);
    expect(decoder.pendingBytes).toBe(FRAME_HEADER_BYTES);
    decoder.push(payload, (f) => out.push(f));
    expect(out).toHaveLength(1);
    expect(out[0]!.payload.buffer).toBe(payload.buffer);
    expect(decoder.pendingBytes).toBe(0);
    decoder.end();
  });

  it('accepts pooled Node Buffers as chunks (views share the pool)', () => {
    const frame = makeFrame({ uniqueId: ID, opcode: Opcode.Send, worldSize: 2, destinationRank: 1, elementType: ElementType.U8, elementCount: 5 }, new Uint8Array([1, 2, 3, 4, 5]));
    const chunk = Buffer.from(frameBytes(frame));
    const { frames } = runOperator([chunk]);
    expect(frames[0]!.payload.buffer).toBe(chunk.buffer);
    expect([...frames[0]!.payload]).toEqual([1, 2, 3, 4, 5]);
  });

  it('reads counts-prefix payloads back as counts and element data', () => {
    fc.assert(
      fc.property(fc.array(fc.nat(6), { minLength: 1, maxLength: 8 }), (counts) => {
        const total = counts.reduce((a, b) => a + b, 0);
        const data = Uint8Array.from({ length: total * 2 }, (_, index) => index & 0xff);
        const payload = concatBytes([encodeCounts(counts), data]);
        const frame = makeFrame(
          { uniqueId: ID, opcode: Opcode.AllToAllV, worldSize: counts.length, elementType: ElementType.I16, elementCount: total, flags: FLAG_COUNTS_PREFIX },
          payload,
        );
        const { frames } = runOperator(splitAt(frameBytes(frame), [50, 100, 101]));
        const prefix = readCountsPrefix(frames[0]!.payload, counts.length);
        expect(prefix.counts).toEqual(counts);
        expect(prefix.total).toBe(total);
        expect(Buffer.from(prefix.data).equals(Buffer.from(data))).toBe(true);
      }),
      { numRuns: 100 },
    );
  });

  it('keeps UTF-8 abort text intact across chunk boundaries', () => {
    const text = 'rank 3 failed: données ✗ 🚫';
    const payload = new Uint8Array(Buffer.from(text, 'utf8'));
    const frame = makeFrame({ uniqueId: ID, opcode: Opcode.Abort, worldSize: 4, sourceRank: 3, elementType: ElementType.U8, elementCount: payload.length }, payload);
    const bytes = frameBytes(frame);
    for (let cut = 1; cut < bytes.length; cut++) {
      const { frames } = runOperator(splitAt(bytes, [cut]));
      expect(frameText(frames[0]!)).toBe(text);
    }
  });
});

/** A byte stream that is invalid or truncated somewhere, built to reach every validation step. */
const arbCorruptStream: fc.Arbitrary<Uint8Array> = fc.oneof(
  // Pure noise.
  fc.uint8Array({ maxLength: 400 }),
  // Noise behind a correct magic and version (passes the early prefix check).
  fc.uint8Array({ maxLength: 400 }).map((tail) => concatBytes([new Uint8Array([0x47, 0x58, 0x31, 0x46, PROTOCOL_VERSION, 0]), tail])),
  // Random header fields with a correct fixed prefix, zero reserved bytes and a correct checksum.
  fc.tuple(fc.uint8Array({ minLength: 72, maxLength: 72 }), fc.uint8Array({ maxLength: 200 })).map(([fields, tail]) => {
    const header = new Uint8Array(FRAME_HEADER_BYTES);
    header.set([0x47, 0x58, 0x31, 0x46, PROTOCOL_VERSION, 0, FRAME_HEADER_BYTES, 0], 0);
    header.set(fields, 8);
    header.fill(0, 80, 92);
    return concatBytes([fixChecksum(header), tail]);
  }),
  // A valid stream with bytes overwritten (optionally re-checksummed), truncated or extended.
  arbStream.chain((frames) => {
    const bytes = concatBytes(frames.map(frameBytes));
    return fc
      .record({
        edits: fc.array(fc.tuple(fc.nat(bytes.length - 1), fc.integer({ min: 0, max: 255 })), { maxLength: 4 }),
        recheck: fc.boolean(),
        keep: fc.integer({ min: 0, max: bytes.length }),
        extra: fc.uint8Array({ maxLength: 40 }),
      })
      .map(({ edits, recheck, keep, extra }) => {
        const copy = bytes.slice();
        for (const [at, value] of edits) copy[at] = value;
        if (recheck) fixChecksum(copy);
        return concatBytes([copy.subarray(0, keep), extra]);
      });
  }),
);

describe('decoding corrupt input', () => {
  it('only ever fails with ProtocolError and always terminates (errors, or waits for bytes)', () => {
    fc.assert(
      fc.property(
        arbCorruptStream.chain((bytes) => fc.tuple(fc.constant(bytes), arbCuts(bytes.length))),
        ([bytes, cuts]) => {
          const chunks = splitAt(bytes, cuts);
          // The decoder itself: every push returns or throws a ProtocolError.
          const decoder = new FrameDecoder();
          let failure: unknown;
          for (const chunk of chunks) {
            try {
              decoder.push(chunk, () => undefined);
            } catch (error) {
              failure = error;
              break;
            }
          }
          if (failure !== undefined) {
            expect(failure).toBeInstanceOf(ProtocolError);
            expect((failure as ProtocolError).code).toBe('PROTOCOL');
          } else if (decoder.pendingBytes > 0) {
            expect(() => decoder.end()).toThrow(/stream ended inside a frame/);
          } else {
            decoder.end();
          }
          // The operator over a finite synchronous source always ends, and agrees with the decoder.
          const result = runOperator(chunks);
          expect(result.ended).not.toBe('open');
          if (result.ended === 'error') {
            expect(result.error).toBeInstanceOf(ProtocolError);
            expect((result.error as ProtocolError).code).toBe('PROTOCOL');
          }
          expect(result.ended === 'error').toBe(failure !== undefined || decoder.pendingBytes > 0);
        },
      ),
      { numRuns: 400 },
    );
  });

  it('errors with "stream ended inside a frame" when the source completes mid-frame', () => {
    fc.assert(
      fc.property(
        arbStream.chain((frames) => {
          const bytes = concatBytes(frames.map(frameBytes));
          return fc.tuple(fc.constant(frames), fc.constant(bytes), fc.integer({ min: 1, max: bytes.length - 1 }), arbCuts(bytes.length));
        }),
        ([frames, bytes, keep, cuts]) => {
          const boundaries = new Set<number>();
          let offset = 0;
          for (const frame of frames) boundaries.add((offset += FRAME_HEADER_BYTES + frame.payload.length));
          const result = runOperator(splitAt(bytes.subarray(0, keep), cuts));
          if (boundaries.has(keep)) {
            expect(result.ended).toBe('complete');
          } else {
            expect(result.ended).toBe('error');
            expect(result.error).toBeInstanceOf(ProtocolError);
            expect((result.error as Error).message).toMatch(/^stream ended inside a frame: \d+ of \d+ bytes received$/);
          }
        },
      ),
      { numRuns: 150 },
    );
  });

  it('rejects every single-bit flip of a header pushed through the decoder', () => {
    const frame = makeFrame({ uniqueId: ID, opcode: Opcode.AllReduce, worldSize: 4, sourceRank: 2, elementType: ElementType.F32, reduceOp: 1, elementCount: 2, sequence: 9n, tag: 77n }, new Uint8Array(8).fill(1));
    const clean = frameBytes(frame);
    for (let bit = 0; bit < FRAME_HEADER_BYTES * 8; bit++) {
      for (const split of [false, true]) {
        const bytes = flipBit(clean, bit);
        const result = runOperator(split ? splitAt(bytes, Array.from({ length: 96 }, (_, i) => i)) : [bytes]);
        expect(result.ended, `bit ${bit}`).toBe('error');
        expect(result.error).toBeInstanceOf(ProtocolError);
        expect(result.frames).toHaveLength(0);
      }
    }
  });

  it('refuses a foreign stream from its first differing byte', () => {
    const decoder = new FrameDecoder();
    decoder.push(new Uint8Array([0x47]), () => undefined); // 'G' matches the magic so far
    expect(() => decoder.push(new Uint8Array([0x45]), () => undefined)).toThrow(/header field magic starts 0x4745, expected "GX1F"/);
  });

  it('refuses an unknown version as soon as the 6 version bytes arrived, naming both versions', () => {
    const decoder = new FrameDecoder();
    let error: unknown;
    try {
      decoder.push(new Uint8Array([0x47, 0x58, 0x31, 0x46, 0x02, 0x00]), () => undefined);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ProtocolError);
    expect((error as Error).message).toBe(`unsupported GX1 protocol version 2; this implementation speaks version ${PROTOCOL_VERSION}`);
  });

  it('stays failed after a ProtocolError (the stream has lost its framing)', () => {
    const decoder = new FrameDecoder();
    const bad = new Uint8Array(96);
    let first: unknown;
    try {
      decoder.push(bad, () => undefined);
    } catch (caught) {
      first = caught;
    }
    expect(first).toBeInstanceOf(ProtocolError);
    const good = frameBytes(makeFrame({ uniqueId: ID, opcode: Opcode.Barrier, worldSize: 1 }));
    let second: unknown;
    try {
      decoder.push(good, () => undefined);
    } catch (caught) {
      second = caught;
    }
    expect(second).toBe(first);
  });
});

describe('payload size limit', () => {
  /** A header that declares `size` payload bytes of U8 (checksum correct). */
  function oversizeHeader(size: bigint): Uint8Array {
    const base = makeFrame({ uniqueId: ID, opcode: Opcode.Send, worldSize: 2, destinationRank: 1, elementType: ElementType.U8, elementCount: 1 }, new Uint8Array(1));
    const bytes = encodeHeader(base.header);
    const view = new DataView(bytes.buffer);
    view.setBigUint64(64, size <= BigInt(Number.MAX_SAFE_INTEGER) ? size : 1n, true);
    view.setBigUint64(72, size, true);
    return fixChecksum(bytes);
  }

  it('rejects payloadBytes > MAX_FRAME_PAYLOAD_BYTES with only the header pushed, allocating nothing', () => {
    for (const size of [BigInt(MAX_FRAME_PAYLOAD_BYTES) + 1n, 2n ** 40n, 2n ** 64n - 1n]) {
      for (const split of [false, true]) {
        const header = oversizeHeader(size);
        const chunks = split ? [header.subarray(0, 95), header.subarray(95)] : [header];
        const before = process.memoryUsage().arrayBuffers;
        const result = runOperator(chunks);
        const grown = process.memoryUsage().arrayBuffers - before;
        expect(result.ended).toBe('error');
        expect((result.error as Error).message).toBe(`header field payloadBytes is ${size}, expected <= ${MAX_FRAME_PAYLOAD_BYTES}`);
        expect(grown).toBeLessThan(16 * 1024 * 1024);
      }
    }
  });

  it('errors the operator synchronously when the oversize header arrives, before any payload byte', () => {
    const source = new Subject<Uint8Array>();
    let error: unknown;
    source.pipe(decodeFrames()).subscribe({ error: (caught) => (error = caught) });
    source.next(oversizeHeader(BigInt(MAX_FRAME_PAYLOAD_BYTES) * 2n));
    expect(error).toBeInstanceOf(ProtocolError);
  });

  it('accepts a header declaring exactly MAX_FRAME_PAYLOAD_BYTES and allocates nothing until payload bytes arrive', () => {
    const decoder = new FrameDecoder();
    const before = process.memoryUsage().arrayBuffers;
    decoder.push(oversizeHeader(BigInt(MAX_FRAME_PAYLOAD_BYTES)), () => undefined);
    expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(16 * 1024 * 1024);
    expect(decoder.pendingBytes).toBe(FRAME_HEADER_BYTES);
    expect(() => decoder.end()).toThrow(`stream ended inside a frame: 96 of ${FRAME_HEADER_BYTES + MAX_FRAME_PAYLOAD_BYTES} bytes received`);
  });
});

describe('counts prefix and payload checks', () => {
  it('rejects a counts prefix whose sum differs from elementCount, naming both values', () => {
    fc.assert(
      fc.property(fc.array(fc.nat(5), { minLength: 1, maxLength: 6 }), fc.integer({ min: 1, max: 5 }), fc.nat(), (counts, bump, pick) => {
        const total = counts.reduce((a, b) => a + b, 0);
        const payload = concatBytes([encodeCounts(counts), new Uint8Array(total * 4)]);
        const frame = makeFrame({ uniqueId: ID, opcode: Opcode.AllToAllV, worldSize: counts.length, elementType: ElementType.F32, elementCount: total, flags: FLAG_COUNTS_PREFIX }, payload);
        const bytes = frameBytes(frame);
        // Move `bump` elements between two counts (or onto one count): the sizes still agree, the sum does not.
        const index = pick % counts.length;
        const forged = counts.map((count, rank) => (rank === index ? count + bump : count));
        bytes.set(encodeCounts(forged), FRAME_HEADER_BYTES);
        const result = runOperator(splitAt(bytes, [pick % bytes.length]));
        expect(result.ended).toBe('error');
        expect((result.error as Error).message).toBe(`counts prefix sums to ${total + bump}, header field elementCount is ${total}`);
      }),
      { numRuns: 100 },
    );
  });

  it('rejects a count in the prefix above 2^53-1', () => {
    const payload = concatBytes([encodeCounts([0, 0]), new Uint8Array(0)]);
    new DataView(payload.buffer).setBigUint64(8, 2n ** 60n, true);
    const frame = { header: { ...makeFrame({ uniqueId: ID, opcode: Opcode.AllToAllV, worldSize: 2, elementType: ElementType.U8, flags: FLAG_COUNTS_PREFIX }, new Uint8Array(16)).header }, payload };
    expect(() => validateFrame(frame)).toThrow(/all-to-all-v count for rank 1 is 1152921504606846976, too large/);
  });

  it('validateFrame rejects a payload whose length disagrees with the header', () => {
    const frame = makeFrame({ uniqueId: ID, opcode: Opcode.Send, worldSize: 2, destinationRank: 0, elementType: ElementType.U8, elementCount: 2 }, new Uint8Array(2));
    expect(() => validateFrame({ header: frame.header, payload: new Uint8Array(3) })).toThrow('frame payload has 3 bytes, header declares 2');
  });

  it('makeFrame derives PAYLOAD from the payload and validates', () => {
    const empty = makeFrame({ uniqueId: ID, opcode: Opcode.Receive, worldSize: 2, elementType: ElementType.F64, elementCount: 4, flags: FLAG_PAYLOAD });
    expect(empty.header.flags & FLAG_PAYLOAD).toBe(0);
    expect(() => makeFrame({ uniqueId: ID, opcode: Opcode.Send, worldSize: 2, elementType: ElementType.F64, elementCount: 1 }, new Uint8Array(7))).toThrow(ProtocolError);
  });
});

describe('decodeFrames operator', () => {
  it('passes source errors through and decodes frames emitted as they complete', async () => {
    const frame = makeFrame({ uniqueId: ID, opcode: Opcode.Heartbeat, worldSize: 3, sourceRank: 2, sequence: 12n });
    const bytes = frameBytes(frame);
    await expect(lastValueFrom(from([bytes, bytes]).pipe(decodeFrames(), toArray()))).resolves.toHaveLength(2);
    const source = new Subject<Uint8Array>();
    const seen: Frame[] = [];
    let error: unknown;
    source.pipe(decodeFrames()).subscribe({ next: (f) => seen.push(f), error: (caught) => (error = caught) });
    source.next(bytes.subarray(0, 40));
    expect(seen).toHaveLength(0);
    source.next(bytes.subarray(40));
    expect(seen).toHaveLength(1);
    const boom = new Error('socket reset');
    source.error(boom);
    expect(error).toBe(boom);
  });

  it('gives each subscriber its own decoder state', () => {
    const bytes = frameBytes(makeFrame({ uniqueId: ID, opcode: Opcode.Leave, worldSize: 1 }));
    const stream = from(splitAt(bytes, [10, 60])).pipe(decodeFrames());
    const a: Frame[] = [];
    const b: Frame[] = [];
    stream.subscribe((f) => a.push(f));
    stream.subscribe((f) => b.push(f));
    expect(a).toHaveLength(1);
    expect(b).toHaveLength(1);
  });
});
