import { ProtocolError } from '../errors.js';

/** Wire codes of the element types a frame can carry (byte 9 of the GX1 header). */
export enum ElementType {
  None = 0,
  U8 = 1,
  I8 = 2,
  U16 = 3,
  I16 = 4,
  U32 = 5,
  I32 = 6,
  U64 = 7,
  I64 = 8,
  F16 = 9,
  BF16 = 10,
  F32 = 11,
  F64 = 12,
}

/** The user-facing names of element types, as in the public contract. */
export type DType = 'u8' | 'i8' | 'u16' | 'i16' | 'u32' | 'i32' | 'u64' | 'i64' | 'f16' | 'bf16' | 'f32' | 'f64';

export const DTYPES: readonly DType[] = ['u8', 'i8', 'u16', 'i16', 'u32', 'i32', 'u64', 'i64', 'f16', 'bf16', 'f32', 'f64'];

const WIDTHS: Readonly<Record<ElementType, number>> = {
  [ElementType.None]: 0,
  [ElementType.U8]: 1,
  [ElementType.I8]: 1,
  [ElementType.U16]: 2,
  [ElementType.I16]: 2,
  [ElementType.U32]: 4,
  [ElementType.I32]: 4,
  [ElementType.U64]: 8,
  [ElementType.I64]: 8,
  [ElementType.F16]: 2,
  [ElementType.BF16]: 2,
  [ElementType.F32]: 4,
  [ElementType.F64]: 8,
};

/** Bytes per element; 0 for `None`. */
export function elementWidth(type: ElementType): number {
  return WIDTHS[type];
}

export function isElementType(code: number): code is ElementType {
  return Number.isInteger(code) && code >= ElementType.None && code <= ElementType.F64;
}

export function elementTypeOfDType(dtype: DType): ElementType {
  const index = DTYPES.indexOf(dtype);
  if (index < 0) throw new ProtocolError(`unknown dtype ${JSON.stringify(dtype)}; expected one of ${DTYPES.join(' ')}`);
  return (index + 1) as ElementType;
}

export function dtypeOfElementType(type: ElementType): DType {
  const dtype = DTYPES[type - 1];
  if (dtype === undefined) throw new ProtocolError(`element type ${type} has no dtype`);
  return dtype;
}

export function elementTypeName(type: ElementType): string {
  return ElementType[type] ?? `unknown(${type})`;
}
