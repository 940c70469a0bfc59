/**
 * One collective as every rank of a world performs it (a `CollectiveCase`: kind, dtype, op, root
 * and each rank's input bytes), what a rank got back in comparable form (`Outcome`), and builders
 * of cases with random data whose shapes are consistent across ranks.
 */
import type { DType } from '../protocol/element-type.js';
import type { ReduceOp } from '../protocol/reduce-op.js';
import { arrayClassOf, dtypeWidth, type Tensor, viewTensor } from '../tensor.js';
import { randomBytes, randomInt } from './random-data.js';

/** The collectives the testing kit draws, models and runs, by their session method's name. */
export type CollectiveKind =
  | 'barrier'
  | 'broadcast'
  | 'allGather'
  | 'gather'
  | 'reduce'
  | 'scatter'
  | 'allReduce'
  | 'reduceScatter'
  | 'allToAll'
  | 'allToAllV';

/** Every `CollectiveKind`. */
export const COLLECTIVE_KINDS: readonly CollectiveKind[] = [
  'barrier',
  'broadcast',
  'allGather',
  'gather',
  'reduce',
  'scatter',
  'allReduce',
  'reduceScatter',
  'allToAll',
  'allToAllV',
];

/** The collectives that take a reduce op. */
export const REDUCING_KINDS: readonly CollectiveKind[] = ['reduce', 'allReduce', 'reduceScatter'];

/** The floating-point dtypes (bitwise ops do not apply to them). */
export const FLOAT_DTYPES: readonly DType[] = ['f16', 'bf16', 'f32', 'f64'];
/** The reduce ops an integer dtype takes (all of them). */
export const INTEGER_OPS: readonly ReduceOp[] = ['sum', 'prod', 'min', 'max', 'avg', 'band', 'bor', 'bxor'];
/** The reduce ops a floating-point dtype takes (no bitwise ones). */
export const FLOAT_OPS: readonly ReduceOp[] = ['sum', 'prod', 'min', 'max', 'avg'];

/** Whether `dtype` is floating point. */
export function isFloat(dtype: DType): boolean {
  return FLOAT_DTYPES.includes(dtype);
}

/** Whether `dtype` is a 16-bit float (f16 or bf16: carried as u16 words, computed in f32). */
export function isHalf(dtype: DType): boolean {
  return dtype === 'f16' || dtype === 'bf16';
}

/** The reduce ops `dtype` takes. */
export function opsFor(dtype: DType): readonly ReduceOp[] {
  return isFloat(dtype) ? FLOAT_OPS : INTEGER_OPS;
}

/** One collective as every rank performs it. */
export interface CollectiveCase {
  readonly kind: CollectiveKind;
  readonly dtype: DType;
  /** Ranks pass `{ dtype, data }` rather than a bare typed array (always so for f16/bf16). */
  readonly tagged: boolean;
  readonly op: ReduceOp;
  readonly root: number;
  /**
   * Each rank's input bytes. Scatter: a non-root entry is null when that rank passes null.
   * Barrier: empty arrays (unused).
   */
  readonly inputs: readonly (Uint8Array | null)[];
  /** allToAllV: sendCounts[rank][destination]. */
  readonly sendCounts?: readonly (readonly number[])[];
  /** scatter: elements each rank receives. */
  readonly countPerRank?: number;
}

/** What a rank gets back, in a comparable form. */
export interface Outcome {
  /** null for barrier and for the non-roots of gather/reduce. */
  readonly bytes: Uint8Array | null;
  readonly dtype?: DType;
  /** The typed-array class of the result (`Uint16Array` for f16/bf16). */
  readonly className?: string;
  readonly tagged?: boolean;
  /** allToAllV: the counts each rank sent here. */
  readonly counts?: readonly number[];
}

/** A fresh tensor holding a copy of `bytes`, bare or `{ dtype, data }`. */
export function tensorOf(dtype: DType, bytes: Uint8Array, tagged: boolean): Tensor {
  const Class = arrayClassOf(dtype);
  const array = new Class(bytes.length / Class.BYTES_PER_ELEMENT);
  new Uint8Array(array.buffer).set(bytes);
  return tagged || isHalf(dtype) ? { dtype, data: array } : array;
}

/** Records a result: a copy of its bytes, its dtype, array class and form. */
export function outcomeOf(result: Tensor | null | undefined): Outcome {
  if (result === null || result === undefined) return { bytes: null };
  const view = viewTensor(result, 'result');
  return { bytes: Uint8Array.from(view.bytes), dtype: view.dtype, className: view.array.constructor.name, tagged: view.tagged };
}

/** A short description of a case for assertion messages. */
export function describeCase(c: CollectiveCase): string {
  const sizes = c.inputs.map((input) => (input === null ? 'null' : String(input.length / dtypeWidth(c.dtype))));
  const extra = REDUCING_KINDS.includes(c.kind) ? ` op ${c.op}` : '';
  const root = ['broadcast', 'gather', 'reduce', 'scatter'].includes(c.kind) ? ` root ${c.root}` : '';
  const counts = c.sendCounts ? ` sendCounts ${JSON.stringify(c.sendCounts)}` : '';
  return `${c.kind} ${c.dtype}${c.tagged ? ' (tagged)' : ''}${extra}${root} counts [${sizes.join(',')}]${counts}`;
}

/** What `buildCase` builds: a collective, its dtype, op, root and counts; the data is drawn. */
export interface CaseShape {
  readonly kind: CollectiveKind;
  readonly dtype: DType;
  readonly tagged?: boolean;
  readonly op?: ReduceOp;
  readonly root?: number;
  /** Elements per rank (allGather, gather, reduce, allReduce, broadcast), or per destination shard. */
  readonly count: number;
  /** scatter: which non-root ranks pass null (default: all of them). */
  readonly nullRanks?: readonly number[];
  /** allToAllV: explicit counts; default random in 0..count. */
  readonly sendCounts?: readonly (readonly number[])[];
}

/** Builds a case with random data: every rank's input has the shape the collective requires. */
export function buildCase(shape: CaseShape, worldSize: number, random: () => number): CollectiveCase {
  const { kind, dtype, count } = shape;
  const root = shape.root ?? 0;
  const op = shape.op ?? 'sum';
  const tagged = shape.tagged ?? false;
  const ranks = Array.from({ length: worldSize }, (_, rank) => rank);
  const data = (elements: number) => randomBytes(dtype, elements, random);
  const base = { kind, dtype, tagged, op, root };
  switch (kind) {
    case 'barrier':
      return { ...base, inputs: ranks.map(() => new Uint8Array(0)) };
    case 'broadcast':
    case 'allGather':
    case 'gather':
    case 'reduce':
    case 'allReduce':
      return { ...base, inputs: ranks.map(() => data(count)) };
    case 'reduceScatter':
    case 'allToAll':
      return { ...base, inputs: ranks.map(() => data(count * worldSize)) };
    case 'scatter': {
      const nulls = shape.nullRanks ?? ranks.filter((rank) => rank !== root);
      return {
        ...base,
        countPerRank: count,
        inputs: ranks.map((rank) => (rank !== root && nulls.includes(rank) ? null : data(count * worldSize))),
      };
    }
    case 'allToAllV': {
      const sendCounts = shape.sendCounts ?? ranks.map(() => ranks.map(() => randomInt(random, count + 1)));
      return {
        ...base,
        sendCounts,
        inputs: ranks.map((rank) => data(sendCounts[rank]!.reduce((sum, value) => sum + value, 0))),
      };
    }
  }
}
