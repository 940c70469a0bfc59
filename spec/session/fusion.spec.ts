/**
 * Fusion (lib/session/fused-all-reduce.ts, lib/session/operators/all-reduce-fused.ts; docs/architecture.md
 * "Fusion"): many tensors all-reduced as few collectives, on every path (tcp_host_staged through
 * the coordinator, tcp_peer's JS plane and its native plane), ranks in this process. Results are
 * exact and per tensor, in order, whatever the buckets; types are bucketed apart; a bucket cut
 * differently on one rank is named by its layout on every rank; bad input is refused before
 * anything is sent; the stream operator flushes by size, at completion and by its window, and its
 * ranks agree on each windowed bucket even when their streams run at different speeds.
 * spec/process/fusion-processes.spec.ts runs it with every rank a process of its own.
 */
import { concatMap, delay, from, lastValueFrom, of, toArray } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { dataPlaneEngine } from '../../lib/kernels/addon.js';
import { allReduceFused } from '../../lib/session/operators/all-reduce-fused.js';
import type { RankSession } from '../../lib/session/rank-session.js';
import type { Tensor } from '../../lib/tensor.js';
import { rejection, startCoordinator, type TestJob } from '../helpers/job.js';

const jobs: TestJob[] = [];
afterEach(async () => {
  await Promise.all(jobs.splice(0).map((job) => job.dispose()));
});

const native = dataPlaneEngine() !== null;
interface Path {
  readonly name: string;
  readonly transport: 'tcp_host_staged' | 'tcp_peer';
  readonly dataPlane: 'js' | 'native';
}
const PATHS: Path[] = [
  { name: 'tcp_host_staged', transport: 'tcp_host_staged', dataPlane: 'js' },
  { name: 'tcp_peer, the JS plane', transport: 'tcp_peer', dataPlane: 'js' },
  ...(native ? [{ name: 'tcp_peer, the native plane', transport: 'tcp_peer', dataPlane: 'native' } as const] : []),
];
if (!native) console.warn('spec/session/fusion.spec.ts: the native plane is skipped: the native addon is not built here');

async function sessions(worldSize: number, path: Path): Promise<RankSession[]> {
  const job = await startCoordinator(worldSize, { timeoutMs: 10_000, transport: path.transport });
  jobs.push(job);
  return Promise.all(Array.from({ length: worldSize }, (_, rank) => job.openRank(rank, { dataPlane: path.dataPlane })));
}

/** Tensor `index` of rank `rank`: whole numbers, so sums in f32 are exact. */
const tensorOf = (rank: number, index: number, count: number) => Float32Array.from({ length: count }, (_, at) => rank * 1000 + index * 7 + (at % 13));
/** Its sum over `worldSize` ranks. */
const sumOf = (worldSize: number, index: number, count: number) =>
  Array.from({ length: count }, (_, at) => Array.from({ length: worldSize }, (_, rank) => rank * 1000 + index * 7 + (at % 13)).reduce((a, b) => a + b, 0));

/** 40 tensors of lengths 1..~3000 elements: buckets of 16 KiB cut them into many, one alone. */
const COUNTS = Array.from({ length: 40 }, (_, index) => (index === 17 ? 6000 : 1 + ((index * 137) % 900)));

