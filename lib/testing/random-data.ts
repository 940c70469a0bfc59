/**
 * Seeded test data: a small PRNG and tensors of any dtype whose values make results comparable bit
 * for bit (no NaN can arise).
 */
import { numberToBf16, numberToHalf } from '../kernels/half.js';
import type { DType } from '../protocol/element-type.js';
import { arrayClassOf } from '../tensor.js';

/** mulberry32: small, fast, good enough for test data. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** An integer in 0..below-1 from `random` (a function returning [0, 1)). */
export function randomInt(random: () => number, below: number): number {
  return Math.floor(random() * below);
}

/**
 * `count` random elements of `dtype` as little-endian bytes. Integers cover their whole range (so
 * sums and products wrap); floats are finite values in [-3, 3] (products of 8 of them stay finite
 * even in f16), with an occasional -0 and +0, so no NaN can arise and results compare bit for bit.
 */
export function randomBytes(dtype: DType, count: number, random: () => number): Uint8Array {
  const array = new (arrayClassOf(dtype))(count);
  const bytes = new Uint8Array(array.buffer);
  // One loop per kind of element: a switch inside the loop costs more than the values (tests draw
  // tensors of several MiB).
  switch (dtype) {
    case 'f32':
    case 'f64':
      for (let index = 0; index < count; index++) array[index] = randomFloat(random);
      break;
    case 'f16':
      for (let index = 0; index < count; index++) array[index] = numberToHalf(randomFloat(random));
      break;
    case 'bf16':
      for (let index = 0; index < count; index++) array[index] = numberToBf16(randomFloat(random));
      break;
    default:
      // Integers: random bytes, element after element, little-endian.
      for (let index = 0; index < bytes.length; index++) bytes[index] = randomInt(random, 256);
  }
  return bytes;
}

function randomFloat(random: () => number): number {
  const pick = random();
  if (pick < 0.03) return -0;
  if (pick < 0.06) return 0;
  return random() * 6 - 3;
}
