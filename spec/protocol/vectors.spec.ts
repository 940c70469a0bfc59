import { readdirSync, readFileSync } from 'node:fs';
import { from } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { ProtocolError } from '../../lib/errors.js';
import {
  decodeFrames,
  decodeHeader,
  encodeHeader,
  FRAME_HEADER_BYTES,
  Opcode,
  UniqueId,
  validateFrame,
  type ElementType,
  type Frame,
  type FrameHeader,
} from '../../lib/protocol/index.js';

const DIRECTORY = new URL('../vectors/', import.meta.url);

interface VectorFields {
  opcode: number;
  elementType: number;
  reduceOp: number;
  flags: number;
  uniqueId: string;
  sourceRank: number;
  destinationRank: number;
  rootRank: number;
  worldSize: number;
  sequence: string;
  tag: string;
  elementCount: number;
  payloadBytes: number;
  payload: string;
  /** Bytes 80..87 (decimal string); absent: 0, the world. */
  communicator?: string;
}
interface ValidVector {
  name: string;
  description: string;
  hex: string;
  fields: VectorFields;
}
interface InvalidVector {
  name: string;
  description: string;
  hex: string;
  /** The exact ProtocolError message. */
  error: string;
  /** The header fields as they stand in the refused bytes, where a header can hold them. */
  fields?: VectorFields;
}

/** Every file holds vectors of either kind: an entry with `error` must be refused. */
const files = readdirSync(DIRECTORY)
  .filter((file) => file.endsWith('.json'))
  .sort();
const entries = files.flatMap((file) =>
  (JSON.parse(readFileSync(new URL(file, DIRECTORY), 'utf8')) as { vectors: (ValidVector | InvalidVector)[] }).vectors.map((vector) => ({ file, vector })),
);
const valid = entries.flatMap(({ file, vector }) => ('error' in vector ? [] : [{ file, vector }]));
const invalid = entries.flatMap(({ file, vector }) => ('error' in vector ? [{ file, vector }] : []));
const validFiles = [...new Set(valid.map(({ file }) => file))];

function headerOf(fields: VectorFields): FrameHeader {
  return {
    opcode: fields.opcode as Opcode,
    elementType: fields.elementType as ElementType,
    reduceOp: fields.reduceOp,
    flags: fields.flags,
    uniqueId: UniqueId.fromHex(fields.uniqueId),
    sourceRank: fields.sourceRank,
    destinationRank: fields.destinationRank,
    rootRank: fields.rootRank,
    worldSize: fields.worldSize,
    sequence: BigInt(fields.sequence),
    tag: BigInt(fields.tag),
    elementCount: fields.elementCount,
    payloadBytes: fields.payloadBytes,
    communicator: BigInt(fields.communicator ?? '0'),
  };
}

function fieldsOf(frame: Frame): VectorFields {
  const h = frame.header;
  return {
    opcode: h.opcode,
    elementType: h.elementType,
    reduceOp: h.reduceOp,
    flags: h.flags,
    uniqueId: h.uniqueId.toHex(),
    sourceRank: h.sourceRank,
    destinationRank: h.destinationRank,
    rootRank: h.rootRank,
    worldSize: h.worldSize,
    sequence: h.sequence.toString(),
    tag: h.tag.toString(),
    elementCount: h.elementCount,
    payloadBytes: h.payloadBytes,
    payload: Buffer.from(frame.payload).toString('hex'),
    ...(h.communicator === 0n ? {} : { communicator: h.communicator.toString() }),
  };
}

