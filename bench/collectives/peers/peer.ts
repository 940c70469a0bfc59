/**
 * `rxccl bench --peers`: other collective libraries measured on this host beside rxccl, each by
 * the peers' own benchmark (bench/peers in the package, or $RXCCL_PEERS_DIR), so
 * that every row of ours can show rxccl's time over theirs. The benchmarks share one method and
 * one output format (gloo_bench.py, mpi_bench.c): a `Peer` says how to find and start its own,
 * the rest (running it, reading its rows) is the same for all.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../../../lib/kernels/addon.js';
import type { HostNamespaces } from '../hosts.js';
import type { BenchOp, BenchRow } from '../plan.js';

/** A collective library that the bench can measure beside rxccl. */
export interface Peer {
  /** Its name in messages: "Gloo", "Open MPI over TCP". */
  readonly name: string;
  /** The first column of its benchmark's rows: "gloo", "mpi-tcp". */
  readonly label: string;
  /** Its column in the table, before "(us)": "gloo", "mpi". */
  readonly column: string;
  /** Its key in `--json` (and in the bench's result): "gloo", "mpiTcp". */
  readonly jsonKey: string;
  /** The collectives its benchmark measures (f32 only, as the benchmarks do). */
  readonly ops: readonly BenchOp[];
  /**
   * Finds (and builds, where it must) its benchmark, for ranks on this host or spread over `hosts`;
   * or says in one line why it cannot run.
   */
  prepare(hosts?: HostNamespaces | null): PeerBenchmark | string;
}

/** A peer's benchmark, ready to run. */
export interface PeerBenchmark {
  /** What runs, for the `# peers: measuring ...` line. */
  readonly description: string;
  /** The command that measures `ops` at `sizes` (comma lists) on `worldSize` ranks. */
  command(worldSize: number, ops: string, sizes: string): { file: string; args: string[]; env?: Record<string, string> };
}

/**
 * The folder holding the peers' benchmarks: $RXCCL_PEERS_DIR, else the package's own bench/peers
 * (they ship with it, so `--peers` works from a clone and from an install).
 */
export function peersDirectory(): string {
  return process.env.RXCCL_PEERS_DIR ?? join(packageRoot(), 'bench', 'peers');
}

/** What the peers' benchmarks measure (all of them the same set, in f32). */
export const PEER_OPS: readonly BenchOp[] = ['allreduce', 'broadcast', 'allgather', 'barrier'];

/**
 * The collectives the peers' benchmarks run in place (torch.distributed's all_reduce and broadcast,
 * MPI_IN_PLACE and MPI_Bcast's one buffer, Gloo's reduce-scatter into its input): their ratio is
 * taken to rxccl's in-place form, the others' to its out-of-place form, like with like.
 */
const PEERS_RUN_IN_PLACE: readonly BenchOp[] = ['allreduce', 'broadcast', 'reducescatter'];

/** rxccl's time of `row` in the form the peers' benchmarks run it (the out-of-place one where the in-place one was not measured). */
export function comparableTime(row: BenchRow): number {
  return (PEERS_RUN_IN_PLACE.includes(row.op) ? row.inPlace?.timeUs : undefined) ?? row.timeUs;
}

/** The path of one of the peers' benchmark sources, or why it is not there (one line). */
export function peerSource(file: string): string | { missing: string } {
  const path = join(peersDirectory(), file);
  return existsSync(path) ? path : { missing: `no ${path} (set RXCCL_PEERS_DIR to the folder holding ${file})` };
}

/** The key of a measurement: a collective at a size in bytes on a number of ranks. */
export function peerKey(op: string, bytes: number, worldSize: number): string {
  return `${op}/${bytes}/${worldSize}`;
}

/**
 * Runs a peer's benchmark for one world size on the collectives it knows among `ops`, at `sizes`
 * (bytes of f32, as ours); resolves with its median microseconds by peerKey.
 */
export async function measurePeer(
  peer: Peer,
  benchmark: PeerBenchmark,
  worldSize: number,
  ops: readonly BenchOp[],
  sizes: readonly number[],
  timeoutMs: number,
): Promise<Map<string, number>> {
  const measured = ops.filter((op) => peer.ops.includes(op));
  if (measured.length === 0) return new Map();
  const { file, args, env } = benchmark.command(worldSize, measured.join(','), sizes.join(','));
  // One thread per rank and loopback only, as the peers' own results were measured (run_all.sh).
  const child = spawn(file, args, { env: { ...process.env, OMP_NUM_THREADS: '1', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text));
  child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
  let late = false;
  // SIGTERM, which mpirun passes on to its ranks; SIGKILL only when this process is leaving.
  const deadline = setTimeout(() => {
    late = true;
    child.kill('SIGTERM');
  }, timeoutMs);
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.once('close', (...end) => resolve(end)));
  clearTimeout(deadline);
  process.off('exit', killOnExit);
  if (code !== 0) {
    const why = late ? `ran past ${timeoutMs} ms` : `exited with ${signal ?? code}`;
    throw new Error(`${peer.name} at ${worldSize} ranks ${why}: ${stderr.trim().split('\n').at(-1) ?? ''}`);
  }
  return parsePeerRows(stdout, peer.label);
}

/**
 * A peer benchmark's rows: `<label> <world> <op> <bytes> <median_us> ...`, tab-separated, `#`
 * starts a comment; rows of other labels are not this peer's.
 */
export function parsePeerRows(text: string, label: string): Map<string, number> {
  const times = new Map<string, number>();
  for (const line of text.split('\n')) {
    const [first, world, op, bytes, median] = line.split('\t');
    if (first !== label || median === undefined) continue;
    times.set(peerKey(op!, Number(bytes), Number(world)), Number(median));
  }
  return times;
}

/**
 * A peer benchmark compiled from `source` into node_modules/.cache/rxccl/peers/`name` when missing
 * or older than its source: `compile(output)` is the compiler and its arguments. Built beside and
 * renamed into place, so that a bench started meanwhile never runs half a file. Returns the
 * binary's path, or why it did not build: what `explain` reads in the compiler's output (a missing
 * library, say), else the command and the output's first error (its last line when none says so).
 */
export function buildPeerBenchmark(
  name: string,
  source: string,
  compile: (output: string) => { file: string; args: string[] },
  explain: (stderr: string) => string | null = () => null,
): string | { failure: string } {
  const directory = join(packageRoot(), 'node_modules', '.cache', 'rxccl', 'peers');
  const binary = join(directory, name);
  if (existsSync(binary) && statSync(binary).mtimeMs >= statSync(source).mtimeMs) return binary;
  mkdirSync(directory, { recursive: true });
  const partial = `${binary}.${process.pid}`;
  const { file, args } = compile(partial);
  const compiled = spawnSync(file, args, { encoding: 'utf8', timeout: 300_000 });
  if (compiled.status !== 0) {
    const stderr = compiled.stderr ?? '';
    const known = explain(stderr);
    if (known !== null) return { failure: known };
    const lines = stderr.trim().split('\n');
    const why = lines.find((line) => /\berror\b/.test(line)) ?? (lines.at(-1) || compiled.error?.message || `status ${compiled.status}`);
    return { failure: `${file} ${args.join(' ').replace(partial, binary)} failed: ${why}` };
  }
  renameSync(partial, binary);
  return binary;
}
