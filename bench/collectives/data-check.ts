/**
 * The bench's data check (nccl-tests' #wrong column): each rank's input holds small whole numbers
 * that depend on the rank and the position, so that every collective's expected output is known
 * exactly, and a rank counts the elements of its result that differ from it.
 *
 * Values are 1..4 and sums stay within 4 x 64 ranks = 256, which every element type holds
 * exactly (bf16's 8-bit significand included) in any order of addition; 8-bit integers wrap,
 * deterministically, and the expected value wraps the same way.
 */
import { bf16ToNumber, halfToNumber, numberToBf16, numberToHalf } from '../../lib/kernels/half.js';
import type { DType } from '../../lib/protocol/element-type.js';
import { arrayClassOf, isTaggedTensor, type Tensor, type TypedArray } from '../../lib/tensor.js';
import type { Cell } from './plan.js';

/** Element `index` of rank `rank`'s input. */
export function inputValue(rank: number, index: number): number {
  return ((rank + index) % 4) + 1;
}

/** Rank `rank`'s input for `cell`: `{ dtype, data }` for f16/bf16, else a typed array. */
export function inputTensor(cell: Cell, rank: number): Tensor {
  const data = new (arrayClassOf(cell.dtype))(cell.inputCount);
  for (let index = 0; index < data.length; index++) store(cell.dtype, data, index, inputValue(rank, index));
  return cell.dtype === 'f16' || cell.dtype === 'bf16' ? { dtype: cell.dtype, data } : data;
}

/**
 * How many elements of `result` (what `cell`'s collective returned on `rank`) differ from the
 * expected output; a result of the wrong length counts every missing or extra element as wrong.
 */
export function countWrong(cell: Cell, result: unknown, rank: number, worldSize: number): number {
  const expected = expectedOutput(cell, rank, worldSize);
  if (expected === null) return 0;
  if (result === null || result === undefined) return expected.length;
  const data = isTaggedTensor(result) ? result.data : (result as TypedArray);
  const exact = new (arrayClassOf(cell.dtype))(1);
  let wrong = Math.abs(data.length - expected.length);
  for (let index = 0; index < Math.min(data.length, expected.length); index++) {
    // The expected value as the element type holds it (8-bit integers wrap).
    store(cell.dtype, exact, 0, expected[index]!);
    if (load(cell.dtype, data, index) !== load(cell.dtype, exact, 0)) wrong += 1;
  }
  return wrong;
}

/** The exact output `rank` should get, before wrapping to the element type; null: none to check. */
function expectedOutput(cell: Cell, rank: number, worldSize: number): number[] | null {
  const ranks = Array.from({ length: worldSize }, (_, r) => r);
  const sumOver = (index: number) => ranks.reduce((sum, r) => sum + inputValue(r, index), 0);
  const count = cell.inputCount;
  switch (cell.op) {
    case 'barrier':
      return null;
    case 'allreduce':
      return Array.from({ length: count }, (_, index) => sumOver(index));
    case 'reduce':
      return rank === 0 ? Array.from({ length: count }, (_, index) => sumOver(index)) : null;
    case 'broadcast':
      return Array.from({ length: count }, (_, index) => inputValue(0, index));
    case 'allgather':
      return Array.from({ length: count * worldSize }, (_, index) => inputValue(Math.floor(index / count), index % count));
    case 'reducescatter': {
      const block = count / worldSize;
      return Array.from({ length: block }, (_, index) => sumOver(rank * block + index));
    }
    case 'alltoall': {
      const block = count / worldSize;
      return Array.from({ length: count }, (_, index) => inputValue(Math.floor(index / block), rank * block + (index % block)));
    }
  }
}

function store(dtype: DType, data: TypedArray, index: number, value: number): void {
  if (data instanceof BigInt64Array || data instanceof BigUint64Array) data[index] = BigInt(value);
  else if (dtype === 'f16') data[index] = numberToHalf(value);
  else if (dtype === 'bf16') data[index] = numberToBf16(value);
  else data[index] = value;
}

function load(dtype: DType, data: TypedArray, index: number): number {
  const raw = data[index]!;
  if (typeof raw === 'bigint') return Number(raw);
  if (dtype === 'f16') return halfToNumber(raw);
  if (dtype === 'bf16') return bf16ToNumber(raw);
  return raw;
}
