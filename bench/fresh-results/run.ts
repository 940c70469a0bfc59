/**
 * What the default call costs beside the in-place one: `allReduce(x, 'sum')` returns a fresh
 * result, `allReduce(x, 'sum', { output })` writes into memory allocated once (the out-of-place
 * schedule without the allocation), `allReduce(x, 'sum', { inPlace: true })` into x. Same job, same
 * sizes, the forms alternated sample by sample, so their ratios are taken within one window.
 *
 *   npx tsx bench/fresh-results/run.ts [-n 2,4] [--sizes 1M,64M] [--samples 9] [--ms 300]
 *
 * One tcp_peer job of `-n` rank processes per world size (as `rxccl launch` starts them), default
 * settings (the native plane). Per size, after a warm-up of both forms, `--samples` pairs of
 * samples, each of as many calls as fit in about `--ms` (at least 3): the time per call is the
 * maximum over ranks, and a line per size gives the three medians, the median of the per-sample
 * ratios default / in place, and their min-max.
 */
import { fileURLToPath } from 'node:url';
import { spread } from '../alternated-forms.js';
import { bytesOf, option } from '../argv.js';
import { median } from '../../lib/diagnostics/median.js';
import { rankJobLines } from '../rank-job.js';
import { openSession } from '../../lib/launch/open-session.js';
import { allReduceForms } from './forms.js';


/** One rank: per size, the samples of both forms; rank 0 prints each pair's times (max over ranks). */
async function rank(sizes: readonly number[], samples: number, sampleMs: number): Promise<void> {
  const session = await openSession({ transport: 'tcp_peer' });
  const slowest = async (ms: number) => (await session.allReduce(Float64Array.of(ms), 'max'))[0]!;
  for (const bytes of sizes) {
    const forms = allReduceForms(session, bytes);
    const timed = async (call: () => Promise<unknown>, calls: number) => {
      await session.barrier();
      const started = performance.now();
      for (let index = 0; index < calls; index++) await call();
      return slowest((performance.now() - started) / calls);
    };
    // Warm-up, and how many calls make a sample: agreed on by every rank (the slowest's time).
    await timed(forms.fresh, 2);
    const perCall = await timed(forms.inPlace, 3);
    const calls = Math.max(3, Math.round(sampleMs / perCall));
    for (let sample = 0; sample < samples; sample++) {
      const fresh = await timed(forms.fresh, calls);
      const intoOutput = await timed(forms.output, calls);
      const inPlace = await timed(forms.inPlace, calls);
      if (session.rank === 0) process.stdout.write(`PAIR ${JSON.stringify({ bytes, fresh, output: intoOutput, inPlace })}\n`);
    }
  }
  await session.close();
}

async function main(): Promise<void> {
  const worldSizes = option('-n', '2,4').split(',').map(Number);
  const sizes = option('--sizes', '1M,64M').split(',').map(bytesOf);
  const samples = Number(option('--samples', '9'));
  const sampleMs = Number(option('--ms', '300'));
  console.log('# all-reduce f32 sum, tcp_peer, default settings; time per call (ms, max over ranks), medians over samples');
  console.log('# ranks  size  default (fresh result)  output (allocated once)  in place  default / in place (min-max)');
  for (const worldSize of worldSizes) {
    const pairs = await rankJobLines<{ bytes: number; fresh: number; output: number; inPlace: number }>(
      worldSize,
      fileURLToPath(import.meta.url),
      ['rank', sizes.join(','), String(samples), String(sampleMs)],
      'PAIR',
    );
    for (const bytes of sizes) {
      const mine = pairs.filter((pair) => pair.bytes === bytes);
      const ratios = mine.map((pair) => pair.fresh / pair.inPlace);
      const [fresh, intoOutput, inPlace] = (['fresh', 'output', 'inPlace'] as const).map((form) => median(mine.map((pair) => pair[form])));
      console.log(`${worldSize}  ${bytes}  ${fresh!.toFixed(3)}  ${intoOutput!.toFixed(3)}  ${inPlace!.toFixed(3)}  ${spread(ratios)}`);
    }
  }
}

if (process.argv[2] === 'rank') {
  await rank(process.argv[3]!.split(',').map(Number), Number(process.argv[4]), Number(process.argv[5]));
} else {
  await main();
}
