/**
 * A message's payload as a person reads it in a counterexample: its first elements in the dtype
 * its frame declares (`i32 [0, 0, -1]`, `f32 [1.5, 2, …] (1024 elements)`), or hex where the
 * frame declares none.
 */
import { bf16ToNumber, halfToNumber } from '../kernels/half.js';
import { dtypeOfElementType, elementWidth, ElementType } from '../protocol/element-type.js';
import { tensorFromBytes } from '../tensor.js';
import { hex } from './bytes.js';

/** Elements (or bytes, in hex) a preview shows before it elides the rest. */
export const PREVIEW_ELEMENTS = 8;

/** A payload as people read it: its first elements in its element type, or hex where it has none. */
export function previewPayload(elementType: ElementType, bytes: Uint8Array): string {
  const width = elementWidth(elementType);
  if (width === 0 || bytes.length % width !== 0) {
    const shown = bytes.subarray(0, PREVIEW_ELEMENTS);
    return `bytes ${hex(shown)}${bytes.length > shown.length ? `… (${bytes.length} bytes)` : ''}`;
  }
  const dtype = dtypeOfElementType(elementType);
  const count = bytes.length / width;
  const shown = Math.min(count, PREVIEW_ELEMENTS);
  // The shown elements only, viewed in place where aligned (tensorFromBytes copies them where not).
  const elements = tensorFromBytes(dtype, bytes.subarray(0, shown * width), false) as ArrayLike<number | bigint>;
  const values = Array.from(elements, (value) => (dtype === 'f16' ? halfToNumber(Number(value)) : dtype === 'bf16' ? bf16ToNumber(Number(value)) : value));
  return `${dtype} [${values.join(', ')}${count > shown ? ', …' : ''}]${count > shown ? ` (${count} elements)` : ''}`;
}
