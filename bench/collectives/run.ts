/**
 * Collectives bench, nccl-tests style, over ranks in SEPARATE PROCESSES:
 *
 *   npx tsx bench/collectives/run.ts [--json | --markdown] [--ops allreduce,broadcast] [-n 2,4]
 *                                    [-b 8] [-e 64M] [-f 8] [--sizes 8,1M] [--dtype f32]
 *                                    [-w N] [--iters N] [--transport tcp_peer|tcp_host_staged] [--peers] [--rounds R]
 *
 * takes the arguments of `rxccl bench` (lib/cli/bench-command.ts parses them for both).
 * For each world size it starts a coordinator in this process and one worker process per rank
 * (bench/collectives/worker.ts, with the GX1_* environment, `openSession()` without options);
 * the workers run every (op, size) cell in its out-of-place form, then its in-place form where it
 * has one: warm-up, then timed samples of back-to-back calls, time = max over ranks of the
 * per-call average, the median over samples reported (see worker.ts). Columns (nccl-table.ts):
 * size (bytes), count (elements), type, redop, root, then per form time (us), algbw and busbw
 * (GB/s, 1e9 bytes), with nccl-tests' bus factors (allreduce 2(n-1)/n; allgather, reducescatter,
 * alltoall (n-1)/n; broadcast, reduce 1), and #wrong (data-check.ts). Before the first process
 * starts, a `# plan:` line and a `# estimate:` of the duration (estimate.ts). Iterations are capped
 * by time, so a default run (7 ops x 9 sizes x 2 world sizes) takes a few minutes on a 2-core
 * machine; `quick` (plan.ts's QUICK) takes seconds. With `--rounds R` the peers and rxccl are
 * measured in turn R times per world size, and a summary gives each cell's median same-round
 * ratio (rounds.ts). With `--hosts H` the ranks (and the peers') live on H hosts, network
 * namespaces of their own, the coordinator here on their bridge (hosts.ts).
 *
 * `runCollectivesBench(options)` is the same as a function (`rxccl bench` calls it).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { availableParallelism, loadavg } from 'node:os';
import { createInterface } from 'node:readline';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Coordinator } from '../../lib/coordinator/coordinator.js';
import type { BenchOptions, BenchResult } from '../../lib/cli/bench-options.js';
import { runCli } from '../../lib/cli/main.js';
import { coordinatorBusyWindow } from '../../lib/launch/coordinator-busy-window.js';
import { ConfigurationError } from '../../lib/errors.js';
import { UniqueId } from '../../lib/protocol/unique-id.js';
import { generateSecret } from '../../lib/transport/job-secret.js';
import { DEFAULT_TRANSPORT, parseTransport } from '../../lib/transport/transport-kind.js';
import { estimateSeconds, formatDuration } from './estimate.js';
import { HostNamespaces } from './hosts.js';
import { median } from '../../lib/diagnostics/median.js';
import { NcclTable } from './nccl-table.js';
import { type PeerState, whyEmpty } from './peers/empty-cell.js';
import { GLOO } from './peers/gloo.js';
import { GLOO_REDUCE_SCATTER } from './peers/gloo-reduce-scatter.js';
import { OPEN_MPI_TCP } from './peers/open-mpi.js';
import { measurePeer, type Peer, type PeerBenchmark, peerKey } from './peers/peer.js';
import {
  BENCH_OPS,
  type BenchOp,
  type BenchRow,
  type Budget,
  type Cell,
  cellFor,
  DEFAULT_BUDGET,
  parseDType,
  parseOp,
  type ProcessWarmup,
  QUICK,
  sizeSweep,
  type WorkerPlan,
} from './plan.js';
import { type CellRounds, cellRounds, formatRoundSummary, type MeasuredRound } from './rounds.js';

export type { BenchRow } from './plan.js';

/** `rxccl bench`'s options (lib/cli/bench-options.ts), and what callers in code may add. */
export interface CollectivesBenchOptions extends BenchOptions {
  /** One world size (instead of `worldSizes`). */
  worldSize?: number;
  /** One collective (instead of `ops`). */
  op?: string;
  /** Time budget per cell (see plan.ts); mostly for tests. */
  budget?: Partial<Budget>;
  /** Per-world-size limit on the workers' run, in ms (default 10 minutes). */
  timeoutMs?: number;
}

