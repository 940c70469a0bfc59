/**
 * What rxccl's all-reduce could gain from its addon owning the data sockets (issue #10), and how
 * near its native data plane comes, measured against rxccl in the same run:
 *
 *   npx tsx bench/native-ceiling/run.ts [-n 2,4] [--sizes 8,1M,64M] [--rounds 3] [--calls N]
 *
 * For each world size and size, `--rounds` times in turn: rxccl (tcp_peer, `GX1_DATA_PLANE=js`),
 * rxccl on its native data plane (`rxccl-native`, `GX1_DATA_PLANE=native`), then the prototype of
 * data-plane.cc waiting in poll() (`native-block`) and spinning with sched_yield (`native-spin`),
 * each as W processes under `rxccl launch` (rank.ts, which checks one result first). Reports rank
 * 0's mean per call (median over rounds, range) and CPU per call, and the times over rxccl's. The prototype is built with g++ into node_modules/.cache/rxccl/native-ceiling (again
 * when data-plane.cc is newer).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../../lib/kernels/addon.js';
import { median } from '../collectives/median.js';

const IMPLS = ['rxccl', 'rxccl-native', 'native-block', 'native-spin'] as const;
type Impl = (typeof IMPLS)[number];

interface Sample {
  meanUs: number;
  userUs: number;
  systemUs: number;
}

const root = packageRoot();
const here = join(root, 'bench', 'native-ceiling');

function option(name: string, fallback: string): string {
  const at = process.argv.indexOf(name);
  return at >= 0 && process.argv[at + 1] !== undefined ? process.argv[at + 1]! : fallback;
}

function parseSize(text: string): number {
  const match = /^(\d+)([KMG]?)$/i.exec(text.trim());
  if (match === null) throw new Error(`not a size: ${text}`);
  return Number(match[1]) * 1024 ** ' KMG'.indexOf((match[2] || ' ').toUpperCase());
}

/** The prototype's path, compiled when missing or older than its source. */
function buildPrototype(): string {
  const source = join(here, 'data-plane.cc');
  const directory = join(root, 'node_modules', '.cache', 'rxccl', 'native-ceiling');
  const addon = join(directory, 'data-plane.node');
  if (existsSync(addon) && statSync(addon).mtimeMs >= statSync(source).mtimeMs) return addon;
  mkdirSync(directory, { recursive: true });
  const partial = `${addon}.${process.pid}`;
  const includes = ['node-api-headers/include', 'node-addon-api'].map((path) => `-I${join(root, 'node_modules', path)}`);
  const compiled = spawnSync('g++', ['-O3', '-std=c++17', '-shared', '-fPIC', '-DNAPI_VERSION=8', '-DNAPI_CPP_EXCEPTIONS', ...includes, source, '-o', partial], { encoding: 'utf8' });
  if (compiled.status !== 0) throw new Error(`g++ failed to build ${source}:\n${compiled.stderr ?? compiled.error?.message}`);
  renameSync(partial, addon);
  return addon;
}

/** Warm-up and timed calls per run (`--calls`, else by size: 1 MiB needs thousands before V8 has optimised rxccl's path). */
function callsFor(bytes: number): number {
  const given = option('--calls', '');
  if (given !== '') return Number(given);
  if (bytes <= 64 * 1024) return 10_000;
  if (bytes <= 4 << 20) return 3_000;
  return 15;
}

function measure(impl: Impl, worldSize: number, bytes: number, addon: string): Sample {
  const launched = spawnSync(
    process.execPath,
    [join(root, 'bin', 'rxccl.mjs'), 'launch', '-n', String(worldSize), '--transport', 'tcp_peer', '--', join(root, 'node_modules', '.bin', 'tsx'), join(here, 'rank.ts')],
    {
      encoding: 'utf8',
      env: {
        ...process.env,
        CEILING_IMPL: impl,
        GX1_DATA_PLANE: impl === 'rxccl-native' ? 'native' : 'js',
        CEILING_BYTES: String(bytes),
        CEILING_CALLS: String(callsFor(bytes)),
        CEILING_ADDON: addon,
        CEILING_PORT_BASE: String(20_000 + Math.floor(Math.random() * 20_000)),
      },
    },
  );
  const line = launched.stdout.split('\n').find((text) => text.startsWith('[rank 0] {'));
  if (launched.status !== 0 || line === undefined) throw new Error(`${impl} at ${worldSize} ranks, ${bytes} B failed:\n${launched.stdout}${launched.stderr}`);
  return JSON.parse(line.slice('[rank 0] '.length)) as Sample;
}

const worlds = option('-n', '2,4').split(',').map(Number);
const sizes = option('--sizes', '8,1M,64M').split(',').map(parseSize);
const rounds = Number(option('--rounds', '3'));
const addon = buildPrototype();
console.log(`# native ceiling: ${rounds} rounds, rank 0's mean per call, median over rounds (range); CPU per call of rank 0`);
console.log('| ranks | size (B) | rxccl µs | rxccl native µs | native-block µs | native-spin µs | rxccl native / rxccl | spin / rxccl |');
console.log('|---:|---:|---:|---:|---:|---:|---:|---:|');
for (const worldSize of worlds) {
  for (const bytes of sizes) {
    const samples = new Map<Impl, Sample[]>(IMPLS.map((impl) => [impl, []]));
    for (let round = 0; round < rounds; round++) for (const impl of IMPLS) samples.get(impl)!.push(measure(impl, worldSize, bytes, addon));
    const cell = (impl: Impl) => {
      const runs = samples.get(impl)!;
      const times = runs.map((run) => run.meanUs);
      const cpu = median(runs.map((run) => run.userUs)).toFixed(0) + ' + ' + median(runs.map((run) => run.systemUs)).toFixed(0);
      return { time: median(times), text: `${median(times).toFixed(1)} (${Math.min(...times).toFixed(0)}-${Math.max(...times).toFixed(0)}; cpu ${cpu})` };
    };
    const [rx, native, block, spin] = IMPLS.map(cell) as ReturnType<typeof cell>[] as [ReturnType<typeof cell>, ReturnType<typeof cell>, ReturnType<typeof cell>, ReturnType<typeof cell>];
    console.log(`| ${worldSize} | ${bytes} | ${rx.text} | ${native.text} | ${block.text} | ${spin.text} | ${(native.time / rx.time).toFixed(2)} | ${(spin.time / rx.time).toFixed(2)} |`);
  }
}
