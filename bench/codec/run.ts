/**
 * GX1 codec benchmark: `npx tsx bench/codec/run.ts [--json] [--reps N]`.
 *
 * - small frames: header encode (encodeHeaderInto), decode (FrameDecoder over 64 KiB chunks of
 *   back-to-back frames) and encode+decode of one frame at a time, in frames/s;
 * - large payload: one 64 MiB frame arriving in 64 KiB chunks through FrameDecoder and through the
 *   decodeFrames() operator, beside a plain Buffer.copy of the same bytes in the same run.
 *
 * Each figure is the median of --reps timed repetitions after one warm-up, each after a full GC.
 */
import { performance } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { from } from 'rxjs';
import {
  decodeFrames,
  ElementType,
  encodeHeader,
  encodeHeaderInto,
  FRAME_HEADER_BYTES,
  FrameDecoder,
  makeFrame,
  Opcode,
  UniqueId,
  type Frame,
} from '../../lib/protocol/index.js';
import { BufferPool } from '../../lib/transport/buffer-pool.js';

const args = process.argv.slice(2);
const json = args.includes('--json');
const repsIndex = args.indexOf('--reps');
const REPS = repsIndex >= 0 ? Number(args[repsIndex + 1]) : 7;
const CHUNK = 64 * 1024;
const LARGE = 64 * 1024 * 1024;
const SMALL_FRAMES = 200_000;

const ID = UniqueId.fromHex('00112233445566778899aabbccddeeff');

// A full GC before each timed repetition, so that every case starts from the same heap state
// (garbage 64 MiB buffers of the previous case would otherwise be collected inside a later one).
setFlagsFromString('--expose-gc');
const collect = runInNewContext('gc') as () => void;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[sorted.length >> 1]!;
}

/** Runs `body` once to warm up, then REPS times; returns the median seconds. */
function time(body: () => void): number {
  body();
  const samples: number[] = [];
  for (let rep = 0; rep < REPS; rep++) {
    collect();
    const start = performance.now();
    body();
    samples.push((performance.now() - start) / 1000);
  }
  return median(samples);
}

/** Splits `bytes` into CHUNK-sized chunks, each in its own ArrayBuffer (as a socket delivers). */
function chunked(bytes: Uint8Array): Buffer[] {
  const chunks: Buffer[] = [];
  for (let offset = 0; offset < bytes.length; offset += CHUNK) {
    chunks.push(Buffer.from(bytes.subarray(offset, Math.min(bytes.length, offset + CHUNK))));
  }
  return chunks;
}

interface Row {
  readonly case: string;
  readonly value: number;
  readonly unit: string;
  readonly note: string;
}
const rows: Row[] = [];

// ---- small frames ----------------------------------------------------------------------
const small = makeFrame(
  { uniqueId: ID, opcode: Opcode.AllReduce, worldSize: 4, sourceRank: 1, elementType: ElementType.F32, reduceOp: 1, elementCount: 2, sequence: 1n },
  new Uint8Array(8),
);
const smallBytes = FRAME_HEADER_BYTES + small.payload.length;
const stream = new Uint8Array(SMALL_FRAMES * smallBytes);
{
  let seconds = time(() => {
    for (let index = 0; index < SMALL_FRAMES; index++) {
      const offset = index * smallBytes;
      encodeHeaderInto({ ...small.header, sequence: BigInt(index) }, stream, offset);
      stream.set(small.payload, offset + FRAME_HEADER_BYTES);
    }
  });
  rows.push({ case: 'encode small frame (96 B header + 8 B)', value: SMALL_FRAMES / seconds, unit: 'frames/s', note: 'encodeHeaderInto + payload copy' });

  const chunks = chunked(stream);
  let decoded = 0;
  seconds = time(() => {
    decoded = 0;
    const decoder = new FrameDecoder();
    for (const chunk of chunks) decoder.push(chunk, () => void decoded++);
    decoder.end();
  });
  if (decoded !== SMALL_FRAMES) throw new Error(`decoded ${decoded} of ${SMALL_FRAMES} small frames`);
  rows.push({ case: 'decode small frames (64 KiB chunks)', value: SMALL_FRAMES / seconds, unit: 'frames/s', note: 'FrameDecoder, header validation + CRC' });

  const one = new Uint8Array(smallBytes);
  seconds = time(() => {
    const decoder = new FrameDecoder();
    let last: Frame | undefined;
    for (let index = 0; index < SMALL_FRAMES / 4; index++) {
      one.set(encodeHeader({ ...small.header, sequence: BigInt(index) }), 0);
      one.set(small.payload, FRAME_HEADER_BYTES);
      decoder.push(one, (frame) => (last = frame));
    }
    if (last === undefined) throw new Error('no frame');
  });
  rows.push({ case: 'encode+decode round trip, one frame at a time', value: SMALL_FRAMES / 4 / seconds, unit: 'frames/s', note: 'encodeHeader (allocating) + push' });
}

