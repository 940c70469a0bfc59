/**
 * Fusion (docs/architecture.md, "Fusion") beside what it replaces, forms alternated sample by
 * sample in one job so their ratios come from one window:
 *
 * - many small tensors (`--tensors` of `--tensor-bytes`, f32 sum): one call per tensor, awaited
 *   one by one (a training loop's naive form) and issued all at once, against one `allReduceMany`
 *   (fresh results, and in place);
 * - a stream of gradients (`--stream-bytes` in all, as tensors of `--stream-tensor-bytes`) through
 *   `allReduceFused` with `--bucket-bytes` buckets (default 64 MiB, the operator's), fresh and in place, as tensors of their own
 *   and as views cut from one flat buffer (torch DDP's gradients as bucket views: no packing),
 *   against one all-reduce of the same total bytes in place: time and busbw (nccl-tests' all-reduce
 *   bus bandwidth, 2(n-1)/n x bytes / time).
 *
 *   npx tsx bench/fusion/run.ts [-n 2,4] [--tensors 256] [--tensor-bytes 4K] [--stream-bytes 64M] [--stream-tensor-bytes 1M] [--bucket-bytes 64M] [--samples 7] [--ms 300]
 *
 * One tcp_peer job of `-n` rank processes per world size (as `rxccl launch` starts them), default
 * settings (the native plane, warm). A sample is as many rounds as fit in about `--ms` (at least
 * 3); its time per round is the maximum over ranks. Printed: medians over samples, and the median
 * of the per-sample ratios with their min-max.
 */
import { fileURLToPath } from 'node:url';
import { from, lastValueFrom } from 'rxjs';
import { openSession } from '../../lib/launch/open-session.js';
import { allReduceFused } from '../../lib/session/operators/all-reduce-fused.js';
import { sampleForms, sampleSummary } from '../alternated-forms.js';
import { bytesOf, option } from '../argv.js';
import { rankJobLines } from '../rank-job.js';


interface Settings {
  readonly tensors: number;
  readonly tensorBytes: number;
  readonly streamBytes: number;
  readonly streamTensorBytes: number;
  readonly bucketBytes: number;
  readonly samples: number;
  readonly sampleMs: number;
}

/** One rank: the samples of every form; rank 0 prints each sample's times (ms per round, max over ranks). */
async function rank(settings: Settings): Promise<void> {
  const session = await openSession({ transport: 'tcp_peer' });
  const small = Array.from({ length: settings.tensors }, () => new Float32Array(settings.tensorBytes / 4).fill(1));
  const gradients = Array.from({ length: settings.streamBytes / settings.streamTensorBytes }, () => new Float32Array(settings.streamTensorBytes / 4).fill(1));
  const whole = new Float32Array(settings.streamBytes / 4).fill(1);
  // The same gradients as views cut from one flat buffer (torch DDP's gradients as bucket views).
  const flat = new Float32Array(settings.streamBytes / 4).fill(1);
  const perGradient = settings.streamTensorBytes / 4;
  const flatGradients = gradients.map((_, index) => flat.subarray(index * perGradient, (index + 1) * perGradient));
  const forms = {
    oneByOne: async () => {
      for (const tensor of small) await session.allReduce(tensor, 'sum');
    },
    allAtOnce: () => Promise.all(small.map((tensor) => session.allReduce(tensor, 'sum'))),
    many: () => session.allReduceMany(small, 'sum'),
    manyInPlace: () => session.allReduceMany(small, 'sum', { inPlace: true }),
    stream: () => lastValueFrom(from(gradients).pipe(allReduceFused(session, 'sum', { bucketBytes: settings.bucketBytes }))),
    streamInPlace: () => lastValueFrom(from(gradients).pipe(allReduceFused(session, 'sum', { bucketBytes: settings.bucketBytes, inPlace: true }))),
    streamFlat: () => lastValueFrom(from(flatGradients).pipe(allReduceFused(session, 'sum', { bucketBytes: settings.bucketBytes }))),
    streamFlatInPlace: () => lastValueFrom(from(flatGradients).pipe(allReduceFused(session, 'sum', { bucketBytes: settings.bucketBytes, inPlace: true }))),
    whole: () => session.allReduce(whole, 'sum', { inPlace: true }),
  };
  await sampleForms(session, forms, settings.samples, settings.sampleMs);
  await session.close();
}

