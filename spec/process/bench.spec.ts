/**
 * The collectives bench (bench/collectives/run.ts) end to end, on a tiny plan: worker processes
 * per rank, rows with nccl-tests' columns and bus factors, progress, JSON output.
 */
import { describe, expect, it } from 'vitest';
import { runCollectivesBench } from '../../bench/collectives/run.js';
import { busFactor, cellFor, sizeSweep } from '../../bench/collectives/plan.js';

describe('collectives bench', () => {
  it('sizes and bus factors follow nccl-tests', () => {
    expect(sizeSweep(8, 64 * 1024 * 1024, 8)).toEqual([8, 64, 512, 4096, 32768, 262144, 2097152, 16777216, 67108864]);
    expect(sizeSweep(8, 64, 4)).toEqual([8, 32, 64]);
    expect(busFactor('allreduce', 4)).toBe(1.5);
    expect(busFactor('allgather', 4)).toBe(0.75);
    expect(busFactor('reducescatter', 2)).toBe(0.5);
    expect(busFactor('alltoall', 4)).toBe(0.75);
    expect(busFactor('broadcast', 4)).toBe(1);
    expect(busFactor('reduce', 2)).toBe(1);
    // At least one element per rank; split collectives divisible by the world size.
    expect(cellFor('allgather', 'f32', 8, 4)).toMatchObject({ bytes: 16, count: 4, inputCount: 1 });
    expect(cellFor('alltoall', 'f32', 8, 4)).toMatchObject({ bytes: 16, count: 4, inputCount: 4 });
    expect(cellFor('allreduce', 'f32', 8, 4)).toMatchObject({ bytes: 8, count: 2, inputCount: 2 });
    expect(cellFor('reducescatter', 'bf16', 64, 3)).toMatchObject({ bytes: 60, count: 30, inputCount: 30 });
  });

  it('runs ranks as processes and reports a row per cell', async () => {
    const progress: [number, number][] = [];
    let printed = '';
    const result = await runCollectivesBench({
      worldSizes: [2],
      ops: ['allreduce', 'all_gather', 'barrier'],
      minBytes: 8,
      maxBytes: 64,
      json: true,
      budget: { warmupMs: 1, sampleMs: 1, minSamples: 2, maxSamples: 2, cellMs: 1 },
      onProgress: (done, total) => progress.push([done, total]),
      print: (text) => {
        printed += text;
      },
    });
    expect(result.rows.map((row) => [row.op, row.bytes])).toEqual([
      ['allreduce', 8],
      ['allreduce', 64],
      ['allgather', 8],
      ['allgather', 64],
      ['barrier', 0],
    ]);
    for (const row of result.rows) {
      expect(row.worldSize).toBe(2);
      expect(row.transport).toBe('tcp_host_staged');
      expect(row.samples).toBe(2);
      expect(row.timeUs).toBeGreaterThan(0);
      if (row.bytes > 0) {
        expect(row.algbw).toBeCloseTo(row.bytes / row.timeUs / 1e3, 9);
        expect(row.busbw).toBeCloseTo(row.algbw * busFactor(row.op, 2), 12);
      }
    }
    expect(progress.at(0)).toEqual([0, 5]);
    expect(progress.at(-1)).toEqual([5, 5]);
    const parsed = JSON.parse(printed) as { rows: unknown[]; meta: { transport: string } };
    expect(parsed.rows).toHaveLength(5);
    expect(parsed.meta.transport).toBe('tcp_host_staged');
  }, 30_000);

  it('refuses unknown collectives and element types before starting anything', async () => {
    await expect(runCollectivesBench({ ops: ['allreduse'], print: null })).rejects.toThrow(/unknown collective "allreduse"/);
    await expect(runCollectivesBench({ dtype: 'f128', print: null })).rejects.toThrow(/unknown dtype "f128"/);
  });
});
