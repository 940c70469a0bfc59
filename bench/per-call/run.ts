/**
 * Where a small collective's time goes (#46 item 2): Node's floor beside rxccl's cost per call.
 *
 *   npm run build && node dist/bench/per-call/run.js [--samples 5] [--calls 20000]
 *   (or `npx tsx bench/per-call/run.ts`: the ranks then run under tsx, whose transform adds JS cost)
 *
 * 1. The floor in this process, ns per operation: an N-API call (the addon's `kernelThreads()`),
 *    an `await` of a resolved promise, a uv_async hand-off (the addon's `divide` of 8 bytes on a
 *    worker thread, its callback back on the event loop, awaited).
 * 2. The floor of a message: a 40-byte ping-pong over loopback TCP between two processes
 *    (loopback_pingpong.c, built with cc into node_modules/.cache/rxccl/per-call), one way, with
 *    the reader blocking in recv and spinning on it.
 * 3. rxccl: a 2-rank tcp_peer job (defaults: the native plane, run inline on the calling thread)
 *    of 8-byte f32 all-reduces in place, each call cut in three by timestamps taken around the
 *    engine's `run` (the bench wraps it): JS before (the request, the choice, the queue, the
 *    header), the engine (its messages, and the wait for the peer, whose own JS comes in it), JS
 *    after (the outcome to the caller's `await`).
 * 4. rxccl's JavaScript alone: ten times the calls with the engine's `run` answering at once (done, as
 *    an inline collective whose peer was there), both ranks alike: the whole path of a call but the
 *    wire and the peer, in wall time and in this process's CPU time (less shaken by a loaded host).
 * 5. The inline budget (`inlineMicros`): the per-call time again with 0, every collective handed to
 *    the engine's thread and back (the cost a call pays without the calling-thread form).
 * Medians of `--samples` samples (min-max); each sample `--calls` calls.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadAddon, packageRoot } from '../../lib/kernels/addon.js';
import { openSession } from '../../lib/launch/open-session.js';
import { ElementType } from '../../lib/protocol/element-type.js';
import { DataPlane } from '../../lib/transport/data-plane.js';
import { median } from '../../lib/diagnostics/median.js';
import { option } from '../argv.js';
import { rankJobLines } from '../rank-job.js';

interface CallSample {
  readonly perCallUs: number;
  readonly beforeUs: number;
  readonly engineUs: number;
  readonly afterUs: number;
  /** The calls again with an engine that answers at once: wall and CPU time per call. */
  readonly jsUs: number;
  readonly jsCpuUs: number;
}

/** `median (min-max)` of `values`, to `digits`. */
function summary(values: readonly number[], digits = 2): string {
  return `${median(values).toFixed(digits)} (${Math.min(...values).toFixed(digits)}-${Math.max(...values).toFixed(digits)})`;
}

/** ns per operation of `operation` repeated `count` times, awaited where it returns a promise. */
async function nsPerOperation(count: number, operation: () => unknown): Promise<number> {
  const started = process.hrtime.bigint();
  for (let index = 0; index < count; index++) await operation();
  return Number(process.hrtime.bigint() - started) / count;
}

async function nodeFloor(samples: number, calls: number): Promise<Record<string, number[]>> {
  const addon = loadAddon();
  const bytes = new Uint8Array(8);
  const handOff = () => new Promise<void>((resolve, reject) => addon.divide(ElementType.F32, bytes, 0, 2, 1, (error) => (error === null ? resolve() : reject(error))));
  const floors: Record<string, () => unknown> = {
    'N-API call': () => addon.kernelThreads(),
    'await of a resolved promise': () => Promise.resolve(),
    'uv_async hand-off (a worker thread and back)': handOff,
  };
  const times: Record<string, number[]> = {};
  for (let sample = 0; sample < samples; sample++) {
    for (const [name, operation] of Object.entries(floors)) (times[name] ??= []).push(await nsPerOperation(name.startsWith('uv_async') ? calls / 10 : calls, operation));
  }
  return times;
}

/** loopback_pingpong, built once (again when the source is newer); null with why where cc fails. */
function pingPongBinary(): string | { failure: string } {
  // From the package root: the compiled bench (dist/bench) has no copy of the C source.
  const source = join(packageRoot(), 'bench', 'per-call', 'loopback_pingpong.c');
  const directory = join(packageRoot(), 'node_modules', '.cache', 'rxccl', 'per-call');
  const binary = join(directory, 'loopback_pingpong');
  if (existsSync(binary) && statSync(binary).mtimeMs >= statSync(source).mtimeMs) return binary;
  mkdirSync(directory, { recursive: true });
  const built = spawnSync('cc', ['-O2', '-o', binary, source], { encoding: 'utf8' });
  return built.status === 0 ? binary : { failure: `cc failed: ${(built.stderr ?? built.error?.message ?? '').trim().split('\n')[0]}` };
}