/** What `rxccl bench` reads back (lib/cli/bench-options.ts), with everything the bench measured. */
export interface CollectivesBenchResult extends BenchResult {
  readonly rows: BenchRow[];
  /** What the workers reported: kernel backend, transport, Node version. */
  readonly meta: Record<string, unknown>;
  readonly wallSeconds: number;
  /** Gloo's median microseconds by peerKey (op/bytes/world), when `peers` measured it. */
  readonly gloo?: Record<string, number>;
  /** Open MPI's (over TCP) median microseconds by peerKey, when `peers` measured it. */
  readonly mpiTcp?: Record<string, number>;
  /** With more than one round: every cell's times and same-round ratios (rows carry their `round`). */
  readonly rounds?: CellRounds[];
}

/** The peers `peers` measures, in the table's column order (Gloo's reduce-scatter shares Gloo's column). */
const PEERS: readonly Peer[] = [GLOO, OPEN_MPI_TCP, GLOO_REDUCE_SCATTER];

const DEFAULTS = { worldSizes: [2, 4], minBytes: 8, maxBytes: 64 * 1024 * 1024, step: 8, dtype: 'f32' };

/**
 * The rank processes run in this process's working directory, the user's, so that a relative path
 * in their environment (GX1_COLLECTIVE_AUTOTUNE_PROFILE=rxccl-autotune.json, GX1_SECRET_FILE,
 * GX1_FLIGHT_RECORDER, ...) names the file it names in the user's shell. From the sources they
 * need tsx, which `--import tsx` would look up from that directory: it is given by its path, with
 * the package's tsconfig.json.
 */
const WORKER = (() => {
  const url = new URL(import.meta.url);
  if (!url.pathname.endsWith('.ts')) return { path: fileURLToPath(new URL('./worker.js', url)), nodeArgs: [], env: {} };
  const tsx = pathToFileURL(createRequire(url).resolve('tsx')).href;
  return { path: fileURLToPath(new URL('./worker.ts', url)), nodeArgs: ['--import', tsx], env: { TSX_TSCONFIG_PATH: fileURLToPath(new URL('../../tsconfig.json', url)) } };
})();

function positiveInteger(value: number, name: string): number {
  if (!Number.isSafeInteger(value) || value < 1) throw new ConfigurationError(`${name} must be a positive integer, got ${value}`);
  return value;
}

export async function runCollectivesBench(options: CollectivesBenchOptions = {}): Promise<CollectivesBenchResult> {
  const hosts = options.hosts === undefined ? null : HostNamespaces.up(options.hosts, options.hostRate ?? null);
  try {
    return await runBench(options, hosts);
  } finally {
    hosts?.down();
  }
}

