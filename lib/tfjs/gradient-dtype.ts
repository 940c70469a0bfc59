import { ConfigurationError } from '../errors.js';
import { bf16DecodeTable, halfDecodeTable, numberToBf16, numberToHalf } from '../kernels/half.js';
import type { Tensor } from '../tensor.js';

/**
 * The dtype gradients cross the wire in. `f32` is exact to the sum's order; `f16` and `bf16` halve
 * the bytes at a rounding error per element of at most 2^-11 (f16: about 3 decimal digits, values
 * beyond 65504 become infinite) or 2^-8 relative (bf16: f32's range, about 2 digits), on the
 * averaged gradient; the reduction itself runs in f32 (lib/kernels/README.md).
 */
export type GradientDtype = 'f32' | 'f16' | 'bf16';

/** Every `GradientDtype`. */
export const GRADIENT_DTYPES: readonly GradientDtype[] = ['f32', 'f16', 'bf16'];

/** Throws INVALID_CONFIGURATION unless `dtype` is a `GradientDtype`, naming it. */
export function checkGradientDtype(dtype: GradientDtype): void {
  if (!GRADIENT_DTYPES.includes(dtype)) throw new ConfigurationError(`gradientDtype ${JSON.stringify(dtype)} is not one of ${GRADIENT_DTYPES.join(' ')}`);
}

/** `values` as a tensor of `dtype` for the wire: itself for f32, else one rounding copy. */
export function toWire(values: Float32Array, dtype: GradientDtype): Tensor {
  if (dtype === 'f32') return values;
  const encode = dtype === 'f16' ? numberToHalf : numberToBf16;
  const data = new Uint16Array(values.length);
  for (let index = 0; index < values.length; index++) data[index] = encode(values[index]!);
  return { dtype, data };
}

/** A reduced wire tensor back as f32 values: itself for f32, else one widening copy. */
export function fromWire(tensor: Tensor, dtype: GradientDtype): Float32Array {
  if (dtype === 'f32') return tensor as Float32Array;
  const table = dtype === 'f16' ? halfDecodeTable() : bf16DecodeTable();
  const bits = (tensor as { readonly data: Uint16Array }).data;
  const values = new Float32Array(bits.length);
  for (let index = 0; index < bits.length; index++) values[index] = table[bits[index]!]!;
  return values;
}
