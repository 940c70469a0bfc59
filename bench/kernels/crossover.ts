/**
 * Where running a kernel synchronously stops paying: latency of one f32 sum of two slices, one at
 * a time, called synchronously vs queued on a worker thread and awaited, from 4 KiB to 4 MiB of
 * input, next to the round trip of an empty queued kernel. The crossover is the largest size
 * whose synchronous run is no longer than that round trip: below it, running in place is faster
 * and holds the event loop for less than the round trip would delay the result.
 * SYNC_CROSSOVER_BYTES in lib/kernels/schedule.ts is set from this.
 *   npx tsx bench/kernels/crossover.ts [--json]
 */
import { loadAddon } from '../../lib/kernels/addon.js';
import { ElementType } from '../../lib/protocol/element-type.js';
import { reduceOpCode } from '../../lib/protocol/reduce-op.js';
import { formatBytes } from './measure.js';

const SIZES = [4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096].map((kib) => kib * 1024);
const RUNS = 200;

async function main(): Promise<void> {
  const json = process.argv.includes('--json');
  const addon = loadAddon();
  const sum = reduceOpCode('sum');
  const input = new Uint8Array(SIZES[SIZES.length - 1]!);
  new Float32Array(input.buffer).fill(0.5);
  const output = new Uint8Array(input.length / 2);
  const roundTripMicros = await medianMicros(
    () => new Promise<void>((resolve) => addon.reduceSlices(ElementType.F32, sum, input, 0, 0, 2, output, 0, () => resolve())),
  );
  if (!json) console.log(`empty kernel, queued: ${roundTripMicros.toFixed(1)} us`);
  const rows: { bytes: number; syncMicros: number; asyncMicros: number }[] = [];
  for (const bytes of SIZES) {
    const count = bytes / 8;
    const runSync = () => addon.reduceSlices(ElementType.F32, sum, input, 0, count, 2, output, 0);
    const runAsync = () =>
      new Promise<void>((resolve) => addon.reduceSlices(ElementType.F32, sum, input, 0, count, 2, output, 0, () => resolve()));
    const syncMicros = await medianMicros(runSync);
    const asyncMicros = await medianMicros(runAsync);
    rows.push({ bytes, syncMicros, asyncMicros });
    if (!json) {
      console.log(`${formatBytes(bytes).padEnd(8)} sync ${syncMicros.toFixed(1).padStart(8)} us   async ${asyncMicros.toFixed(1).padStart(8)} us`);
    }
  }
  const crossover = rows.filter((row) => row.syncMicros <= roundTripMicros).at(-1)?.bytes ?? 0;
  if (json) console.log(JSON.stringify({ roundTripMicros, rows, crossoverBytes: crossover }, null, 2));
  else console.log(`largest size whose synchronous run fits in the round trip: ${formatBytes(crossover)}`);
}

/** Median latency in microseconds: one run at a time, so each sample pays the full round trip. */
async function medianMicros(run: () => unknown): Promise<number> {
  for (let i = 0; i < 10; i++) await run();
  const samples: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const start = process.hrtime.bigint();
    await run();
    samples.push(Number(process.hrtime.bigint() - start) / 1000);
  }
  samples.sort((a, b) => a - b);
  return samples[Math.floor(samples.length / 2)]!;
}

await main();
