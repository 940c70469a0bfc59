/**
 * Collectives bench, nccl-tests style, over ranks in SEPARATE PROCESSES:
 *
 *   npx tsx bench/collectives/run.ts [--json | --markdown] [--ops allreduce,broadcast] [-n 2,4]
 *                                    [--min-bytes 8] [--max-bytes 67108864] [--step 8]
 *                                    [--sizes 8,1048576] [--dtype f32] [--transport tcp_host_staged]
 *
 * For each world size it starts a coordinator in this process and one worker process per rank
 * (bench/collectives/worker.ts, with the GX1_* environment, `openSession()` without options);
 * the workers run every (op, size) cell: warm-up, then timed samples of back-to-back calls, time =
 * max over ranks of the per-call average, the median over samples reported (see worker.ts).
 * Columns: size (bytes), count (elements), type, time (us), algbw and busbw (GB/s, 1e9 bytes),
 * with nccl-tests' bus factors (allreduce 2(n-1)/n; allgather, reducescatter, alltoall (n-1)/n;
 * broadcast, reduce 1). Iterations are capped by time, so a default run (7 ops x 9 sizes x 2
 * world sizes) takes a few minutes on a 2-core machine.
 *
 * `runCollectivesBench(options)` is the same as a function (`rxccl bench` calls it).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Coordinator } from '../../lib/coordinator/coordinator.js';
import { UniqueId } from '../../lib/protocol/unique-id.js';
import { progressBar } from '../../lib/cli/bench-command.js';
import { parseTransport } from '../../lib/transport/transport-kind.js';
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
  sizeSweep,
  type WorkerPlan,
} from './plan.js';

export type { BenchRow } from './plan.js';

export interface CollectivesBenchOptions {
  worldSizes?: number[];
  /** One world size (as `rxccl bench -n N` passes it). */
  worldSize?: number;
  ops?: string[];
  /** One collective (as `rxccl bench --op OP` passes it). */
  op?: string;
  minBytes?: number;
  maxBytes?: number;
  /** Size multiplier between rows (default 8). */
  step?: number;
  /** Explicit sizes in bytes (instead of minBytes..maxBytes by step). */
  sizes?: number[];
  dtype?: string;
  /** Print JSON instead of tables. */
  json?: boolean;
  /** Print Markdown tables (for RESULTS.md). */
  markdown?: boolean;
  transport?: string;
  onProgress?: (done: number, total: number) => void;
  /** Where the report goes (default: stdout); null prints nothing. */
  print?: ((text: string) => void) | null;
  /** Time budget per cell (see plan.ts); mostly for tests. */
  budget?: Partial<Budget>;
  /** Per-world-size limit on the workers' run, in ms (default 10 minutes). */
  timeoutMs?: number;
}

export interface CollectivesBenchResult {
  readonly rows: BenchRow[];
  /** What the workers reported: kernel backend, transport, Node version. */
  readonly meta: Record<string, unknown>;
  readonly wallSeconds: number;
}

const DEFAULTS = { worldSizes: [2, 4], minBytes: 8, maxBytes: 64 * 1024 * 1024, step: 8, dtype: 'f32' };

const WORKER = (() => {
  const url = new URL(import.meta.url);
  const typescript = url.pathname.endsWith('.ts');
  return { path: fileURLToPath(new URL(typescript ? './worker.ts' : './worker.js', url)), typescript };
})();

function positiveInteger(value: number, name: string): number {
  if (!Number.isSafeInteger(value) || value < 1) throw new Error(`${name} must be a positive integer, got ${value}`);
  return value;
}

