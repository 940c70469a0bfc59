/**
 * Kernel throughput: GB/s of input read by sum f32 over k = 2, 4, 8 slices, from 4 KiB to
 * 256 MiB of input, next to Buffer.copy of the same bytes and the TypeScript reference.
 *   npx tsx bench/kernels/run.ts [--json]
 * Columns: `scheduled` is reduceSlices() as callers use it (sync up to SYNC_CROSSOVER_BYTES,
 * else a worker thread, awaited one at a time); `kernel` is the addon called synchronously (the
 * loop alone, split across threads from 8 MiB).
 */
import os from 'node:os';
import { loadAddon } from '../../lib/kernels/addon.js';
import { kernelBackend, reduceSlices, SYNC_CROSSOVER_BYTES } from '../../lib/kernels/index.js';
import { referenceReduceSlices } from '../../lib/kernels/reference.js';
import { ElementType } from '../../lib/protocol/element-type.js';
import { reduceOpCode } from '../../lib/protocol/reduce-op.js';
import { formatBytes, gigabytesPerSecond } from './measure.js';

const SIZES = [4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144].map((kib) => kib * 1024);
const SLICES = [2, 4, 8];
// The reference takes about a second per run at the top size; it stops here to keep a run short.
const REFERENCE_MAX_BYTES = 64 << 20;
// Milliseconds of batches per measurement: enough for a quiet moment on a shared VM.
const BUDGET_MS = 400;

interface Row {
  bytes: number;
  slices: number;
  copy: number;
  scheduled: number;
  kernel: number;
  reference: number | null;
}

async function main(): Promise<void> {
  const json = process.argv.includes('--json');
  if (kernelBackend() !== 'native') throw new Error('the native kernels did not load; run `npm install` first');
  const addon = loadAddon();
  const largest = SIZES[SIZES.length - 1]!;
  const input = Buffer.alloc(largest);
  new Float32Array(input.buffer, input.byteOffset, largest / 4).fill(1.25);
  const copyTarget = Buffer.alloc(largest);
  const output = new Uint8Array(largest / 2);

  const rows: Row[] = [];
  for (const bytes of SIZES) {
    const source = input.subarray(0, bytes);
    const copy = await gigabytesPerSecond(bytes, () => source.copy(copyTarget), BUDGET_MS);
    for (const slices of SLICES) {
      const out = output.subarray(0, bytes / slices);
      const count = bytes / slices / 4;
      const request = { dtype: 'f32' as const, op: 'sum' as const, input: source, slices, output: out };
      const scheduled = await gigabytesPerSecond(bytes, () => reduceSlices(request), BUDGET_MS);
      const kernel = await gigabytesPerSecond(
        bytes,
        () => addon.reduceSlices(ElementType.F32, reduceOpCode('sum'), source, 0, count, slices, out, 0),
        BUDGET_MS,
      );
      const reference =
        bytes <= REFERENCE_MAX_BYTES ? await gigabytesPerSecond(bytes, () => referenceReduceSlices('f32', 'sum', source, slices, out), 100) : null;
      const row = { bytes, slices, copy, scheduled, kernel, reference };
      rows.push(row);
      if (!json) printRow(row, rows.length === 1);
    }
  }
  const machine = {
    cpu: os.cpus()[0]?.model ?? 'unknown',
    cpus: os.cpus().length,
    node: process.version,
    kernelThreads: addon.kernelThreads(),
    syncCrossoverBytes: SYNC_CROSSOVER_BYTES,
  };
  if (json) console.log(JSON.stringify({ machine, rows }, null, 2));
  else console.log(`\n${machine.cpus} x ${machine.cpu}, Node ${machine.node}, kernel threads ${machine.kernelThreads}`);
}

function printRow(row: Row, header: boolean): void {
  const rate = (value: number | null) => (value === null ? '-' : value.toFixed(2)).padStart(9);
  const ratio = (value: number | null) => (value === null ? '-' : `${value.toFixed(1)}x`).padStart(8);
  if (header) {
    console.log('input      k   copy GB/s  scheduled  kernel    reference  sched/copy  kernel/ref');
  }
  console.log(
    `${formatBytes(row.bytes).padEnd(9)} ${String(row.slices).padStart(2)} ${rate(row.copy)}  ${rate(row.scheduled)} ${rate(row.kernel)} ${rate(row.reference)}  ${ratio(row.scheduled / row.copy)}    ${ratio(row.reference === null ? null : row.kernel / row.reference)}`,
  );
}

await main();
