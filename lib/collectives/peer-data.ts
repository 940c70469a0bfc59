/**
 * What the algorithms that move their data rank to rank share: their tags on the JS plane, how they
 * cut a tensor, and ring arithmetic.
 */

/** Largest number of pieces one step of a peer algorithm cuts a segment into (12 bits of the tag). */
export const MAX_PIECES = 0xfff;

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

/** A pipelined piece: big enough that a write costs little more than its bytes, small enough to overlap steps. */
export const PIECE_BYTES = 1 << 20;

/** `value` modulo `modulus`, in 0..modulus-1 also for negative values (ring positions wrap). */
export function mod(value: number, modulus: number): number {
  return ((value % modulus) + modulus) % modulus;
}