async function runBench(options: CollectivesBenchOptions, hosts: HostNamespaces | null): Promise<CollectivesBenchResult> {
  const started = performance.now();
  const quick = options.quick === true;
  const worldSizes = (options.worldSizes ?? (options.worldSize !== undefined ? [options.worldSize] : quick ? QUICK.worldSizes : DEFAULTS.worldSizes)).map((n) =>
    positiveInteger(n, 'world size'),
  );
  const ops: BenchOp[] = (options.ops ?? (options.op !== undefined ? [options.op] : [...BENCH_OPS])).map(parseOp);
  const dtype = parseDType(options.dtype ?? DEFAULTS.dtype);
  const minBytes = positiveInteger(options.minBytes ?? DEFAULTS.minBytes, 'min bytes');
  const maxBytes = positiveInteger(options.maxBytes ?? DEFAULTS.maxBytes, 'max bytes');
  const step = options.step ?? DEFAULTS.step;
  if (!(step > 1)) throw new ConfigurationError(`size step must be greater than 1, got ${step}`);
  const transport = options.transport === undefined ? DEFAULT_TRANSPORT : parseTransport(options.transport, 'transport');
  const budget: Budget = {
    ...DEFAULT_BUDGET,
    ...(quick ? QUICK.budget : {}),
    ...options.budget,
    ...(options.warmupIterations !== undefined ? { warmupIterations: options.warmupIterations } : {}),
    ...(options.iterations !== undefined ? { iterations: options.iterations } : {}),
  };
  const swept = quick && options.minBytes === undefined && options.maxBytes === undefined ? [...QUICK.sizes] : sizeSweep(minBytes, Math.max(minBytes, maxBytes), step);
  const sizes = options.sizes?.map((bytes) => positiveInteger(bytes, 'size')) ?? swept;
  const roundCount = positiveInteger(options.rounds ?? 1, 'rounds');
  const inPlace = options.inPlace ?? true;

  const plans = worldSizes.map((worldSize) => {
    const cells: Cell[] = [];
    for (const op of ops) {
      if (op === 'barrier') cells.push(cellFor(op, dtype, 0, worldSize));
      else for (const bytes of sizes) cells.push(cellFor(op, dtype, bytes, worldSize));
    }
    return { worldSize, cells };
  });
  const print = options.print === undefined ? (text: string) => process.stdout.write(`${text}\n`) : options.print;
  if (hosts !== null) print?.(`# hosts: ${hosts.count} network namespaces (${hosts.subnet}${options.hostRate ? `, egress shaped to ${options.hostRate}` : ''}); rank r of N on host floor(r*${hosts.count}/N)`);
  const states = options.peers === true ? preparePeers(dtype, print, hosts) : [];
  const peers = states.flatMap(({ peer, benchmark }) => (benchmark === undefined ? [] : [{ peer, benchmark }]));
  // Each column once, with its JSON key: peers that share one (Gloo's two benchmarks) fill one map of times.
  const peerColumns = [...new Map(peers.map(({ peer }) => [peer.column, peer.jsonKey]))];
  const meta: Record<string, unknown> = {};
  const rounds: MeasuredRound[] = [];
  /** The peers' times of the round being measured, by peer column: our rows print with those. */
  let current = new Map<string, Map<string, number>>();
  /** Each peer's failure in the round being measured, by name: why its cells are empty. */
  let failures = new Map<string, string>();
  // Rows go out as they are measured, except where the whole run makes one document.
  const table =
    print === null || options.json || options.markdown
      ? null
      : new NcclTable(
          print,
          () => meta,
          peerColumns.map(([column]) => ({
            column,
            time: (row: BenchRow) => current.get(column)?.get(peerKey(row.op, row.bytes, row.worldSize)),
            whyEmpty: (row: BenchRow) => whyEmpty(row, column, states.map(({ peer, notRun }) => ({ peer, notRun, failed: failures.get(peer.name) }))),
          })),
        );
  if (table !== null) {
    // What will run and for about how long, before the first process starts.
    const estimate = estimateSeconds({ plans, budget, inPlace, rounds: roundCount, peers: peers.map(({ peer }) => peer) });
    print!(`# plan: ${describePlan(ops, sizes, worldSizes, inPlace, roundCount)}${peers.length > 0 ? `; peers first: ${peers.map(({ peer }) => peer.name).join(', ')}` : ''}${quick ? ' (--quick)' : ''}`);
    // The model knows an idle host: a loaded one is said to be, rather than guessed at.
    const [load] = loadavg();
    const busy = load! > availableParallelism() ? `; this host's load average is ${load!.toFixed(1)} on ${availableParallelism()} cores: expect longer` : '';
    print!(`# estimate: ${formatDuration(estimate)} (a model of a-priori call times on an idle host, not a measurement${busy})${quick ? '' : '; --quick measures 3 sizes at 2 ranks in a fraction of it'}`);
  }
  const total = plans.reduce((sum, plan) => sum + plan.cells.length, 0) * roundCount;
  let done = 0;
  options.onProgress?.(0, total);
  const rows: BenchRow[] = [];
  for (const { worldSize, cells } of plans) {
    for (let round = 1; round <= roundCount; round++) {
      if (roundCount > 1) table?.section(`# round ${round} of ${roundCount}, ${worldSize} ranks`);
      current = new Map(peerColumns.map(([column]) => [column, new Map<string, number>()]));
      failures = new Map();
      // The peers first, so that each of our rows can be printed with its ratios as soon as it is measured.
      for (const { peer, benchmark } of peers) {
        print?.(`# peers: measuring ${peer.name} at ${worldSize} ranks (${benchmark.description})`);
        try {
          for (const [key, us] of await measurePeer(peer, benchmark, worldSize, ops, sizes, options.timeoutMs ?? 600_000)) current.get(peer.column)!.set(key, us);
        } catch (error) {
          // A peer that fails takes nothing from our measurement: its cells stay empty, saying why.
          failures.set(peer.name, (error as Error).message);
          print?.(`# peers: ${(error as Error).message}`);
        }
      }
      const measured: BenchRow[] = [];
      await runWorld(worldSize, transport, hosts, { cells, budget, inPlace }, options.timeoutMs ?? 600_000, meta, (measuredRow) => {
        const row = roundCount > 1 ? { ...measuredRow, round } : measuredRow;
        rows.push(row);
        measured.push(row);
        table?.add(row);
        done += 1;
        options.onProgress?.(done, total);
      });
      rounds.push({ rows: measured, peers: current });
    }
  }
  const wallSeconds = (performance.now() - started) / 1e3;
  const summary = roundCount > 1 ? cellRounds(rounds, peerColumns.map(([column]) => column)) : null;
  // Each peer's time per cell: its median over the rounds (with one round, that round's time).
  const peerTimes = Object.fromEntries(
    peerColumns.map(([column, jsonKey]) => {
      const times = new Map<string, number[]>();
      for (const round of rounds) for (const [key, us] of round.peers.get(column) ?? []) times.set(key, [...(times.get(key) ?? []), us]);
      return [jsonKey, Object.fromEntries([...times].map(([key, values]) => [key, median(values)]))];
    }),
  );
  if (summary !== null) table?.section(formatRoundSummary(summary, roundCount).join('\n'));
  table?.end(wallSeconds);
  const roundsField = summary !== null ? { rounds: summary } : {};
  if (print !== null && options.json) print(JSON.stringify({ meta, wallSeconds, rows, ...peerTimes, ...roundsField }, null, 2));
  if (print !== null && options.markdown) print(formatMarkdown(rows, meta, wallSeconds));
  return { rows, meta, wallSeconds, ...peerTimes, ...roundsField };
}

