import { AsyncSubject, forkJoin, map, type Observable, of, throwError } from 'rxjs';
import { bucketLayout, checkBucketBytes, DEFAULT_BUCKET_BYTES, planBuckets } from '../collectives/fusion/buckets.js';
import { ConfigurationError } from '../errors.js';
import { validateReduction } from '../kernels/index.js';
import { freshResult } from '../kernels/result-memory.js';
import type { ReduceOp } from '../protocol/reduce-op.js';
import { comesTagged, type Tensor, tensorFromBytes, type TensorView, viewTensor } from '../tensor.js';
import type { BufferPool } from '../transport/buffer-pool.js';
import { checkReduceOp } from './arguments.js';

/** How `allReduceMany` packs its tensors into buckets and where results go. */
export interface FusionOptions {
  /** The most bytes a bucket holds (a larger tensor goes alone, unpacked); default 64 MiB, Horovod's. */
  readonly bucketBytes?: number;
  /**
   * Write each result into its own tensor and return the tensors themselves. Default: each result
   * is a fresh tensor of its input's type and length, a view into its bucket's result (tensors of
   * one bucket share one ArrayBuffer, at their own offsets).
   */
  readonly inPlace?: boolean;
}

/** How the fused call all-reduces one bucket: the session's all-reduce, with the bucket's layout for its agreement. */
export type ReduceBucket = (bucket: Tensor, op: ReduceOp, inPlace: boolean, layout: bigint) => Observable<Tensor>;

/**
 * All-reduces `tensors` as few collectives (docs/architecture.md, "Fusion"): the tensors of each
 * type are packed, in order, into buckets of at most `bucketBytes` (lib/collectives/fusion/buckets.ts),
 * each bucket is one all-reduce (one agreement, one schedule, the native plane's in-place path on
 * memory of its own) and the results come back per tensor, in the order given. Every bucket is
 * submitted now, in order, so the next is packed and queued while one runs; every rank must pass
 * tensors of the same types and lengths in the same order (a bucket cut differently is a mismatch
 * of its layout, naming both ranks). Arguments are checked before anything is sent.
 */
export function allReduceMany<T extends Tensor>(reduce: ReduceBucket, scratch: BufferPool, tensors: readonly T[], op: ReduceOp, options: FusionOptions = {}): Observable<T[]> {
  let views: TensorView[];
  let buckets: number[][];
  try {
    if (!Array.isArray(tensors)) throw new ConfigurationError(`allReduceMany takes an array of tensors, got ${typeof tensors}`);
    checkReduceOp(op);
    views = tensors.map((tensor, index) => viewTensor(tensor, `tensors[${index}]`));
    for (const dtype of new Set(views.map((view) => view.dtype))) validateReduction(dtype, op);
    const bucketBytes = checkBucketBytes(options.bucketBytes ?? DEFAULT_BUCKET_BYTES);
    buckets = planBuckets(
      views.map((view) => ({ dtype: view.dtype, count: view.count, bytes: view.bytes.length })),
      bucketBytes,
    );
  } catch (error) {
    return throwError(() => error);
  }
  if (buckets.length === 0) return of([]);
  const inPlace = options.inPlace === true;
  const reduced = buckets.map((members) => reduceBucket(reduce, scratch, members, tensors, views, op, inPlace));
  // Hot, as the session's collectives: the results are handed back (and in-place memory given
  // back to the pool) exactly once, whoever listens.
  const results = new AsyncSubject<T[]>();
  forkJoin(reduced)
    .pipe(
      map((bucketResults) => {
        const ordered = new Array<T>(tensors.length);
        buckets.forEach((members, bucket) => members.forEach((index, slot) => (ordered[index] = bucketResults[bucket]![slot] as T)));
        return ordered;
      }),
    )
    .subscribe(results);
  return results.asObservable();
}

/**
 * Submits one bucket's all-reduce now and emits its tensors' results, in its order. Tensors that
 * lie side by side in one buffer (one tensor alone, or views cut from one flat buffer, as torch
 * DDP's gradients as bucket views) are reduced where they are, without a copy; others are packed
 * into memory of the bucket's own and reduced there in place: fresh memory (`freshResult`) whose
 * views are the results, or with `inPlace` the session's recycled scratch, copied back into the
 * tensors and given back.
 */
function reduceBucket(
  reduce: ReduceBucket,
  scratch: BufferPool,
  members: readonly number[],
  tensors: readonly Tensor[],
  views: readonly TensorView[],
  op: ReduceOp,
  inPlace: boolean,
): Observable<Tensor[]> {
  const { dtype } = views[members[0]!]!;
  const layout = bucketLayout(
    dtype,
    members.map((index) => views[index]!.count),
  );
  const tagged = comesTagged(dtype);
  const offsets: number[] = [];
  let bytes = 0;
  for (const index of members) {
    offsets.push(bytes);
    bytes += views[index]!.bytes.length;
  }
  // Each member's result: its slice of the bucket's result, or (in place) the tensor itself.
  const resultsIn = (result: Uint8Array) =>
    members.map((index, slot) => {
      const view = views[index]!;
      const slice = result.subarray(offsets[slot], offsets[slot]! + view.bytes.length);
      if (!inPlace) return tensorFromBytes(dtype, slice, view.tagged);
      // (Side by side, the result is already there.)
      if (slice.buffer !== view.bytes.buffer || slice.byteOffset !== view.bytes.byteOffset) view.bytes.set(slice);
      return tensors[index]!;
    });
  const together = sideBySide(members.map((index) => views[index]!.bytes));
  if (together !== null) {
    return reduce(tensorFromBytes(dtype, together, tagged), op, inPlace, layout).pipe(map((result) => resultsIn(inPlace ? together : viewTensor(result).bytes)));
  }
  const packed = inPlace ? scratch.take(bytes) : freshResult(bytes);
  members.forEach((index, slot) => packed.set(views[index]!.bytes, offsets[slot]));
  return reduce(tensorFromBytes(dtype, packed, tagged), op, true, layout).pipe(
    map(() => {
      const results = resultsIn(packed);
      // (A bucket that failed is not given back: its session is over.)
      if (inPlace) scratch.give(packed);
      return results;
    }),
  );
}

/** The bytes `parts` cover together where each starts where the one before it ends, in one buffer; else null. */
function sideBySide(parts: readonly Uint8Array[]): Uint8Array | null {
  const first = parts[0]!;
  let end = first.byteOffset + first.byteLength;
  for (let index = 1; index < parts.length; index++) {
    const part = parts[index]!;
    if (part.buffer !== first.buffer || part.byteOffset !== end) return null;
    end += part.byteLength;
  }
  return parts.length === 1 ? first : new Uint8Array(first.buffer, first.byteOffset, end - first.byteOffset);
}