describe('allReduceMany', () => {
  for (const path of PATHS) {
    it(`${path.name}, 3 ranks: exact results per tensor, in order, fresh or in place, types bucketed apart`, async () => {
      const ranks = await sessions(3, path);
      await Promise.all(
        ranks.map(async (session) => {
          const r = session.rank;
          const tensors = COUNTS.map((count, index) => tensorOf(r, index, count));
          const fresh = await session.allReduceMany(tensors, 'sum', { bucketBytes: 16 << 10 });
          expect(fresh).toHaveLength(COUNTS.length);
          fresh.forEach((result, index) => {
            expect(result).toBeInstanceOf(Float32Array);
            expect(result).not.toBe(tensors[index]);
            expect(Array.from(result)).toEqual(sumOf(3, index, COUNTS[index]!));
          });
          // The inputs are untouched; in place, the tensors themselves come back with the sums.
          expect(tensors[3]![0]).toBe(r * 1000 + 21);
          const inPlace = await session.allReduceMany(tensors, 'sum', { bucketBytes: 16 << 10, inPlace: true });
          inPlace.forEach((result, index) => {
            expect(result).toBe(tensors[index]);
            expect(Array.from(result)).toEqual(sumOf(3, index, COUNTS[index]!));
          });
          // Four types in one call: each its own buckets, every result in its input's form.
          const mixed: Tensor[] = [
            Int32Array.of(r, 2 * r),
            { dtype: 'f16', data: Uint16Array.of(0x3c00) }, // 1.0
            Float64Array.of(r / 2),
            BigInt64Array.of(BigInt(r) << 40n),
            Int32Array.of(10),
            { dtype: 'f16', data: Uint16Array.of(0x4000, 0x3c00) }, // 2.0, 1.0
          ];
          const [i32a, f16a, f64, i64, i32b, f16b] = await session.allReduceMany(mixed, 'max');
          expect(Array.from(i32a as Int32Array)).toEqual([2, 4]);
          expect(f16a).toEqual({ dtype: 'f16', data: Uint16Array.of(0x3c00) });
          expect(Array.from(f64 as Float64Array)).toEqual([1]);
          expect(Array.from(i64 as BigInt64Array)).toEqual([2n << 40n]);
          expect(Array.from(i32b as Int32Array)).toEqual([10]);
          expect(f16b).toEqual({ dtype: 'f16', data: Uint16Array.of(0x4000, 0x3c00) });
          expect(await session.allReduceMany([])).toEqual([]);
          // Views cut side by side from one flat buffer (torch DDP's gradients as bucket views) are
          // reduced where they are: in place, the flat buffer holds the sums; fresh, it is untouched.
          const flat = Float32Array.from({ length: 10 }, (_, at) => r + at);
          const cuts = [flat.subarray(0, 3), flat.subarray(3, 4), flat.subarray(4, 10)];
          const sums = Array.from({ length: 10 }, (_, at) => 3 + 3 * at);
          const freshCuts = await session.allReduceMany(cuts);
          expect(freshCuts.flatMap((cut) => Array.from(cut))).toEqual(sums);
          expect(flat[9]).toBe(r + 9);
          const inPlaceCuts = await session.allReduceMany(cuts, 'sum', { inPlace: true });
          inPlaceCuts.forEach((cut, index) => expect(cut).toBe(cuts[index]));
          expect(Array.from(flat)).toEqual(sums);
          // Out of order, they are packed as any others.
          const reversed = await session.allReduceMany([cuts[2]!, cuts[0]!], 'max', { inPlace: true });
          expect(reversed[0]).toBe(cuts[2]);
          expect(Array.from(flat)).toEqual(sums);
          // The session goes on in step.
          expect(Array.from(await session.allReduce(Int32Array.of(1)))).toEqual([3]);
        }),
      );
    });
  }

  it('a bucket cut differently on one rank is a mismatch naming its layout, on every rank', async () => {
    const ranks = await sessions(2, PATHS[PATHS.length - 1]!);
    const errors = await Promise.all(
      ranks.map((session) =>
        rejection(session.allReduceMany(session.rank === 0 ? [new Float32Array(2), new Float32Array(2)] : [new Float32Array(1), new Float32Array(3)])),
      ),
    );
    // The rank that saw it first says it; the other hears it in its abort.
    for (const error of errors) {
      expect(['PROTOCOL', 'REMOTE_ABORT']).toContain(error.code);
      expect(error.message).toMatch(/collective sequence 0 mismatch: rank 0 submitted \{AllReduce F32 root ANY count 4 op sum layout "[a-z-]+; fused f32 \[2 x2\]"\}, rank 1 submitted \{AllReduce F32 root ANY count 4 op sum layout "[a-z-]+; fused f32 \[1, 3\]"\}/);
    }
    expect(errors.map((error) => error.code)).toContain('PROTOCOL');
  });

  it('refuses bad input before anything is sent, naming the tensor', async () => {
    const [session] = await sessions(1, PATHS[0]);
    expect((await rejection(session!.allReduceMany([Int32Array.of(1), Float32Array.of(1)], 'band'))).message).toBe('reduce op band is bitwise and needs an integer dtype, got f32');
    expect((await rejection(session!.allReduceMany([Int32Array.of(1), [1, 2] as never]))).message).toMatch(/^tensors\[1\] must be a typed array/);
    expect((await rejection(session!.allReduceMany([Int32Array.of(1)], 'sum', { bucketBytes: 0 }))).message).toBe('bucketBytes must be a positive integer, got 0');
    expect((await rejection(session!.allReduceMany(Int32Array.of(1) as never))).code).toBe('INVALID_CONFIGURATION');
    // Nothing went out: the session is still in step with itself.
    expect(Array.from(await session!.allReduceMany([Int32Array.of(5)]))[0]).toEqual(Int32Array.of(5));
  });
});

describe('allReduceFused, the operator', () => {
  it('tcp_peer, 2 ranks: flushes full buckets and the rest at completion; every result in order', async () => {
    const ranks = await sessions(2, PATHS[PATHS.length - 1]!);
    await Promise.all(
      ranks.map(async (session) => {
        const tensors = COUNTS.map((count, index) => tensorOf(session.rank, index, count));
        const results = await lastValueFrom(from(tensors).pipe(allReduceFused(session, 'sum', { bucketBytes: 8 << 10 }), toArray()));
        expect(results.map((result) => Array.from(result))).toEqual(COUNTS.map((count, index) => sumOf(2, index, count)));
      }),
    );
  });

  it('with a window, ranks whose streams run at different speeds agree on every bucket', async () => {
    const ranks = await sessions(3, PATHS[1]);
    await Promise.all(
      ranks.map(async (session) => {
        const r = session.rank;
        // Rank 0 sends at once, rank 1 a tensor every 3 ms, rank 2 every 7 ms: their windows close at different tensors.
        const stream = from(COUNTS.slice(0, 24).map((count, index) => tensorOf(r, index, count))).pipe(concatMap((tensor) => (r === 0 ? of(tensor) : of(tensor).pipe(delay(r === 1 ? 3 : 7)))));
        const results = await lastValueFrom(stream.pipe(allReduceFused(session, 'sum', { bucketBytes: 1 << 20, windowMs: 10 }), toArray()));
        expect(results.map((result) => Array.from(result))).toEqual(COUNTS.slice(0, 24).map((count, index) => sumOf(3, index, count)));
        expect(Array.from(await session.allReduce(Int32Array.of(1)))).toEqual([3]);
      }),
    );
  });

  it('refuses a bad window or bucket size at once, and a tensor it cannot reduce as the stream error', async () => {
    const [session] = await sessions(1, PATHS[0]);
    expect(() => allReduceFused(session!, 'sum', { windowMs: -1 })).toThrow('windowMs must be a finite number of milliseconds >= 0, or null, got -1');
    expect(() => allReduceFused(session!, 'sum', { bucketBytes: 1.5 })).toThrow('bucketBytes must be a positive integer, got 1.5');
    const error = await rejection(lastValueFrom(of(Float32Array.of(1)).pipe(allReduceFused(session!, 'bor'))));
    expect(error.message).toBe('reduce op bor is bitwise and needs an integer dtype, got f32');
  });
});