async function main(): Promise<void> {
  const worldSizes = option('-n', '2,4').split(',').map(Number);
  const settings: Settings = {
    tensors: Number(option('--tensors', '256')),
    tensorBytes: bytesOf(option('--tensor-bytes', '4K')),
    streamBytes: bytesOf(option('--stream-bytes', '64M')),
    streamTensorBytes: bytesOf(option('--stream-tensor-bytes', '1M')),
    bucketBytes: bytesOf(option('--bucket-bytes', '64M')),
    samples: Number(option('--samples', '7')),
    sampleMs: Number(option('--ms', '300')),
  };
  console.log(`# f32 sum, tcp_peer, default settings (native plane), warm; ms per round (max over ranks), medians over ${settings.samples} samples; ratios: median (min-max) of per-sample ratios`);
  for (const worldSize of worldSizes) {
    const samples = await rankJobLines<Record<string, number>>(worldSize, fileURLToPath(import.meta.url), ['rank', JSON.stringify(settings)], 'SAMPLE');
    const { ms, ratio } = sampleSummary(samples);
    const busbw = (ms: number) => ((2 * (worldSize - 1)) / worldSize) * (settings.streamBytes / 1e9) / (ms / 1e3);
    console.log(`\n## ${worldSize} ranks: ${settings.tensors} tensors of ${settings.tensorBytes} B`);
    console.log('| form | ms per round | per-call time / this |');
    console.log('|---|---|---|');
    console.log(`| ${settings.tensors} calls, awaited one by one | ${ms('oneByOne').toFixed(3)} | 1 |`);
    console.log(`| ${settings.tensors} calls, issued at once | ${ms('allAtOnce').toFixed(3)} | ${ratio('oneByOne', 'allAtOnce')} |`);
    console.log(`| allReduceMany (fresh results) | ${ms('many').toFixed(3)} | ${ratio('oneByOne', 'many')} |`);
    console.log(`| allReduceMany, in place | ${ms('manyInPlace').toFixed(3)} | ${ratio('oneByOne', 'manyInPlace')} |`);
    console.log(`\n## ${worldSize} ranks: ${settings.streamBytes} B as tensors of ${settings.streamTensorBytes} B`);
    console.log('| form | ms per round | busbw GB/s | this / one all-reduce (busbw) |');
    console.log('|---|---|---|---|');
    console.log(`| one all-reduce of ${settings.streamBytes} B, in place | ${ms('whole').toFixed(3)} | ${busbw(ms('whole')).toFixed(2)} | 1 |`);
    console.log(`| allReduceFused stream (${settings.bucketBytes} B buckets, fresh results) | ${ms('stream').toFixed(3)} | ${busbw(ms('stream')).toFixed(2)} | ${ratio('whole', 'stream')} |`);
    console.log(`| allReduceFused stream (${settings.bucketBytes} B buckets, in place) | ${ms('streamInPlace').toFixed(3)} | ${busbw(ms('streamInPlace')).toFixed(2)} | ${ratio('whole', 'streamInPlace')} |`);
    console.log(`| the same, gradients cut from one flat buffer, fresh results | ${ms('streamFlat').toFixed(3)} | ${busbw(ms('streamFlat')).toFixed(2)} | ${ratio('whole', 'streamFlat')} |`);
    console.log(`| the same, gradients cut from one flat buffer, in place | ${ms('streamFlatInPlace').toFixed(3)} | ${busbw(ms('streamFlatInPlace')).toFixed(2)} | ${ratio('whole', 'streamFlatInPlace')} |`);
  }
}

if (process.argv[2] === 'rank') {
  await rank(JSON.parse(process.argv[3]!) as Settings);
} else {
  await main();
}
