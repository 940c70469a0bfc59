/**
 * Does splitting a kernel across threads pay? The synchronous f32 sum kernel at 1-256 MiB of
 * input, k = 2 and 8, run once with RXCCL_KERNEL_THREADS=1 (no splitting) and once with the
 * default (all CPUs), each in its own process since the setting is read once per process.
 * kMinSplitBytes and kPieceBytes in native/run_job.h are set from this.
 *   npx tsx bench/kernels/split.ts [--json]
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { loadAddon } from '../../lib/kernels/addon.js';
import { ElementType } from '../../lib/protocol/element-type.js';
import { reduceOpCode } from '../../lib/protocol/reduce-op.js';
import { formatBytes, gigabytesPerSecond } from './measure.js';

const SIZES = [1, 2, 4, 8, 16, 64, 256].map((mib) => mib << 20);
const SLICES = [2, 8];

type Rates = Record<string, number>; // `${bytes}/${slices}` -> GB/s

async function measureHere(): Promise<Rates> {
  const addon = loadAddon();
  const largest = SIZES[SIZES.length - 1]!;
  const input = new Uint8Array(largest);
  new Float32Array(input.buffer).fill(1.25);
  const output = new Uint8Array(largest / 2);
  const rates: Rates = {};
  for (const bytes of SIZES) {
    for (const slices of SLICES) {
      const count = bytes / slices / 4;
      rates[`${bytes}/${slices}`] = await gigabytesPerSecond(
        bytes,
        () => addon.reduceSlices(ElementType.F32, reduceOpCode('sum'), input, 0, count, slices, output, 0),
        500,
      );
    }
  }
  return rates;
}

function measureIn(threads: string | undefined): Rates {
  const env = { ...process.env };
  if (threads === undefined) delete env.RXCCL_KERNEL_THREADS;
  else env.RXCCL_KERNEL_THREADS = threads;
  const script = fileURLToPath(import.meta.url);
  return JSON.parse(execFileSync(process.execPath, ['--import', 'tsx', script, '--child'], { env, encoding: 'utf8' })) as Rates;
}

if (process.argv.includes('--child')) {
  console.log(JSON.stringify(await measureHere()));
} else {
  const single = measureIn('1');
  const split = measureIn(undefined);
  const rows = SIZES.flatMap((bytes) => SLICES.map((slices) => ({ bytes, slices, single: single[`${bytes}/${slices}`]!, split: split[`${bytes}/${slices}`]! })));
  if (process.argv.includes('--json')) {
    console.log(JSON.stringify({ threads: loadAddon().kernelThreads(), rows }, null, 2));
  } else {
    console.log(`input      k   1 thread GB/s   ${loadAddon().kernelThreads()} threads GB/s`);
    for (const row of rows) {
      console.log(`${formatBytes(row.bytes).padEnd(9)} ${String(row.slices).padStart(2)}   ${row.single.toFixed(1).padStart(13)}   ${row.split.toFixed(1).padStart(13)}`);
    }
  }
}
