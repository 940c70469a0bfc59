/**
 * Argument checks shared by every backend, run before a kernel touches memory. A reduction that
 * is not defined (unknown dtype or op, bitwise op on floats) is a ConfigurationError
 * (INVALID_CONFIGURATION): sessions call validateReduction before sending anything. Buffers the
 * kernel cannot work on are a KernelError (KERNEL). The addon repeats these checks in C++.
 */
import { ConfigurationError, KernelError } from '../errors.js';
import { type DType, DTYPES } from '../protocol/element-type.js';
import { isBitwise, REDUCE_OPS, type ReduceOp } from '../protocol/reduce-op.js';
import { dtypeWidth } from '../tensor.js';

const FLOAT_DTYPES: readonly DType[] = ['f16', 'bf16', 'f32', 'f64'];

export function validateDType(dtype: DType): void {
  if (!DTYPES.includes(dtype)) {
    throw new ConfigurationError(`unknown dtype ${JSON.stringify(dtype)}; expected one of ${DTYPES.join(' ')}`);
  }
}

/** Throws INVALID_CONFIGURATION unless `op` can reduce `dtype` (a known dtype; bitwise ops on integers only). */
export function validateReduction(dtype: DType, op: ReduceOp): void {
  validateDType(dtype);
  if (!REDUCE_OPS.includes(op)) {
    throw new ConfigurationError(`unknown reduce op ${JSON.stringify(op)}; expected one of ${REDUCE_OPS.join(' ')}`);
  }
  if (isBitwise(op) && FLOAT_DTYPES.includes(dtype)) {
    throw new ConfigurationError(`reduce op ${op} is bitwise and needs an integer dtype, got ${dtype}`);
  }
}

/** A Uint8Array (Buffer included) that is not detached; returns its length in elements of `dtype`. */
export function checkBytes(value: unknown, name: string, dtype: DType): number {
  if (!(value instanceof Uint8Array)) {
    throw new KernelError(`${name} must be a Uint8Array of ${dtype} bytes, got ${describe(value)}`);
  }
  if (isDetached(value)) throw new KernelError(`${name} is detached (its ArrayBuffer was transferred)`);
  const width = dtypeWidth(dtype);
  if (value.length % width !== 0) {
    throw new KernelError(`${name} has ${value.length} bytes, not a multiple of the ${width}-byte ${dtype} element`);
  }
  return value.length / width;
}

export function checkPositiveInteger(value: unknown, name: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new KernelError(`${name} must be a positive integer, got ${describe(value)}`);
  }
  return value;
}

/** Whether two byte views share memory (views of one ArrayBuffer with intersecting ranges). */
export function overlaps(a: Uint8Array, b: Uint8Array): boolean {
  return (
    a.buffer === b.buffer &&
    a.length > 0 &&
    b.length > 0 &&
    a.byteOffset < b.byteOffset + b.length &&
    b.byteOffset < a.byteOffset + a.length
  );
}

/**
 * A detached ArrayBuffer reports byteLength 0 like an empty one; only constructing a view tells
 * them apart (Node 20 has no ArrayBuffer.prototype.detached). SharedArrayBuffers never detach.
 */
function isDetached(bytes: Uint8Array): boolean {
  // A view with bytes is not detached; and asking a small view for its buffer costs an allocation
  // (V8 keeps typed arrays of up to 64 bytes on its heap until then).
  if (bytes.byteLength !== 0) return false;
  const buffer = bytes.buffer;
  if (buffer.byteLength !== 0 || !(buffer instanceof ArrayBuffer)) return false;
  try {
    new Uint8Array(buffer);
    return false;
  } catch {
    return true;
  }
}

function describe(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (typeof value === 'object') return (value as object).constructor?.name ?? 'object';
  return `${typeof value} ${String(value)}`;
}
