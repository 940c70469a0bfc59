/**
 * The soak's inputs: deterministic, so every rank computes every other rank's contribution itself
 * and checks each result exactly. Each element is an integer in [-1024, 1023] (the top 11 bits of
 * a pseudo-random 32-bit state), so sums over a job's ranks stay exact in f32 (far under 2^24),
 * and a misplaced block or element differs.
 */
export type SoakDType = 'f32' | 'i32';
export type SoakArray = Float32Array | Int32Array;

/** A 32-bit mix (murmur3's finaliser) of `value`. */
function mix(value: number): number {
  let hash = Math.imul(value ^ (value >>> 16), 0x85ebca6b);
  hash = Math.imul(hash ^ (hash >>> 13), 0xc2b2ae35);
  return (hash ^ (hash >>> 16)) >>> 0;
}

/** One seed per (epoch, iteration, rank, operation): the operation's `salt` tells apart inputs of one iteration. */
export function seedOf(epoch: number, iteration: number, rank: number, salt: number): number {
  return mix(mix(mix(mix(epoch) ^ iteration) ^ rank) ^ salt);
}

/** A tensor of `count` elements drawn by xorshift32 from `seed` (cheap: a rank computes every rank's inputs). */
export function inputOf(dtype: SoakDType, count: number, seed: number): SoakArray {
  const array = dtype === 'f32' ? new Float32Array(count) : new Int32Array(count);
  // xorshift32 must not start at 0.
  let state = seed | 1;
  for (let index = 0; index < count; index++) {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    array[index] = state >> 21;
  }
  return array;
}

/** The index of the first element where `actual` differs from `expected` (or its length does), else -1. */
export function firstDifference(actual: ArrayLike<number>, expected: ArrayLike<number>): number {
  if (actual.length !== expected.length) return Math.min(actual.length, expected.length);
  for (let index = 0; index < expected.length; index++) if (actual[index] !== expected[index]) return index;
  return -1;
}