/** Every peer, with its benchmark where it can run here; one `# peers:` line for each that cannot, saying why. */
function preparePeers(dtype: string, print: ((text: string) => void) | null, hosts: HostNamespaces | null): (PeerState & { readonly benchmark?: PeerBenchmark })[] {
  return PEERS.map((peer) => {
    // The peers' benchmarks measure f32 alone: another element type would compare different bytes.
    const benchmark = dtype === 'f32' ? peer.prepare(hosts) : `its benchmark measures f32 only, not ${dtype}`;
    if (typeof benchmark !== 'string') return { peer, benchmark };
    print?.(`# peers: ${peer.name} not run: ${benchmark}`);
    return { peer, notRun: benchmark };
  });
}

/** The plan line: "allreduce, barrier at 8 B..64 MiB (9 sizes), 2 and 4 ranks, out-of-place and in-place, 1 round". */
function describePlan(ops: readonly BenchOp[], sizes: readonly number[], worldSizes: readonly number[], inPlace: boolean, rounds: number): string {
  const sorted = [...sizes].sort((a, b) => a - b);
  const span = sorted.length === 1 ? formatBytes(sorted[0]!) : `${formatBytes(sorted[0]!)}..${formatBytes(sorted.at(-1)!)} (${sorted.length} sizes)`;
  const ranks = worldSizes.length === 1 ? `${worldSizes[0]} ranks` : `${worldSizes.slice(0, -1).join(', ')} and ${worldSizes.at(-1)} ranks`;
  return `${ops.join(', ')} at ${span}, ${ranks}, ${inPlace ? 'out-of-place and in-place' : 'out-of-place'}, ${rounds} round${rounds === 1 ? '' : 's'}`;
}

