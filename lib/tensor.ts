import { ConfigurationError } from './errors.js';
import { type DType, DTYPES, ElementType, elementTypeOfDType, elementWidth } from './protocol/element-type.js';

/** The typed-array classes rxccl moves; `BigInt64Array` is i64, `BigUint64Array` is u64. */
export type TypedArray =
  | Uint8Array
  | Int8Array
  | Uint16Array
  | Int16Array
  | Uint32Array
  | Int32Array
  | BigUint64Array
  | BigInt64Array
  | Float32Array
  | Float64Array;

/** A tensor whose dtype the array class alone cannot tell (f16/bf16 live in a Uint16Array). */
export interface TaggedTensor<A extends TypedArray = TypedArray> {
  readonly dtype: DType;
  readonly data: A;
}

/** What users pass to collectives: a typed array, or `{ dtype, data }`. */
export type Tensor = TypedArray | TaggedTensor;

/** The array class of each dtype; f16 and bf16 come tagged, as `{ dtype, data: Uint16Array }`. */
export interface DTypeTensors {
  u8: Uint8Array;
  i8: Int8Array;
  u16: Uint16Array;
  i16: Int16Array;
  u32: Uint32Array;
  i32: Int32Array;
  u64: BigUint64Array;
  i64: BigInt64Array;
  f16: TaggedTensor<Uint16Array>;
  bf16: TaggedTensor<Uint16Array>;
  f32: Float32Array;
  f64: Float64Array;
}

/** The tensor a receive of `D` gives: `TensorOf<'f32'>` is `Float32Array`. */
export type TensorOf<D extends DType> = DTypeTensors[D];

type TypedArrayConstructor = {
  new (length: number): TypedArray;
  new (buffer: ArrayBufferLike, byteOffset: number, length: number): TypedArray;
  readonly BYTES_PER_ELEMENT: number;
};

const CLASS_OF_DTYPE: Readonly<Record<DType, TypedArrayConstructor>> = {
  u8: Uint8Array,
  i8: Int8Array,
  u16: Uint16Array,
  i16: Int16Array,
  u32: Uint32Array,
  i32: Int32Array,
  u64: BigUint64Array,
  i64: BigInt64Array,
  f16: Uint16Array,
  bf16: Uint16Array,
  f32: Float32Array,
  f64: Float64Array,
};

/** Whether a tensor of `dtype` comes tagged, `{ dtype, data }`: f16 and bf16, whose Uint16Array alone reads as u16. */
export function comesTagged(dtype: DType): boolean {
  return dtype === 'f16' || dtype === 'bf16';
}

export function arrayClassOf(dtype: DType): TypedArrayConstructor {
  return CLASS_OF_DTYPE[dtype];
}

/** The dtype a bare typed array stands for, or null for classes rxccl does not move. */
export function dtypeOfArray(array: unknown): DType | null {
  if (array instanceof Uint8Array && !(array instanceof Uint8ClampedArray)) return 'u8';
  if (array instanceof Int8Array) return 'i8';
  if (array instanceof Uint16Array) return 'u16';
  if (array instanceof Int16Array) return 'i16';
  if (array instanceof Uint32Array) return 'u32';
  if (array instanceof Int32Array) return 'i32';
  if (array instanceof BigUint64Array) return 'u64';
  if (array instanceof BigInt64Array) return 'i64';
  if (array instanceof Float32Array) return 'f32';
  if (array instanceof Float64Array) return 'f64';
  return null;
}

/** A tensor resolved to what the wire needs: its dtype, element count and a byte view (no copy). */
export interface TensorView {
  readonly dtype: DType;
  readonly elementType: ElementType;
  readonly count: number;
  readonly bytes: Uint8Array;
  readonly array: TypedArray;
  /** True when the caller passed `{ dtype, data }`: results come back in the same form. */
  readonly tagged: boolean;
}

export function isTaggedTensor(value: unknown): value is TaggedTensor {
  return typeof value === 'object' && value !== null && 'dtype' in value && 'data' in value;
}

/** Resolves a tensor; `name` is used in the error for anything that is not one. */
export function viewTensor(tensor: unknown, name = 'data'): TensorView {
  let dtype: DType | null;
  let array: unknown;
  const tagged = isTaggedTensor(tensor);
  if (tagged) {
    dtype = tensor.dtype;
    array = tensor.data;
    if (!DTYPES.includes(dtype)) {
      throw new ConfigurationError(`${name}.dtype is ${JSON.stringify(dtype)}; expected one of ${DTYPES.join(' ')}`);
    }
    if (!(array instanceof CLASS_OF_DTYPE[dtype])) {
      throw new ConfigurationError(`${name}.data for dtype ${dtype} must be a ${CLASS_OF_DTYPE[dtype].name}, got ${describeValue(array)}`);
    }
  } else {
    dtype = dtypeOfArray(tensor);
    array = tensor;
    if (dtype === null) {
      throw new ConfigurationError(`${name} must be a typed array or { dtype, data }, got ${describeValue(tensor)}`);
    }
  }
  const typed = array as TypedArray;
  return {
    dtype,
    elementType: elementTypeOfDType(dtype),
    count: typed.length,
    bytes: new Uint8Array(typed.buffer, typed.byteOffset, typed.byteLength),
    array: typed,
    tagged,
  };
}

/**
 * Wraps received bytes as a tensor of `dtype` in the caller's form. The bytes are viewed in place
 * when aligned for the element width, else copied once into an aligned array.
 */
export function tensorFromBytes(dtype: DType, bytes: Uint8Array, tagged: boolean): Tensor {
  const Class = CLASS_OF_DTYPE[dtype];
  const width = Class.BYTES_PER_ELEMENT;
  const count = bytes.length / width;
  let array: TypedArray;
  if (bytes.byteOffset % width === 0) {
    array = new Class(bytes.buffer, bytes.byteOffset, count);
  } else {
    array = new Class(count);
    new Uint8Array(array.buffer).set(bytes);
  }
  return tagged ? { dtype, data: array } : array;
}

/** A fresh zero tensor of `count` elements in the same form (and class) as `like`. */
export function emptyLike(like: TensorView, count: number): Tensor {
  const array = new (CLASS_OF_DTYPE[like.dtype])(count);
  return like.tagged ? { dtype: like.dtype, data: array } : array;
}

export function dtypeWidth(dtype: DType): number {
  return elementWidth(elementTypeOfDType(dtype));
}

function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'object') return (value as object).constructor?.name ?? 'object';
  return typeof value;
}
