/**
 * Tensors of every dtype, drawn element by element so they shrink towards zeros and short lengths.
 * Floats are finite values in [-3, 3] (products of 8 stay finite even in f16), so no NaN arises and
 * results compare bit for bit; integers cover their whole range. f16/bf16 come as `{ dtype, data }`.
 */
import fc from 'fast-check';
import { numberToBf16, numberToHalf } from '../../kernels/half.js';
import { DTYPES, type DType } from '../../protocol/element-type.js';
import { arrayClassOf, dtypeWidth, type Tensor } from '../../tensor.js';
import { isFloat, tensorOf } from '../collective-case.js';

/** A tensor with its dtype and little-endian bytes (what the oracle reads). */
export interface DrawnTensor {
  readonly dtype: DType;
  readonly bytes: Uint8Array;
  readonly tensor: Tensor;
}

const arbFloat = fc.double({ min: -3, max: 3, noNaN: true });

/** `count` elements of `dtype` as bytes. */
export function arbTensorBytes(dtype: DType, count: number): fc.Arbitrary<Uint8Array> {
  const width = dtypeWidth(dtype);
  if (!isFloat(dtype)) return fc.uint8Array({ minLength: count * width, maxLength: count * width });
  const encode = dtype === 'f16' ? numberToHalf : dtype === 'bf16' ? numberToBf16 : (value: number) => value;
  return fc.array(arbFloat, { minLength: count, maxLength: count }).map((values) => {
    const array = new (arrayClassOf(dtype))(count);
    values.forEach((value, index) => (array[index] = encode(value)));
    return new Uint8Array(array.buffer);
  });
}

/** What `arbTensor` draws: its dtypes and its element count's bounds. */
export interface ArbTensorOptions {
  /** The dtypes drawn (default every dtype). */
  readonly dtypes?: readonly DType[];
  /** Fewest elements (default 0). */
  readonly minLength?: number;
  /** Most elements (default 32). */
  readonly maxLength?: number;
}

/** A tensor of any of `dtypes` (default all), bare or `{ dtype, data }` (always tagged for f16/bf16). */
export function arbTensor(options: ArbTensorOptions = {}): fc.Arbitrary<DrawnTensor> {
  return fc
    .record({
      dtype: fc.constantFrom(...(options.dtypes ?? DTYPES)),
      count: fc.integer({ min: options.minLength ?? 0, max: options.maxLength ?? 32 }),
      tagged: fc.boolean(),
    })
    .chain(({ dtype, count, tagged }) =>
      arbTensorBytes(dtype, count).map((bytes) => ({ dtype, bytes, tensor: tensorOf(dtype, bytes, tagged) })),
    );
}