// ---- large payload ---------------------------------------------------------------------
{
  const payload = new Uint8Array(LARGE);
  for (let index = 0; index < LARGE; index += 4096) payload[index] = index & 0xff;
  const frame = makeFrame({ uniqueId: ID, opcode: Opcode.Send, worldSize: 2, destinationRank: 1, elementType: ElementType.U8, elementCount: LARGE }, payload);
  const bytes = new Uint8Array(FRAME_HEADER_BYTES + LARGE);
  bytes.set(encodeHeader(frame.header), 0);
  bytes.set(payload, FRAME_HEADER_BYTES);
  const chunks = chunked(bytes);
  const gb = (seconds: number) => bytes.length / seconds / 1e9;

  // Baseline 1: Buffer.copy of the same chunks into one preallocated buffer (what the decoder must do at least).
  const target = Buffer.allocUnsafe(bytes.length);
  const copyPre = time(() => {
    let offset = 0;
    for (const chunk of chunks) offset += chunk.copy(target, offset);
  });
  // Baseline 2: the same, into a freshly allocated buffer each time (the decoder allocates per frame).
  const copyFresh = time(() => {
    const fresh = Buffer.alloc(bytes.length);
    let offset = 0;
    for (const chunk of chunks) offset += chunk.copy(fresh, offset);
  });
  let out: Frame | undefined;
  const decoder = time(() => {
    const decoding = new FrameDecoder();
    for (const chunk of chunks) decoding.push(chunk, (decoded) => (out = decoded));
    decoding.end();
  });
  if (out === undefined || out.payload.length !== LARGE || out.payload[4096] !== (4096 & 0xff)) throw new Error('large frame not decoded');
  // The decoder assembling into recycled memory (its allocate hook, as the session and the mesh use
  // it with a BufferPool): the same work as the warm copy plus header handling.
  const pool = new BufferPool();
  const pooled = time(() => {
    const decoding = new FrameDecoder((header) => pool.take(header.payloadBytes));
    for (const chunk of chunks) decoding.push(chunk, (decoded) => pool.give(decoded.payload));
    decoding.end();
  });
  const operator = time(() => {
    let frames = 0;
    from(chunks)
      .pipe(decodeFrames())
      .subscribe({ next: () => void frames++, error: (error: unknown) => { throw error; } });
    if (frames !== 1) throw new Error('operator did not emit the large frame');
  });
  // The same 64 MiB as 64 frames of 1 MiB (a pipelined transfer): the allocator can recycle warm memory.
  const piece = 1024 * 1024;
  const pieces: Uint8Array[] = [];
  for (let offset = 0; offset < LARGE; offset += piece) {
    const part = makeFrame({ uniqueId: ID, opcode: Opcode.Send, worldSize: 2, destinationRank: 1, elementType: ElementType.U8, elementCount: piece }, payload.subarray(offset, offset + piece));
    pieces.push(encodeHeader(part.header), part.payload);
  }
  const pieceChunks = chunked(Buffer.concat(pieces));
  const pieceBytes = pieceChunks.reduce((total, chunk) => total + chunk.length, 0);
  const piecewisePooled = time(() => {
    const decoding = new FrameDecoder((header) => pool.take(header.payloadBytes));
    for (const chunk of pieceChunks) decoding.push(chunk, (decoded) => pool.give(decoded.payload));
    decoding.end();
  });
  const piecewise = time(() => {
    let frames = 0;
    const decoding = new FrameDecoder();
    for (const chunk of pieceChunks) decoding.push(chunk, () => void frames++);
    decoding.end();
    if (frames !== LARGE / piece) throw new Error('1 MiB frames not decoded');
  });
  const pieceCopy = time(() => {
    let offset = 0;
    for (const chunk of pieceChunks) offset += chunk.copy(target, offset % bytes.length);
  });
  const pieceFresh = time(() => {
    let fresh = new Uint8Array(0);
    let fill = piece;
    for (const chunk of pieceChunks) {
      // Same work as the decoder minus header parsing: a fresh exact-size buffer per 1 MiB payload.
      if (fill >= piece) {
        fresh = new Uint8Array(piece);
        fill = 0;
      }
      const take = Math.min(piece - fill, chunk.length);
      fresh.set(chunk.subarray(0, take), fill);
      fill += take;
    }
  });
  rows.push({ case: 'Buffer.copy 64 MiB in 64 KiB chunks, preallocated target', value: gb(copyPre), unit: 'GB/s', note: 'baseline' });
  rows.push({ case: 'Buffer.copy 64 MiB in 64 KiB chunks, fresh zeroed target', value: gb(copyFresh), unit: 'GB/s', note: 'baseline incl. allocation' });
  rows.push({ case: 'FrameDecoder 64 MiB frame, 64 KiB chunks', value: gb(decoder), unit: 'GB/s', note: `${(decoder / copyPre).toFixed(2)}x preallocated copy time, ${(decoder / copyFresh).toFixed(2)}x fresh` });
  rows.push({ case: 'FrameDecoder 64 MiB frame, recycled payload memory', value: gb(pooled), unit: 'GB/s', note: `${(pooled / copyPre).toFixed(2)}x preallocated copy time` });
  rows.push({ case: 'Buffer.copy 64 x 1 MiB frames (same chunks), preallocated', value: pieceBytes / pieceCopy / 1e9, unit: 'GB/s', note: 'baseline for the row below' });
  rows.push({ case: 'copy 64 x 1 MiB into fresh 1 MiB buffers', value: pieceBytes / pieceFresh / 1e9, unit: 'GB/s', note: 'baseline incl. allocation' });
  rows.push({
    case: 'FrameDecoder 64 x 1 MiB frames, 64 KiB chunks',
    value: pieceBytes / piecewise / 1e9,
    unit: 'GB/s',
    note: `${(piecewise / pieceCopy).toFixed(2)}x preallocated copy time, ${(piecewise / pieceFresh).toFixed(2)}x fresh`,
  });
  rows.push({
    case: 'FrameDecoder 64 x 1 MiB frames, recycled payload memory',
    value: pieceBytes / piecewisePooled / 1e9,
    unit: 'GB/s',
    note: `${(piecewisePooled / pieceCopy).toFixed(2)}x preallocated copy time`,
  });
  rows.push({ case: 'decodeFrames() 64 MiB frame, 64 KiB chunks', value: gb(operator), unit: 'GB/s', note: `${(operator / copyPre).toFixed(2)}x preallocated copy time, ${(operator / copyFresh).toFixed(2)}x fresh` });
}

if (json) {
  console.log(JSON.stringify({ node: process.version, reps: REPS, rows }, null, 2));
} else {
  const format = (row: Row) => (row.unit === 'GB/s' ? row.value.toFixed(2) : Math.round(row.value).toLocaleString('en-US'));
  const width = Math.max(...rows.map((row) => row.case.length));
  console.log(`GX1 codec bench (node ${process.version}, median of ${REPS})`);
  console.log(`| ${'case'.padEnd(width)} | ${'value'.padStart(12)} | unit     | note`);
  console.log(`|-${'-'.repeat(width)}-|-${'-'.repeat(12)}-|----------|-----`);
  for (const row of rows) console.log(`| ${row.case.padEnd(width)} | ${format(row).padStart(12)} | ${row.unit.padEnd(8)} | ${row.note}`);
}
