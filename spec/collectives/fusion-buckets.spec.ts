/**
 * Fusion's buckets (lib/collectives/fusion/buckets.ts) against a reference model, over any list of
 * tensors: every tensor in exactly one bucket, a bucket of one type, its tensors in their order,
 * within the bucket size unless it is one tensor alone, and each bucket as full as the next tensor
 * allows (what makes every rank cut the same buckets); `firstBucket`'s `closed` says exactly when a
 * stream may send it; a bucket's layout tells different cuts of the same bytes apart.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bucketLayout, firstBucket, type FusedItem, planBuckets } from '../../lib/collectives/fusion/buckets.js';
import { layoutName } from '../../lib/protocol/layout-hash.js';

const item = fc
  .record({ dtype: fc.constantFrom('f32' as const, 'f16' as const, 'i64' as const), count: fc.oneof(fc.constant(0), fc.nat({ max: 300 })) })
  .map(({ dtype, count }): FusedItem => ({ dtype, count, bytes: count * (dtype === 'f32' ? 4 : dtype === 'f16' ? 2 : 8) }));
const items = fc.array(item, { maxLength: 60 });
const bucketBytes = fc.oneof(fc.integer({ min: 1, max: 2000 }), fc.constantFrom(8, 16, 24));

/** The model: each type's tensors in order, a new bucket whenever the next would overflow the current one. */
function modelBuckets(list: readonly FusedItem[], limit: number): number[][] {
  const types = [...new Set(list.map((entry) => entry.dtype))];
  const buckets: number[][] = [];
  for (const dtype of types) {
    let current: number[] = [];
    let bytes = 0;
    list.forEach((entry, index) => {
      if (entry.dtype !== dtype) return;
      if (current.length > 0 && (bytes >= limit || bytes + entry.bytes > limit)) {
        buckets.push(current);
        current = [];
        bytes = 0;
      }
      current.push(index);
      bytes += entry.bytes;
    });
    if (current.length > 0) buckets.push(current);
  }
  return buckets;
}

describe('fusion buckets', () => {
  it('cut as the model cuts them, for any tensors and any bucket size', () => {
    fc.assert(
      fc.property(items, bucketBytes, (list, limit) => {
        const buckets = planBuckets(list, limit);
        expect(buckets).toEqual(modelBuckets(list, limit));
        // Every tensor once; one type per bucket; within the size unless alone.
        expect(buckets.flat().sort((a, b) => a - b)).toEqual(list.map((_, index) => index));
        for (const bucket of buckets) {
          expect(new Set(bucket.map((index) => list[index]!.dtype)).size).toBe(1);
          const bytes = bucket.reduce((sum, index) => sum + list[index]!.bytes, 0);
          if (bucket.length > 1) expect(bytes).toBeLessThanOrEqual(limit);
        }
      }),
    );
  });

  it('firstBucket: the next bucket of a stream, closed exactly when no later tensor could join it', () => {
    // A full bucket takes not even an empty tensor: else a stream could not send it before the next came.
    const full: FusedItem = { dtype: 'f32', count: 2, bytes: 8 };
    const empty: FusedItem = { dtype: 'f32', count: 0, bytes: 0 };
    expect(firstBucket([full], 8)).toEqual({ count: 1, closed: true });
    expect(firstBucket([full, empty], 8)).toEqual({ count: 1, closed: true });
    expect(firstBucket([empty, full, empty], 8)).toEqual({ count: 2, closed: true });
    fc.assert(
      fc.property(items, bucketBytes, fc.nat({ max: 60 }), (list, limit, from) => {
        const { count, closed } = firstBucket(list, limit, from);
        if (from >= list.length) {
          expect({ count, closed }).toEqual({ count: 0, closed: false });
          return;
        }
        const taken = list.slice(from, from + count);
        const bytes = taken.reduce((sum, entry) => sum + entry.bytes, 0);
        expect(taken.every((entry) => entry.dtype === list[from]!.dtype)).toBe(true);
        if (count > 1) expect(bytes).toBeLessThanOrEqual(limit);
        const next = list[from + count];
        if (next !== undefined) {
          // Stopped early: the next tensor differs in type or would overflow it.
          expect(closed).toBe(true);
          expect(next.dtype !== list[from]!.dtype || bytes >= limit || bytes + next.bytes > limit).toBe(true);
        } else {
          // Took all there is: closed only once full (a tensor more of any size could only overflow it).
          expect(closed).toBe(bytes >= limit);
        }
        // A longer stream never cuts this bucket differently once it is closed.
        if (closed) expect(firstBucket([...list, ...list], limit, from).count).toBe(count);
      }),
    );
  });

  it('layouts: named by type and lengths, equal for equal cuts, different for different cuts of the same bytes', () => {
    expect(layoutName(bucketLayout('f32', [1024, 1024, 1024, 7]))).toBe('"fused f32 [1024 x3, 7]"');
    expect(layoutName(bucketLayout('bf16', [1]))).toBe('"fused bf16 [1]"');
    fc.assert(
      fc.property(fc.array(fc.nat({ max: 50 }), { minLength: 1, maxLength: 20 }), fc.array(fc.nat({ max: 50 }), { minLength: 1, maxLength: 20 }), (a, b) => {
        const same = a.length === b.length && a.every((count, index) => count === b[index]);
        expect(bucketLayout('f32', a) === bucketLayout('f32', b)).toBe(same);
      }),
    );
  });
});