/** One rank of the 2-rank job: samples of 8-byte all-reduces, each call cut in three; `inlineMicros` the plane's inline budget. */
async function rank(samples: number, calls: number, inlineMicros: number | 'auto'): Promise<void> {
  let engineStarted = 0n;
  let engineReturned = 0n;
  // While set, the engine's `run` answers at once, done, moving nothing (both ranks alike).
  let answerAtOnce = false;
  // Wraps the engine's `run` of every data plane this process opens: the bench's only look inside.
  const open = DataPlane.open.bind(DataPlane);
  DataPlane.open = (...args: Parameters<typeof DataPlane.open>) => {
    const plane = open(...args);
    const engine = (plane as unknown as { engine: { run: (...run: unknown[]) => void } }).engine;
    const run = engine.run.bind(engine);
    Object.defineProperty(engine, 'run', {
      value: (...runArgs: unknown[]) => {
        if (answerAtOnce) return (runArgs[5] as () => void)();
        engineStarted = process.hrtime.bigint();
        try {
          run(...runArgs);
        } finally {
          engineReturned = process.hrtime.bigint();
        }
      },
    });
    return plane;
  };
  const session = await openSession({ transport: 'tcp_peer', inlineMicros });
  const tensor = new Float32Array(2);
  for (let call = 0; call < calls / 4; call++) await session.allReduce(tensor, 'sum', { inPlace: true });
  for (let sample = 0; sample < samples; sample++) {
    let before = 0n;
    let engine = 0n;
    let after = 0n;
    await session.barrier();
    const started = process.hrtime.bigint();
    for (let call = 0; call < calls; call++) {
      const called = process.hrtime.bigint();
      await session.allReduce(tensor, 'sum', { inPlace: true });
      const resumed = process.hrtime.bigint();
      before += engineStarted - called;
      engine += engineReturned - engineStarted;
      after += resumed - engineReturned;
    }
    const us = (ns: bigint) => Number(ns) / calls / 1000;
    const perCallUs = us(process.hrtime.bigint() - started);
    // Ten times the calls: they are cheap, and a loaded host shakes a short loop.
    answerAtOnce = true;
    const cpu = process.cpuUsage();
    const alone = process.hrtime.bigint();
    for (let call = 0; call < calls * 10; call++) await session.allReduce(tensor, 'sum', { inPlace: true });
    const jsUs = us(process.hrtime.bigint() - alone) / 10;
    const { user, system } = process.cpuUsage(cpu);
    answerAtOnce = false;
    const result: CallSample = { perCallUs, beforeUs: us(before), engineUs: us(engine), afterUs: us(after), jsUs, jsCpuUs: (user + system) / calls / 10 };
    // Rank 0 speaks for both: the peer's JS is inside rank 0's engine time.
    if (session.rank === 0) process.stdout.write(`SAMPLE ${JSON.stringify(result)}\n`);
  }
  await session.close();
}

async function main(): Promise<void> {
  const samples = Number(option('--samples', '5'));
  const calls = Number(option('--calls', '20000'));
  console.log(`# per call (#46 item 2): medians of ${samples} samples (min-max), one host`);
  console.log('| what | time (us) |');
  console.log('|---|---:|');
  for (const [name, times] of Object.entries(await nodeFloor(samples, calls))) console.log(`| ${name} | ${summary(times.map((ns) => ns / 1000), 3)} |`);
  const binary = pingPongBinary();
  if (typeof binary === 'string') {
    for (const [name, spin] of [['loopback TCP one way, 40 B, blocking recv', '0'], ['loopback TCP one way, 40 B, spinning recv', '1']] as const) {
      const times = Array.from({ length: samples }, () => Number(spawnSync(binary, [String(calls), spin], { encoding: 'utf8' }).stdout.trim()));
      console.log(`| ${name} | ${summary(times)} |`);
    }
  } else {
    console.log(`# loopback ping-pong not run: ${binary.failure}`);
  }
  const script = fileURLToPath(import.meta.url);
  const rows = await rankJobLines<CallSample>(2, script, ['rank', String(samples), String(calls), 'auto'], 'SAMPLE');
  const column = (pick: (row: CallSample) => number, of = rows) => summary(of.map(pick));
  console.log(`| rxccl all-reduce 8 B in place, 2 ranks: per call | ${column((row) => row.perCallUs)} |`);
  console.log(`| of which JS before the engine | ${column((row) => row.beforeUs)} |`);
  console.log(`| of which the engine (its messages, the wait for the peer) | ${column((row) => row.engineUs)} |`);
  console.log(`| of which JS after it, to the caller's await | ${column((row) => row.afterUs)} |`);
  console.log(`| rxccl's JS alone per call (the engine answering at once), wall | ${column((row) => row.jsUs)} |`);
  console.log(`| rxccl's JS alone per call, this process's CPU | ${column((row) => row.jsCpuUs)} |`);
  const handedOver = await rankJobLines<CallSample>(2, script, ['rank', String(samples), String(calls / 10), '0'], 'SAMPLE');
  console.log(`| all-reduce 8 B with inlineMicros 0 (every call to the engine's thread and back): per call | ${column((row) => row.perCallUs, handedOver)} |`);
}

if (process.argv[2] === 'rank') {
  const inline = process.argv[5] ?? 'auto';
  await rank(Number(process.argv[3]), Number(process.argv[4]), inline === 'auto' ? 'auto' : Number(inline));
} else {
  await main();
}
