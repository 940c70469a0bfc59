/**
 * Communicators beside worlds (#45's numbers): in a 4-rank job split into pairs, a pair's in-place
 * f32 all-reduce with the other pair idle, and both pairs at once; beside the same all-reduce in a
 * 2-rank world job run right after, and the 4-rank world's own. A communicator of k ranks should be
 * within 1.15x of a k-rank world; two disjoint pairs at once each within 2.2x of one pair alone (four
 * ranks share the cores here); a fault-tolerant job within 1.05x of the same job without it.
 *
 *   npx tsx bench/communicators/run.ts [--sizes 8,1M,64M] [--samples 7] [--ms 300] [--hosts 2] [--fault-tolerant]
 *
 * tcp_peer, default settings (the native plane; a communicator opens one of its own), warm. A
 * sample is as many calls as fit in about `--ms` (at least 3), timed on pair 0's ranks (the slower
 * of the two); printed: medians over samples and the median (min-max) of per-sample ratios (sample
 * i of one job against sample i of the other).
 * - `--hosts H`: the ranks live on H network namespaces (bench/collectives/hosts.ts; root), rank r
 *   of W on host floor(r * H / W), and the pairs are ranks of the same parity, so that each pair
 *   crosses hosts as the 2-rank world does.
 * - `--fault-tolerant`: both jobs run again fault-tolerant (`rxccl launch --keep-going`), and a
 *   second table gives each cell's time with it over without it.
 */
import { fileURLToPath } from 'node:url';
import { openSession } from '../../lib/launch/open-session.js';
import type { RankSession } from '../../lib/session/rank-session.js';
import { spread } from '../alternated-forms.js';
import { bytesOf, option } from '../argv.js';
import { median } from '../../lib/diagnostics/median.js';
import { rankJobLines, type RankJobOptions } from '../rank-job.js';
import { HostNamespaces } from '../collectives/hosts.js';

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

/** Pairs of a 4-rank job: ranks 0, 1 and 2, 3 (`halves`), or 0, 2 and 1, 3 (`parity`: across hosts). */
type PairSplit = 'halves' | 'parity';

async function rank(mode: 'pairs' | 'world', split: PairSplit, sizes: readonly number[], samples: number, sampleMs: number): Promise<void> {
  const world = await openSession({ transport: 'tcp_peer' });
  const colour = (rank: number) => (split === 'parity' ? rank & 1 : rank >> 1);
  const pair = mode === 'pairs' ? (await world.split({ color: colour(world.rank) }))! : world;
  // Pair 1 (the ranks without world rank 0) idles while pair 0 is timed alone.
  const otherPair = mode === 'pairs' ? [1, 2, 3].filter((rank) => colour(rank) !== colour(0)) : [];
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
      }
      result.world = await timed(world, world, tensor, calls);
      if (world.rank === 0) process.stdout.write(`SAMPLE ${JSON.stringify(result)}\n`);
    }
  }
  await world.close();
}

/** Each job's samples of one size. */
interface Jobs {
  readonly pairs: readonly Sample[];
  readonly worlds: readonly Sample[];
}

/** The median of `over[i] / under[i]` with its min-max (a job's sample i against another's). */
function ratio(over: readonly Sample[], overForm: string, under: readonly Sample[], underForm: string): string {
  return spread(over.map((sample, index) => sample[overForm]! / (under[index] ?? under[0]!)[underForm]!));
}

async function main(): Promise<void> {
  const sizes = option('--sizes', '8,1M,64M').split(',').map(bytesOf);
  const samples = Number(option('--samples', '7'));
  const sampleMs = Number(option('--ms', '300'));
  const hostCount = process.argv.includes('--hosts') ? Number(option('--hosts', '2')) : null;
  const faultTolerant = process.argv.includes('--fault-tolerant');
  const split: PairSplit = hostCount === null ? 'halves' : 'parity';
  const script = fileURLToPath(import.meta.url);
  const args = (mode: string) => ['rank', mode, split, sizes.join(','), String(samples), String(sampleMs)];
  const hosts = hostCount === null ? null : HostNamespaces.up(hostCount);
  const jobs = async (options: RankJobOptions): Promise<Jobs> => ({
    pairs: await rankJobLines<Sample>(4, script, args('pairs'), 'SAMPLE', options),
    worlds: await rankJobLines<Sample>(2, script, args('world'), 'SAMPLE', options),
  });
  let plain: Jobs;
  let tolerant: Jobs | null = null;
  try {
    plain = await jobs({ hosts });
    if (faultTolerant) tolerant = await jobs({ hosts, keepGoing: true });
  } finally {
    hosts?.down();
  }
  const where = hosts === null ? 'one host' : `${hosts.count} hosts (network namespaces), pairs of ranks 0, 2 and 1, 3`;
  const ofSize = (samples: readonly Sample[], bytes: number) => samples.filter((sample) => sample.bytes === bytes);
  const ms = (samples: readonly Sample[], form: string) => median(samples.map((sample) => sample[form]!)).toFixed(4);
  console.log(`# all-reduce f32 sum in place, tcp_peer, default settings, warm, ${where}; ms per call (max over the ranks timed), medians of ${samples} samples`);
  console.log('| size | 2-rank world | pair of a 4-rank job, the other idle | pair / world | both pairs at once | both / alone | 4-rank world |');
  console.log('|---|---:|---:|---|---:|---|---:|');
  for (const bytes of sizes) {
    const pairs = ofSize(plain.pairs, bytes);
    const worlds = ofSize(plain.worlds, bytes);
    console.log(
      `| ${bytes} | ${ms(worlds, 'world')} | ${ms(pairs, 'pairAlone')} | ${ratio(pairs, 'pairAlone', worlds, 'world')} | ${ms(pairs, 'bothPairs')} | ${ratio(pairs, 'bothPairs', pairs, 'pairAlone')} | ${ms(pairs, 'world')} |`,
    );
  }
  if (tolerant === null) return;
  console.log('\n# the same jobs fault-tolerant (--keep-going) over without it, run one after the other');
  console.log('| size | cell | without | fault-tolerant | fault-tolerant / without |');
  console.log('|---|---|---:|---:|---|');
  const cells: readonly { readonly name: string; readonly job: keyof Jobs; readonly form: string }[] = [
    { name: '2-rank world', job: 'worlds', form: 'world' },
    { name: 'pair alone', job: 'pairs', form: 'pairAlone' },
    { name: '4-rank world', job: 'pairs', form: 'world' },
  ];
  for (const bytes of sizes) {
    for (const { name, job, form } of cells) {
      const without = ofSize(plain[job], bytes);
      const withIt = ofSize(tolerant[job], bytes);
      console.log(`| ${bytes} | ${name} | ${ms(without, form)} | ${ms(withIt, form)} | ${ratio(withIt, form, without, form)} |`);
    }
  }
}

if (process.argv[2] === 'rank') {
  await rank(process.argv[3] as 'pairs' | 'world', process.argv[4] as PairSplit, process.argv[5]!.split(',').map(Number), Number(process.argv[6]), Number(process.argv[7]));
} else {
  await main();
}
