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

export function randomInt(random: () => number, below: number): number {
  return Math.floor(random() * below);
}

/**
 * `count` random elements of `dtype` as little-endian bytes. Integers cover their whole range (so
 * sums and products wrap); floats are finite values in [-3, 3] (products of 8 of them stay finite
 * even in f16), with an occasional -0 and +0, so no NaN can arise and results compare bit for bit.
 */
export function randomBytes(dtype: DType, count: number, random: () => number): Uint8Array {
  const Class = arrayClassOf(dtype);
  const array = new Class(count);
  const value = () => {
    const pick = random();
    if (pick < 0.03) return -0;
    if (pick < 0.06) return 0;
    return random() * 6 - 3;
  };
  for (let index = 0; index < count; index++) {
    switch (dtype) {
      case 'f32':
      case 'f64':
        array[index] = value();
        break;
      case 'f16':
        array[index] = numberToHalf(value());
        break;
      case 'bf16':
        array[index] = numberToBf16(value());
        break;
      default: {
        const bytes = new Uint8Array(array.buffer, index * Class.BYTES_PER_ELEMENT, Class.BYTES_PER_ELEMENT);
        for (let byte = 0; byte < bytes.length; byte++) bytes[byte] = randomInt(random, 256);
      }
    }
  }
  return new Uint8Array(array.buffer);
}