/** Decodes a whole hex stream: as one chunk, one byte at a time, or split at `split`. */
function decodeHex(hex: string, bytewise: boolean, split?: number): { frames: Frame[]; error?: unknown } {
  const bytes = new Uint8Array(Buffer.from(hex, 'hex'));
  const chunks =
    split !== undefined
      ? [bytes.subarray(0, split), bytes.subarray(split)]
      : bytewise
        ? Array.from(bytes, (_, index) => bytes.subarray(index, index + 1))
        : [bytes];
  const frames: Frame[] = [];
  let error: unknown;
  let ended = false;
  from(chunks)
    .pipe(decodeFrames())
    .subscribe({
      next: (frame) => frames.push(frame),
      error: (caught) => {
        error = caught;
        ended = true;
      },
      complete: () => {
        ended = true;
      },
    });
  expect(ended).toBe(true);
  return { frames, error };
}

describe('test vectors', () => {
  it('exist for every category', () => {
    expect(validFiles).toEqual(['auth.json', 'collectives.json', 'control.json', 'p2p.json', 'rules.json']);
    expect([...new Set(invalid.map(({ file }) => file))]).toEqual(['invalid.json', 'rules.json']);
    expect(valid.length).toBeGreaterThan(20);
    expect(invalid.length).toBeGreaterThan(20);
    // Every opcode has a vector.
    const covered = new Set(valid.map(({ vector }) => vector.fields.opcode));
    const expected = Object.values(Opcode).filter((code): code is Opcode => typeof code === 'number');
    for (const opcode of expected) expect(covered, Opcode[opcode]).toContain(opcode);
    expect(new Set(entries.map(({ vector }) => vector.name)).size).toBe(entries.length);
  });

  describe.each(valid.map(({ file, vector }) => [`${file}: ${vector.name}`, vector] as const))('%s', (_label, vector) => {
    it('decodes to its fields (whole and byte by byte)', () => {
      for (const bytewise of [false, true]) {
        const { frames, error } = decodeHex(vector.hex, bytewise);
        expect(error).toBeUndefined();
        expect(frames).toHaveLength(1);
        expect(fieldsOf(frames[0]!)).toEqual(vector.fields);
        validateFrame(frames[0]!);
      }
      for (let split = 1; split < vector.hex.length / 2; split++) {
        const { frames } = decodeHex(vector.hex, false, split);
        expect(frames.map(fieldsOf), `split at byte ${split}`).toEqual([vector.fields]);
      }
      expect(decodeHeader(new Uint8Array(Buffer.from(vector.hex, 'hex')))).toEqual(headerOf(vector.fields));
    });

    it('encodes from its fields to exactly its hex', () => {
      const header = encodeHeader(headerOf(vector.fields));
      const encoded = Buffer.concat([header, Buffer.from(vector.fields.payload, 'hex')]).toString('hex');
      expect(encoded).toBe(vector.hex);
      expect(vector.hex.length / 2).toBe(FRAME_HEADER_BYTES + vector.fields.payloadBytes);
    });
  });

  describe.each(invalid.map(({ file, vector }) => [`${file}: ${vector.name}`, vector] as const))('invalid %s', (_label, vector) => {
    it('is refused with exactly its ProtocolError message (whole and byte by byte)', () => {
      for (const bytewise of [false, true]) {
        const { frames, error } = decodeHex(vector.hex, bytewise);
        expect(frames).toHaveLength(0);
        expect(error).toBeInstanceOf(ProtocolError);
        expect((error as ProtocolError).code).toBe('PROTOCOL');
        expect((error as Error).message).toBe(vector.error);
      }
    });

    it('is refused with the same message wherever the stream is split in two', () => {
      for (let split = 1; split < vector.hex.length / 2; split++) {
        const { error } = decodeHex(vector.hex, false, split);
        expect((error as Error).message, `split at byte ${split}`).toBe(vector.error);
      }
    });

    const fields = vector.fields;
    if (fields === undefined) return;
    it('is refused by the encoder too, with the same message', () => {
      expect(Buffer.from(vector.hex, 'hex').subarray(FRAME_HEADER_BYTES).toString('hex')).toBe(fields.payload);
      expect(() => encodeHeader(headerOf(fields))).toThrow(new ProtocolError(vector.error));
    });
  });
});
