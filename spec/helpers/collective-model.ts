/**
 * A reference model of the collectives, on bytes: given what every rank passes, what every rank
 * must get back. Reductions use the TypeScript reference kernels (lib/kernels/reference.ts), which
 * fold the ranks' slices left in rank order, as the contract says every backend must.
 *
 * Also: a seeded random source, tensor builders, and `runCollective`, which performs one case on a
 * real RankSession and records what came back (bytes, array class, tagged form).
 */
import { referenceReduceSlices } from '../../lib/kernels/reference.js';
import { numberToBf16, numberToHalf } from '../../lib/kernels/half.js';
import type { DType } from '../../lib/protocol/element-type.js';
import type { ReduceOp } from '../../lib/protocol/reduce-op.js';
import type { RankSession } from '../../lib/session/rank-session.js';
import { arrayClassOf, dtypeWidth, type Tensor, viewTensor } from '../../lib/tensor.js';
import { concatBytes } from '../protocol/arbitraries.js';

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

export const REDUCING_KINDS: readonly CollectiveKind[] = ['reduce', 'allReduce', 'reduceScatter'];

export const FLOAT_DTYPES: readonly DType[] = ['f16', 'bf16', 'f32', 'f64'];
export const INTEGER_OPS: readonly ReduceOp[] = ['sum', 'prod', 'min', 'max', 'avg', 'band', 'bor', 'bxor'];
export const FLOAT_OPS: readonly ReduceOp[] = ['sum', 'prod', 'min', 'max', 'avg'];

export function isFloat(dtype: DType): boolean {
  return FLOAT_DTYPES.includes(dtype);
}

export function isHalf(dtype: DType): boolean {
  return dtype === 'f16' || dtype === 'bf16';
}

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

// ---- random data ----------------------------------------------------------------------------

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

// ---- the model ------------------------------------------------------------------------------


function reduceModel(dtype: DType, op: ReduceOp, slices: readonly Uint8Array[]): Uint8Array {
  const input = concatBytes(slices);
  const output = new Uint8Array(input.length / slices.length);
  referenceReduceSlices(dtype, op, input, slices.length, output);
  return output;
}

/** What each rank must get back from `c` in a world of `worldSize` ranks. */
export function modelCollective(c: CollectiveCase, worldSize: number): Outcome[] {
  const width = dtypeWidth(c.dtype);
  const inputs = c.inputs;
  const ranks = Array.from({ length: worldSize }, (_, rank) => rank);
  const shaped = (bytes: Uint8Array, rank: number): Outcome => {
    // A scatter rank that passed null learns the dtype from the wire: tagged only for f16/bf16.
    const tagged = inputs[rank] === null ? isHalf(c.dtype) : c.tagged || isHalf(c.dtype);
    return { bytes, dtype: c.dtype, className: arrayClassOf(c.dtype).name, tagged };
  };
  const shard = (bytes: Uint8Array, index: number, parts: number) => {
    const size = bytes.length / parts;
    return bytes.subarray(index * size, (index + 1) * size);
  };
  const all = () => inputs.map((input) => input!);
  switch (c.kind) {
    case 'barrier':
      return ranks.map(() => ({ bytes: null }));
    case 'broadcast':
      return ranks.map((rank) => shaped(Uint8Array.from(inputs[c.root]!), rank));
    case 'allGather':
      return ranks.map((rank) => shaped(concatBytes(all()), rank));
    case 'gather':
      return ranks.map((rank) => (rank === c.root ? shaped(concatBytes(all()), rank) : { bytes: null }));
    case 'reduce':
      return ranks.map((rank) => (rank === c.root ? shaped(reduceModel(c.dtype, c.op, all()), rank) : { bytes: null }));
    case 'allReduce':
      return ranks.map((rank) => shaped(reduceModel(c.dtype, c.op, all()), rank));
    case 'scatter':
      return ranks.map((rank) => shaped(Uint8Array.from(shard(inputs[c.root]!, rank, worldSize)), rank));
    case 'reduceScatter':
      return ranks.map((rank) => shaped(reduceModel(c.dtype, c.op, all().map((input) => shard(input, rank, worldSize))), rank));
    case 'allToAll':
      return ranks.map((rank) => shaped(concatBytes(all().map((input) => shard(input, rank, worldSize))), rank));
    case 'allToAllV': {
      const counts = c.sendCounts!;
      const segment = (source: number, destination: number) => {
        const start = counts[source]!.slice(0, destination).reduce((sum, count) => sum + count, 0);
        return inputs[source]!.subarray(start * width, (start + counts[source]![destination]!) * width);
      };
      return ranks.map((rank) => ({
        ...shaped(concatBytes(ranks.map((source) => segment(source, rank))), rank),
        counts: ranks.map((source) => counts[source]![rank]!),
      }));
    }
  }
}

