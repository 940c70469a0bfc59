
/**
 * What the algorithms that move their data rank to rank share: the layout fingerprint their
 * agreement carries, their tags, and how they cut a tensor into pieces.
 */

/** Largest number of pieces one step of a peer algorithm cuts a segment into (12 bits of the tag). */
export const MAX_PIECES = 0xfff;
/** Largest step number (12 bits of the tag). */
export const MAX_STEPS = 0xfff;

/**
 * The tag of one piece: `prefix` (16 bits, the algorithm) | sequence (low 18 bits) | channel
 * (6 bits) | step (12 bits) | piece (12 bits). Tags only need to be unique among messages in
 * flight, and collectives run one at a time.
 */
export function pieceTag(prefix: number, sequence: bigint, channel: number, step: number, piece: number): bigint {
  return (
    (BigInt(prefix) << 48n) | ((sequence & 0x3ffffn) << 30n) | (BigInt(channel & 0x3f) << 24n) | (BigInt(step & 0xfff) << 12n) | BigInt(piece & 0xfff)
  );
}

/** Element ranges of `parts` parts of `count` elements, as even as possible (the first ones get the rest). */
export function evenRanges(start: number, count: number, parts: number): { start: number; count: number }[] {
  const base = Math.floor(count / parts);
  const extra = count % parts;
  let next = start;
  return Array.from({ length: parts }, (_, index) => {
    const size = base + (index < extra ? 1 : 0);
    const range = { start: next, count: size };
    next += size;
    return range;
  });
}

/** One piece of a tensor: its number, its element count and a view of its bytes in `buffer`. */
export interface Piece {
  readonly index: number;
  readonly elements: number;
  readonly bytes: Uint8Array;
}

/** A pipelined piece: big enough that a write costs little more than its bytes, small enough to overlap steps. */
export const PIECE_BYTES = 1 << 20;

/** Cuts elements [start, start + count) of `buffer` into pieces of about `pieceBytes` (at most MAX_PIECES). */
export function piecesOf(buffer: Uint8Array, width: number, range: { start: number; count: number }, pieceBytes: number): Piece[] {
  const perPiece = Math.max(1, Math.floor(pieceBytes / width), Math.ceil(range.count / MAX_PIECES));
  return Array.from({ length: Math.ceil(range.count / perPiece) }, (_, index) => {
    const first = range.start + index * perPiece;
    const elements = Math.min(perPiece, range.start + range.count - first);
    return { index, elements, bytes: buffer.subarray(first * width, (first + elements) * width) };
  });
}

/** `value` modulo `modulus`, in 0..modulus-1 also for negative values (ring positions wrap). */
export function mod(value: number, modulus: number): number {
  return ((value % modulus) + modulus) % modulus;
}

/** `rank`'s position in a ring order and its neighbours there. */
export function ringPosition(order: readonly number[], rank: number): { position: number; next: number; previous: number } {
  const size = order.length;
  const position = order.indexOf(rank);
  return { position, next: order[mod(position + 1, size)]!, previous: order[mod(position - 1, size)]! };
}