/** Runs one world size: a coordinator here, one worker process per rank (each on its host, with `hosts`). */
async function runWorld(
  worldSize: number,
  transport: string,
  hosts: HostNamespaces | null,
  plan: WorkerPlan,
  timeoutMs: number,
  meta: Record<string, unknown>,
  onRow: (row: BenchRow) => void,
): Promise<void> {
  const uniqueId = UniqueId.random();
  const coordinatorHost = hosts?.coordinatorAddress ?? '127.0.0.1';
  // As `rxccl launch` runs a job: across hosts anyone who reaches the coordinator could join.
  const secret = generateSecret();
  const coordinator = await Coordinator.listen({
    secret,
    host: coordinatorHost,
    port: 0,
    uniqueId,
    worldSize,
    transport: parseTransport(transport, 'transport'),
    collectiveTimeoutMs: timeoutMs,
    // As `rxccl launch` starts its coordinator.
    busyWindow: coordinatorBusyWindow(process.env),
  });
  const children: ChildProcess[] = [];
  const errors: string[] = [];
  const killChildren = () => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  };
  process.once('exit', killChildren);
  try {
    const exits = Array.from({ length: worldSize }, (_, rank) => {
      // BENCH_NODE_ARGS: extra node flags for the workers (for example --cpu-prof).
      const extra = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter((flag) => flag.length > 0);
      const node = [...extra, ...WORKER.nodeArgs, WORKER.path];
      const { file, args } = hosts === null ? { file: process.execPath, args: node } : hosts.inHost(hosts.hostOf(rank, worldSize), process.execPath, node);
      const child = spawn(file, args, {
        env: {
          ...process.env,
          ...WORKER.env,
          GX1_COORDINATOR: `${coordinatorHost}:${coordinator.address.port}`,
          GX1_UNIQUE_ID: uniqueId.toHex(),
          GX1_SECRET: secret,
          GX1_RANK: String(rank),
          GX1_WORLD_SIZE: String(worldSize),
          GX1_TIMEOUT_MS: String(timeoutMs),
          GX1_COLLECTIVE_TRANSPORT: transport,
          BENCH_PLAN: JSON.stringify(plan),
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      children.push(child);
      let stderr = '';
      child.stderr!.on('data', (chunk: Buffer) => {
        stderr += chunk.toString('utf8');
      });
      createInterface({ input: child.stdout! }).on('line', (line) => {
        if (line.startsWith('ROW ')) onRow(JSON.parse(line.slice(4)) as BenchRow);
        else if (line.startsWith('META ')) Object.assign(meta, JSON.parse(line.slice(5)));
        else if (line.startsWith('WARMUP ')) {
          const warmup = JSON.parse(line.slice(7)) as ProcessWarmup;
          meta.warmups = { ...(meta.warmups as Record<number, ProcessWarmup> | undefined), [warmup.worldSize]: warmup };
        }
        else if (line.startsWith('ERROR ')) errors.push(`rank ${rank}: ${line.slice(6)}`);
      });
      return new Promise<void>((resolve) => {
        child.once('close', (code, signal) => {
          if (code !== 0) {
            errors.push(`rank ${rank} exited with ${signal ?? `code ${code}`}${stderr.trim() ? `: ${stderr.trim().split('\n').slice(-5).join(' | ')}` : ''}`);
            // One rank down: the others cannot finish.
            killChildren();
          }
          resolve();
        });
      });
    });
    const deadline = setTimeout(() => {
      errors.push(`world size ${worldSize} ran past ${timeoutMs} ms`);
      killChildren();
    }, timeoutMs + 30_000);
    await Promise.all(exits);
    clearTimeout(deadline);
    if (errors.length > 0) throw new Error(`collectives bench, world size ${worldSize}: ${errors.join('; ')}`);
    await coordinator.done;
  } finally {
    killChildren();
    process.off('exit', killChildren);
    await coordinator.close();
  }
}

// ---- report ---------------------------------------------------------------------------------

function formatBytes(bytes: number): string {
  if (bytes >= 1024 * 1024 && bytes % (1024 * 1024) === 0) return `${bytes / (1024 * 1024)} MiB`;
  if (bytes >= 1024 && bytes % 1024 === 0) return `${bytes / 1024} KiB`;
  return `${bytes} B`;
}

function formatTime(us: number): string {
  return us >= 100 ? us.toFixed(0) : us.toFixed(1);
}

function formatBandwidth(value: number): string {
  return value === 0 ? '-' : value >= 0.1 ? value.toFixed(3) : value.toPrecision(3);
}

export function formatMarkdown(rows: readonly BenchRow[], meta: Record<string, unknown>, wallSeconds: number): string {
  const lines: string[] = [];
  lines.push(`Transport ${String(meta.transport ?? '?')}, kernels ${String(meta.kernels ?? '?')}, Node ${String(meta.node ?? process.version)}; ${rows.length} rows in ${wallSeconds.toFixed(0)} s.`);
  const groups = new Map<string, BenchRow[]>();
  for (const row of rows) {
    const key = `${row.op}, ${row.worldSize} ranks`;
    groups.set(key, [...(groups.get(key) ?? []), row]);
  }
  for (const [key, group] of groups) {
    lines.push(
      '',
      `**${key}**`,
      '',
      '| size | bytes | count | type | time (us) | algbw (GB/s) | busbw (GB/s) | samples x iters | in-place time (us) | in-place busbw (GB/s) |',
      '|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|',
    );
    for (const row of group) {
      const inPlace = row.inPlace === undefined ? '- | -' : `${formatTime(row.inPlace.timeUs)} | ${formatBandwidth(row.inPlace.busbw)}`;
      lines.push(
        `| ${formatBytes(row.bytes)} | ${row.bytes} | ${row.count} | ${row.dtype} | ${formatTime(row.timeUs)} | ${formatBandwidth(row.algbw)} | ${formatBandwidth(row.busbw)} | ${row.samples}x${row.iterations} | ${inPlace} |`,
      );
    }
  }
  return lines.join('\n');
}

// ---- command line: the same as `rxccl bench` ------------------------------------------------

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  // Not a top-level await: `rxccl bench` imports this very module, which must finish loading first.
  void runCli(['bench', ...process.argv.slice(2)]).then((status) => {
    process.exitCode = status;
  });
}
