/**
 * What the network can do to a valid byte stream: split it anywhere (chunkings, which a decoder
 * must be blind to), cut it short (truncations) and flip bits (corruptions a header checksum must
 * catch).
 */
import fc from 'fast-check';

/** Splits `bytes` at the given cut points; every chunk is a fresh copy with its own ArrayBuffer. */
export function splitAt(bytes: Uint8Array, cuts: readonly number[]): Uint8Array[] {
  const points = [...new Set(cuts.filter((cut) => cut > 0 && cut < bytes.length))].sort((a, b) => a - b);
  const chunks: Uint8Array[] = [];
  let start = 0;
  for (const point of [...points, bytes.length]) {
    chunks.push(bytes.slice(start, point));
    start = point;
  }
  return chunks.filter((chunk) => chunk.length > 0);
}

/** A copy of `bytes` with bit `bit` (0 = the lowest bit of byte 0) flipped. */
export function flipBit(bytes: Uint8Array, bit: number): Uint8Array {
  const copy = bytes.slice();
  copy[bit >>> 3]! ^= 1 << (bit & 7);
  return copy;
}

/** `bytes` as the chunks a socket might deliver them in (shrinks towards one chunk). */
export function arbChunking(bytes: Uint8Array): fc.Arbitrary<Uint8Array[]> {
  return fc.array(fc.integer({ min: 1, max: Math.max(1, bytes.length - 1) }), { maxLength: 12 }).map((cuts) => splitAt(bytes, cuts));
}

/** A strict prefix of `bytes` (a stream that ended early); `bytes` must not be empty. */
export function arbTruncation(bytes: Uint8Array): fc.Arbitrary<Uint8Array> {
  return fc.integer({ min: 0, max: bytes.length - 1 }).map((keep) => bytes.slice(0, keep));
}

/** A bit flip somewhere in the first `withinBytes` bytes: the flipped bit and the corrupted copy. */
export function arbBitFlip(bytes: Uint8Array, withinBytes = bytes.length): fc.Arbitrary<{ bit: number; bytes: Uint8Array }> {
  return fc.integer({ min: 0, max: Math.min(withinBytes, bytes.length) * 8 - 1 }).map((bit) => ({ bit, bytes: flipBit(bytes, bit) }));
}