/** Performs `c` on `session` and records what came back. */
export async function runCollective(session: RankSession, c: CollectiveCase): Promise<Outcome> {
  const input = c.inputs[session.rank] ?? null;
  const tensor = input === null ? null : tensorOf(c.dtype, input, c.tagged);
  switch (c.kind) {
    case 'barrier':
      await session.barrier();
      return { bytes: null };
    case 'broadcast':
      return outcomeOf(await session.broadcast(tensor!, c.root));
    case 'allGather':
      return outcomeOf(await session.allGather(tensor!));
    case 'gather':
      return outcomeOf(await session.gather(tensor!, c.root));
    case 'reduce':
      return outcomeOf(await session.reduce(tensor!, c.op, c.root));
    case 'allReduce':
      return outcomeOf(await session.allReduce(tensor!, c.op));
    case 'scatter':
      return outcomeOf(await session.scatter(tensor, c.root, c.countPerRank!));
    case 'reduceScatter':
      return outcomeOf(await session.reduceScatter(tensor!, c.op));
    case 'allToAll':
      return outcomeOf(await session.allToAll(tensor!));
    case 'allToAllV': {
      const result = await session.allToAllV(tensor!, c.sendCounts![session.rank]!);
      return { ...outcomeOf(result.data), counts: result.counts };
    }
  }
}

/** A short description of a case for assertion messages. */
export function describeCase(c: CollectiveCase): string {
  const sizes = c.inputs.map((input) => (input === null ? 'null' : String(input.length / dtypeWidth(c.dtype))));
  const extra = REDUCING_KINDS.includes(c.kind) ? ` op ${c.op}` : '';
  const root = ['broadcast', 'gather', 'reduce', 'scatter'].includes(c.kind) ? ` root ${c.root}` : '';
  const counts = c.sendCounts ? ` sendCounts ${JSON.stringify(c.sendCounts)}` : '';
  return `${c.kind} ${c.dtype}${c.tagged ? ' (tagged)' : ''}${extra}${root} counts [${sizes.join(',')}]${counts}`;
}

// ---- case builders ----------------------------------------------------------------------------

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
  switch (kind) {
    case 'barrier':
      return { kind, dtype, tagged, op, root, inputs: ranks.map(() => new Uint8Array(0)) };
    case 'broadcast':
    case 'allGather':
    case 'gather':
    case 'reduce':
    case 'allReduce':
      return { kind, dtype, tagged, op, root, inputs: ranks.map(() => data(count)) };
    case 'reduceScatter':
    case 'allToAll':
      return { kind, dtype, tagged, op, root, inputs: ranks.map(() => data(count * worldSize)) };
    case 'scatter': {
      const nulls = shape.nullRanks ?? ranks.filter((rank) => rank !== root);
      return {
        kind,
        dtype,
        tagged,
        op,
        root,
        countPerRank: count,
        inputs: ranks.map((rank) => (rank !== root && nulls.includes(rank) ? null : data(count * worldSize))),
      };
    }
    case 'allToAllV': {
      const sendCounts = shape.sendCounts ?? ranks.map(() => ranks.map(() => randomInt(random, count + 1)));
      return {
        kind,
        dtype,
        tagged,
        op,
        root,
        sendCounts,
        inputs: ranks.map((rank) => data(sendCounts[rank]!.reduce((sum, value) => sum + value, 0))),
      };
    }
  }
}