export async function runCollectivesBench(options: CollectivesBenchOptions = {}): Promise<CollectivesBenchResult> {
  const started = performance.now();
  const worldSizes = (options.worldSizes ?? (options.worldSize !== undefined ? [options.worldSize] : DEFAULTS.worldSizes)).map((n) =>
    positiveInteger(n, 'world size'),
  );
  const ops: BenchOp[] = (options.ops ?? (options.op !== undefined ? [options.op] : [...BENCH_OPS])).map(parseOp);
  const dtype = parseDType(options.dtype ?? DEFAULTS.dtype);
  const minBytes = positiveInteger(options.minBytes ?? DEFAULTS.minBytes, 'min bytes');
  const maxBytes = positiveInteger(options.maxBytes ?? DEFAULTS.maxBytes, 'max bytes');
  const step = options.step ?? DEFAULTS.step;
  if (!(step > 1)) throw new Error(`size step must be greater than 1, got ${step}`);
  const transport = parseTransport(options.transport ?? 'tcp_host_staged', 'transport');
  const budget: Budget = { ...DEFAULT_BUDGET, ...options.budget };
  const sizes = options.sizes?.map((bytes) => positiveInteger(bytes, 'size')) ?? sizeSweep(minBytes, Math.max(minBytes, maxBytes), step);

  const plans = worldSizes.map((worldSize) => {
    const cells: Cell[] = [];
    for (const op of ops) {
      if (op === 'barrier') cells.push(cellFor(op, dtype, 0, worldSize));
      else for (const bytes of sizes) cells.push(cellFor(op, dtype, bytes, worldSize));
    }
    return { worldSize, cells };
  });
  const total = plans.reduce((sum, plan) => sum + plan.cells.length, 0);
  let done = 0;
  options.onProgress?.(0, total);
  const rows: BenchRow[] = [];
  const meta: Record<string, unknown> = {};
  for (const { worldSize, cells } of plans) {
    const result = await runWorld(worldSize, transport, { cells, budget }, options.timeoutMs ?? 600_000, (row) => {
      rows.push(row);
      done += 1;
      options.onProgress?.(done, total);
    });
    Object.assign(meta, result);
  }
  const wallSeconds = (performance.now() - started) / 1e3;
  const print = options.print === undefined ? (text: string) => process.stdout.write(`${text}\n`) : options.print;
  if (print !== null) {
    print(
      options.json
        ? JSON.stringify({ meta, wallSeconds, rows }, null, 2)
        : options.markdown
          ? formatMarkdown(rows, meta, wallSeconds)
          : formatTables(rows, meta, wallSeconds),
    );
  }
  return { rows, meta, wallSeconds };
}

