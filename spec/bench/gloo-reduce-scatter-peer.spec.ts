/**
 * The Gloo C++ library's reduce-scatter as a `--peers` benchmark (bench/collectives/peers/
 * gloo-reduce-scatter.ts): its rows read as Gloo's, its times land in Gloo's one column beside
 * gloo_bench.py's, and it measures the same sizes as rxccl's reducescatter rows. The runs need
 * g++ and libgloo-dev; without them they are skipped, saying why.
 */
import { describe, expect, it } from 'vitest';
import { GLOO } from '../../bench/collectives/peers/gloo.js';
import { GLOO_REDUCE_SCATTER } from '../../bench/collectives/peers/gloo-reduce-scatter.js';
import { measurePeer, parsePeerRows, peerKey } from '../../bench/collectives/peers/peer.js';
import { cellFor } from '../../bench/collectives/plan.js';
import { runCollectivesBench } from '../../bench/collectives/run.js';

const FAST = { processWarmupMs: 1, processWarmupCalls: 0, smallBatch: 0, warmupMs: 1, sampleMs: 1, minSamples: 2, maxSamples: 2, cellMs: 1 };

const benchmark = GLOO_REDUCE_SCATTER.prepare();
const notHere = typeof benchmark === 'string';
if (notHere) console.log(`Gloo reduce-scatter peer not run here: ${benchmark}`);

describe("Gloo's reduce-scatter peer", () => {
  it("shares Gloo's label, column and JSON key, and measures reducescatter alone", () => {
    expect(GLOO_REDUCE_SCATTER).toMatchObject({ label: GLOO.label, column: GLOO.column, jsonKey: GLOO.jsonKey, ops: ['reducescatter'] });
    const row = 'gloo\t4\treducescatter\t16\t622.2\t379.2\t1087.2\t0.000\t0.000\t11x200\trxccl-bench\t1.51\n';
    expect(parsePeerRows(row, GLOO_REDUCE_SCATTER.label)).toEqual(new Map([[peerKey('reducescatter', 16, 4), 622.2]]));
  });

  it.skipIf(notHere)("measures rxccl's reducescatter sizes: 8 B at 2 ranks, 16 B at 4 (a whole element per rank)", async () => {
    const ready = benchmark as Exclude<typeof benchmark, string>;
    for (const worldSize of [2, 4]) {
      const times = await measurePeer(GLOO_REDUCE_SCATTER, ready, worldSize, ['allreduce', 'reducescatter'], [8], 20_000);
      const { bytes } = cellFor('reducescatter', 'f32', 8, worldSize);
      expect([...times.keys()]).toEqual([peerKey('reducescatter', bytes, worldSize)]);
      expect(times.get(peerKey('reducescatter', bytes, worldSize))).toBeGreaterThan(0);
    }
  }, 30_000);

  it.skipIf(notHere)("puts its time in Gloo's one column of a reducescatter row, and under Gloo's JSON key", async () => {
    const lines: string[] = [];
    const result = await runCollectivesBench({ worldSizes: [2], ops: ['reducescatter'], sizes: [8], peers: true, budget: FAST, print: (line) => lines.push(line) });
    const header = lines.find((line) => line.includes('#wrong'))!.replace(/^#/, '').trim().split(/ +/);
    expect(header.filter((column) => column === 'gloo')).toHaveLength(1);
    const gloo = header.indexOf('gloo');
    expect(header[gloo + 1]).toBe('ratio');
    const rows = lines.filter((line) => /^ +\d/.test(line)).map((line) => line.trim().split(/ +/));
    expect(rows).toHaveLength(1);
    const glooUs = Number(rows[0]![gloo]);
    expect(glooUs).toBeGreaterThan(0);
    expect(result.gloo).toEqual({ [peerKey('reducescatter', 8, 2)]: glooUs });
  }, 30_000);
});
