/**
 * Whether the event loop stays free while a collective's data moves (#45: "a step of 20 ms JS
 * compute beside a 16 MiB all-reduce in flight takes close to the larger of the two, not their
 * sum"). Per sample, on every rank: the all-reduce alone (in place), `--compute-ms` of JavaScript
 * arithmetic alone, and both as a training step writes them: the all-reduce issued, the compute
 * run, the all-reduce awaited. Printed: medians over samples (ms, max over ranks) and where the
 * step falls between the larger of the two (overlap 1) and their sum (overlap 0).
 *
 *   npx tsx bench/overlap/run.ts [-n 2,4] [--bytes 16M] [--compute-ms 20] [--samples 15]
 *
 * One tcp_peer job of `-n` rank processes per world size, default settings (the native plane).
 */
import { fileURLToPath } from 'node:url';
import { openSession } from '../../lib/launch/open-session.js';
import { bytesOf, option } from '../argv.js';
import { median } from '../../lib/diagnostics/median.js';
import { rankJobLines } from '../rank-job.js';

interface Sample {
  readonly allReduce: number;
  readonly compute: number;
  readonly step: number;
}

/** Busy JavaScript for `ms`: arithmetic on the event loop, as a model's forward pass would be. */
function compute(ms: number): number {
  const until = performance.now() + ms;
  let sum = 0;
  while (performance.now() < until) for (let index = 0; index < 10_000; index++) sum += Math.sqrt(index);
  return sum;
}

async function rank(bytes: number, computeMs: number, samples: number): Promise<void> {
  const session = await openSession({ transport: 'tcp_peer' });
  const tensor = new Float32Array(bytes / 4).fill(1);
  const slowest = async (ms: number) => (await session.allReduce(Float64Array.of(ms), 'max'))[0]!;
  const timed = async (work: () => Promise<unknown>) => {
    await session.barrier();
    const started = performance.now();
    await work();
    return slowest(performance.now() - started);
  };
  const forms = {
    allReduce: () => session.allReduce(tensor, 'sum', { inPlace: true }),
    compute: async () => compute(computeMs),
    step: async () => {
      const reduced = session.allReduce(tensor, 'sum', { inPlace: true });
      compute(computeMs);
      await reduced;
    },
  };
  for (const work of Object.values(forms)) await timed(work);
  for (let sample = 0; sample < samples; sample++) {
    const result: Sample = { allReduce: await timed(forms.allReduce), compute: await timed(forms.compute), step: await timed(forms.step) };
    if (session.rank === 0) process.stdout.write(`SAMPLE ${JSON.stringify(result)}\n`);
  }
  await session.close();
}

async function main(): Promise<void> {
  const worldSizes = option('-n', '2,4').split(',').map(Number);
  const bytes = bytesOf(option('--bytes', '16M'));
  const computeMs = Number(option('--compute-ms', '20'));
  const samples = Number(option('--samples', '15'));
  console.log(`# all-reduce of ${bytes} B f32 in place (tcp_peer, default settings) beside ${computeMs} ms of JavaScript; ms (max over ranks), medians of ${samples} samples`);
  console.log('| ranks | all-reduce alone | compute alone | step (both) | larger | sum | overlap (1: the larger, 0: the sum) |');
  console.log('|---|---:|---:|---:|---:|---:|---|');
  for (const worldSize of worldSizes) {
    const lines = await rankJobLines<Sample>(worldSize, fileURLToPath(import.meta.url), ['rank', String(bytes), String(computeMs), String(samples)], 'SAMPLE');
    const overlaps = lines.map(({ allReduce, compute: alone, step }) => (allReduce + alone - step) / Math.min(allReduce, alone));
    const [allReduce, alone, step] = (['allReduce', 'compute', 'step'] as const).map((form) => median(lines.map((line) => line[form])));
    console.log(
      `| ${worldSize} | ${allReduce!.toFixed(2)} | ${alone!.toFixed(2)} | ${step!.toFixed(2)} | ${Math.max(allReduce!, alone!).toFixed(2)} | ${(allReduce! + alone!).toFixed(2)} | ` +
        `${median(overlaps).toFixed(2)} (${Math.min(...overlaps).toFixed(2)}-${Math.max(...overlaps).toFixed(2)}) |`,
    );
  }
}

if (process.argv[2] === 'rank') {
  await rank(Number(process.argv[3]), Number(process.argv[4]), Number(process.argv[5]));
} else {
  await main();
}