/** Runs one world size: a coordinator here, one worker process per rank. */
async function runWorld(
  worldSize: number,
  transport: string,
  plan: WorkerPlan,
  timeoutMs: number,
  onRow: (row: BenchRow) => void,
): Promise<Record<string, unknown>> {
  const uniqueId = UniqueId.random();
  const coordinator = await Coordinator.listen({
    host: '127.0.0.1',
    port: 0,
    uniqueId,
    worldSize,
    transport: parseTransport(transport, 'transport'),
    collectiveTimeoutMs: timeoutMs,
  });
  const children: ChildProcess[] = [];
  const errors: string[] = [];
  let meta: Record<string, unknown> = {};
  const killChildren = () => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  };
  process.once('exit', killChildren);
  try {
    const exits = Array.from({ length: worldSize }, (_, rank) => {
      // BENCH_NODE_ARGS: extra node flags for the workers (for example --cpu-prof).
      const extra = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter((flag) => flag.length > 0);
      const args = [...extra, ...(WORKER.typescript ? ['--import', 'tsx'] : []), WORKER.path];
      const child = spawn(process.execPath, args, {
        cwd: fileURLToPath(new URL('../../', import.meta.url)),
        env: {
          ...process.env,
          GX1_COORDINATOR: `127.0.0.1:${coordinator.address.port}`,
          GX1_UNIQUE_ID: uniqueId.toHex(),
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
        else if (line.startsWith('META ')) meta = JSON.parse(line.slice(5)) as Record<string, unknown>;
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
    return meta;
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

export function formatTables(rows: readonly BenchRow[], meta: Record<string, unknown>, wallSeconds: number): string {
  const lines: string[] = [];
  lines.push(`# rxccl collectives bench (${String(meta.transport ?? '?')}, kernels ${String(meta.kernels ?? '?')}, Node ${String(meta.node ?? process.version)})`);
  lines.push('# time = median over samples of the max over ranks of the per-op average; GB/s = 1e9 bytes/s');
  const groups = new Map<string, BenchRow[]>();
  for (const row of rows) {
    const key = `${row.op} / ${row.worldSize} ranks`;
    groups.set(key, [...(groups.get(key) ?? []), row]);
  }
  for (const [key, group] of groups) {
    lines.push('');
    lines.push(`## ${key}`);
    lines.push(`${'size'.padStart(10)} ${'(bytes)'.padStart(10)} ${'count'.padStart(10)} ${'type'.padStart(5)} ${'time (us)'.padStart(10)} ${'algbw'.padStart(8)} ${'busbw'.padStart(8)} ${'samples'.padStart(8)}`);
    for (const row of group) {
      lines.push(
        `${formatBytes(row.bytes).padStart(10)} ${String(row.bytes).padStart(10)} ${String(row.count).padStart(10)} ${row.dtype.padStart(5)} ` +
          `${formatTime(row.timeUs).padStart(10)} ${formatBandwidth(row.algbw).padStart(8)} ${formatBandwidth(row.busbw).padStart(8)} ` +
          `${`${row.samples}x${row.iterations}`.padStart(8)}`,
      );
    }
  }
  lines.push('');
  lines.push(`# ${rows.length} rows in ${wallSeconds.toFixed(1)} s`);
  return lines.join('\n');
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
    lines.push('', `**${key}**`, '', '| size | bytes | count | type | time (us) | algbw (GB/s) | busbw (GB/s) | samples x iters |', '|---:|---:|---:|---|---:|---:|---:|---:|');
    for (const row of group) {
      lines.push(
        `| ${formatBytes(row.bytes)} | ${row.bytes} | ${row.count} | ${row.dtype} | ${formatTime(row.timeUs)} | ${formatBandwidth(row.algbw)} | ${formatBandwidth(row.busbw)} | ${row.samples}x${row.iterations} |`,
      );
    }
  }
  return lines.join('\n');
}

// ---- command line ---------------------------------------------------------------------------

function parseArguments(argv: readonly string[]): CollectivesBenchOptions {
  const options: CollectivesBenchOptions = {};
  const list = (value: string) => value.split(',').map((item) => item.trim()).filter((item) => item.length > 0);
  for (let index = 0; index < argv.length; index++) {
    const flag = argv[index]!;
    const value = () => {
      const next = argv[++index];
      if (next === undefined) throw new Error(`${flag} needs a value`);
      return next;
    };
    switch (flag) {
      case '--json':
        options.json = true;
        break;
      case '--markdown':
        options.markdown = true;
        break;
      case '--sizes':
        options.sizes = list(value()).map(Number);
        break;
      case '--ops':
      case '--op':
        options.ops = list(value());
        break;
      case '-n':
      case '--ranks':
      case '--world-sizes':
        options.worldSizes = list(value()).map(Number);
        break;
      case '--min-bytes':
        options.minBytes = Number(value());
        break;
      case '--max-bytes':
        options.maxBytes = Number(value());
        break;
      case '--step':
        options.step = Number(value());
        break;
      case '--dtype':
        options.dtype = value();
        break;
      case '--transport':
        options.transport = value();
        break;
      case '-h':
      case '--help':
        process.stdout.write(
          'usage: npx tsx bench/collectives/run.ts [--json | --markdown] [--ops allreduce,broadcast,...] [-n 2,4]\n' +
            '       [--min-bytes 8] [--max-bytes 67108864] [--step 8] [--sizes 8,1048576] [--dtype f32]\n' +
            '       [--transport tcp_host_staged]\n' +
            `ops: ${BENCH_OPS.join(', ')}\n`,
        );
        process.exit(0);
        break;
      default:
        throw new Error(`unknown argument ${JSON.stringify(flag)} (try --help)`);
    }
  }
  return options;
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  let options: CollectivesBenchOptions;
  try {
    options = parseArguments(process.argv.slice(2));
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n`);
    process.exit(2);
  }
  const progress = !options.json && process.stderr.isTTY;
  runCollectivesBench({
    ...options,
    ...(progress ? { onProgress: progressBar((text) => process.stderr.write(text)) } : {}),
  }).then(
    () => undefined,
    (error: unknown) => {
      process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
      process.exitCode = 1;
    },
  );
}
