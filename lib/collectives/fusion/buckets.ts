import { ConfigurationError } from '../../errors.js';
import { layoutHash } from '../../protocol/layout-hash.js';
import type { DType } from '../../protocol/element-type.js';

/**
 * Fusion's buckets (docs/architecture.md, "Fusion"): many small tensors all-reduced as one
 * collective each bucket, as torch DDP's gradient buckets and Horovod's fusion buffer. Which
 * tensors share a bucket follows from their sizes and types alone, in order, so every rank cuts
 * the same buckets from the same tensors without a word; each bucket's layout (its type and its
 * tensors' lengths) joins its all-reduce's agreement, so ranks that cut differently are named at
 * once instead of summing one tensor into another.
 */

/** What fusion needs to know of a tensor: its element type, its length and its bytes. */
export interface FusedItem {
  readonly dtype: DType;
  readonly count: number;
  readonly bytes: number;
}

/**
 * Horovod's fusion buffer (HOROVOD_FUSION_THRESHOLD, 64 MiB); torch DDP's buckets are 25 MiB. Fewer
 * collectives win here: a 64 MiB stream of gradients views in place ran at 0.92 of one all-reduce's
 * busbw in 64 MiB buckets, 0.68 in 25 MiB ones (2 ranks, bench/fusion).
 */
export const DEFAULT_BUCKET_BYTES = 64 << 20;

/** A bucket's size must be a positive integer number of bytes (a tensor larger goes alone). */
export function checkBucketBytes(bucketBytes: number): number {
  if (!Number.isSafeInteger(bucketBytes) || bucketBytes < 1) {
    throw new ConfigurationError(`bucketBytes must be a positive integer, got ${String(bucketBytes)}`);
  }
  return bucketBytes;
}

/**
 * How many of `items`, from `from`, make the next bucket: those of that one's type whose bytes
 * together stay within `bucketBytes` (at least the first, however large; a full bucket takes no
 * more, not even an empty tensor). `closed` when the bucket can take no more of any later item (it
 * is full, or the next differs in type or does not fit), so a stream may send it without waiting.
 */
export function firstBucket(items: readonly FusedItem[], bucketBytes: number, from = 0): { readonly count: number; readonly closed: boolean } {
  if (from >= items.length) return { count: 0, closed: false };
  const dtype = items[from]!.dtype;
  let bytes = items[from]!.bytes;
  let end = from + 1;
  for (; end < items.length; end++) {
    const next = items[end]!;
    if (next.dtype !== dtype || bytes >= bucketBytes || bytes + next.bytes > bucketBytes) return { count: end - from, closed: true };
    bytes += next.bytes;
  }
  return { count: end - from, closed: bytes >= bucketBytes };
}

/**
 * A call's buckets: the indices of `items` in each, every type's tensors in their order (types in
 * the order they first appear), cut by `firstBucket`.
 */
export function planBuckets(items: readonly FusedItem[], bucketBytes: number): number[][] {
  const byType = new Map<DType, number[]>();
  items.forEach((item, index) => {
    const indices = byType.get(item.dtype);
    if (indices === undefined) byType.set(item.dtype, [index]);
    else indices.push(index);
  });
  const buckets: number[][] = [];
  for (const indices of byType.values()) {
    const ofType = indices.map((index) => items[index]!);
    for (let start = 0; start < indices.length; ) {
      const { count } = firstBucket(ofType, bucketBytes, start);
      buckets.push(indices.slice(start, start + count));
      start += count;
    }
  }
  return buckets;
}

/**
 * A bucket's layout hash, named `fused f32 [1024 x255, 7]` (its type, then its tensors' lengths,
 * equal neighbours counted): what its all-reduce's agreement checks besides its total length.
 */
export function bucketLayout(dtype: DType, counts: readonly number[]): bigint {
  const runs: string[] = [];
  for (let index = 0; index < counts.length; ) {
    let end = index + 1;
    while (end < counts.length && counts[end] === counts[index]) end++;
    runs.push(end - index === 1 ? String(counts[index]) : `${counts[index]} x${end - index}`);
    index = end;
  }
  return layoutHash(`fused ${dtype} [${runs.join(', ')}]`);
}
