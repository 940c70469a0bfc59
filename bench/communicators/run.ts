/**
 * Communicators beside worlds (#45's numbers): in a 4-rank job split into pairs, a pair's in-place
 * f32 all-reduce with the other pair idle, and both pairs at once; beside the same all-reduce in a
 * 2-rank world job run right after on the same host. A communicator of k ranks should be within
 * 1.15x of a k-rank world; two disjoint pairs at once each within 2.2x of one pair alone (four
 * ranks share the cores here).
 *
 *   npx tsx bench/communicators/run.ts [--sizes 8,1M,64M] [--samples 7] [--ms 300]
 *
 * tcp_peer, default settings (the native plane; a communicator opens one of its own), warm. A
 * sample is as many calls as fit in about `--ms` (at least 3), timed on pair 0's ranks (the slower
 * of the two); printed: medians over samples and the median (min-max) of per-sample ratios.
 */
import { fileURLToPath } from 'node:url';
import { openSession } from '../../lib/launch/open-session.js';
import type { RankSession } from '../../lib/session/rank-session.js';
import { spread } from '../alternated-forms.js';
import { bytesOf, option } from '../argv.js';
import { median } from '../../lib/diagnostics/median.js';
import { rankJobLines } from '../rank-job.js';

interface Sample {
  readonly bytes: number;
  readonly [form: string]: number;
}

const DONE_TAG = 7;

/**
 * ms per call of `calls` in-place all-reduces on `on`, the slowest of `world`'s ranks (every rank
 * of `world` calls this). The `idle` ranks (not world rank 0) time nothing: they wait for rank 0's
 * word on the mesh, which sleeps, rather than in a collective, whose engine would spin on the cores
 * the timed ranks need.
 */
async function timed(world: RankSession, on: RankSession, tensor: Float32Array, calls: number, idle: readonly number[] = []): Promise<number> {
  await world.barrier();
  let ms = 0;
  if (idle.includes(world.rank)) {
    await world.receive(0, DONE_TAG, { dtype: 'u8', count: 1 });
  } else {
    const started = performance.now();
    for (let call = 0; call < calls; call++) await on.allReduce(tensor, 'sum', { inPlace: true });
    ms = (performance.now() - started) / calls;
    if (world.rank === 0) await Promise.all(idle.map((rank) => world.send(rank, DONE_TAG, Uint8Array.of(1))));
  }
  return (await world.allReduce(Float64Array.of(ms), 'max'))[0]!;
}

async function rank(mode: 'pairs' | 'world', sizes: readonly number[], samples: number, sampleMs: number): Promise<void> {
  const world = await openSession({ transport: 'tcp_peer' });
  const pair = mode === 'pairs' ? (await world.split({ color: world.rank >> 1 }))! : world;
  // Pair 1 (world ranks 2, 3) idles while pair 0 is timed alone.
  const otherPair = mode === 'pairs' ? [2, 3] : [];
  for (const bytes of sizes) {
    const tensor = new Float32Array(Math.max(1, bytes / 4)).fill(1);
    await timed(world, pair, tensor, 3);
    const perCall = await timed(world, pair, tensor, 3, otherPair);
    const calls = Math.max(3, Math.round(sampleMs / Math.max(perCall, 0.001)));
    for (let sample = 0; sample < samples; sample++) {
      const result: Record<string, number> = { bytes };
      if (mode === 'pairs') {
        result.pairAlone = await timed(world, pair, tensor, calls, otherPair);
        result.bothPairs = await timed(world, pair, tensor, calls);
      } else {
        result.world = await timed(world, world, tensor, calls);
      }
      if (world.rank === 0) process.stdout.write(`SAMPLE ${JSON.stringify(result)}\n`);
    }
  }
  await world.close();
}

async function main(): Promise<void> {
  const sizes = option('--sizes', '8,1M,64M').split(',').map(bytesOf);
  const samples = Number(option('--samples', '7'));
  const sampleMs = Number(option('--ms', '300'));
  const script = fileURLToPath(import.meta.url);
  const args = (mode: string) => ['rank', mode, sizes.join(','), String(samples), String(sampleMs)];
  const pairs = await rankJobLines<Sample>(4, script, args('pairs'), 'SAMPLE');
  const worlds = await rankJobLines<Sample>(2, script, args('world'), 'SAMPLE');
  console.log(`# all-reduce f32 sum in place, tcp_peer, default settings, warm; ms per call (max over the ranks timed), medians of ${samples} samples`);
  console.log('| size | 2-rank world | pair of a 4-rank job, the other idle | pair / world | both pairs at once | both / alone |');
  console.log('|---|---:|---:|---|---:|---|');
  for (const bytes of sizes) {
    const mine = pairs.filter((sample) => sample.bytes === bytes);
    const theirs = worlds.filter((sample) => sample.bytes === bytes);
    const world = median(theirs.map((sample) => sample.world!));
    const alone = median(mine.map((sample) => sample.pairAlone!));
    const both = median(mine.map((sample) => sample.bothPairs!));
    const pairOverWorld = mine.map((sample, index) => sample.pairAlone! / (theirs[index] ?? theirs[0]!).world!);
    console.log(`| ${bytes} | ${world.toFixed(4)} | ${alone.toFixed(4)} | ${spread(pairOverWorld)} | ${both.toFixed(4)} | ${spread(mine.map((sample) => sample.bothPairs! / sample.pairAlone!))} |`);
  }
}

if (process.argv[2] === 'rank') {
  await rank(process.argv[3] as 'pairs' | 'world', process.argv[4]!.split(',').map(Number), Number(process.argv[5]), Number(process.argv[6]));
} else {
  await main();
}
