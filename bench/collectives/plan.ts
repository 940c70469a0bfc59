/**
 * What the collectives bench measures: the operations, their nccl-tests size conventions and bus
 * bandwidth factors, and the per-cell plan the bench process hands to its rank processes.
 */
import { didYouMean } from '../../lib/diagnostics/did-you-mean.js';
import { ConfigurationError } from '../../lib/errors.js';
import type { DType } from '../../lib/protocol/element-type.js';
import { DTYPES } from '../../lib/protocol/element-type.js';
import { dtypeWidth } from '../../lib/tensor.js';
import type { CollectiveName } from '../../lib/collectives/algorithm.js';

export const BENCH_OPS = ['allreduce', 'allgather', 'reducescatter', 'broadcast', 'reduce', 'alltoall', 'barrier'] as const;
export type BenchOp = (typeof BENCH_OPS)[number];

/** The session method each bench op calls. */
export const COLLECTIVE_OF_OP: Record<BenchOp, CollectiveName> = {
  allreduce: 'allReduce',
  allgather: 'allGather',
  reducescatter: 'reduceScatter',
  broadcast: 'broadcast',
  reduce: 'reduce',
  alltoall: 'allToAll',
  barrier: 'barrier',
};

/** Accepts `allreduce`, `all_reduce`, `all-reduce`, `allReduce`, ... */
export function parseOp(name: string): BenchOp {
  const plain = name.trim().toLowerCase().replace(/[-_\s]/g, '');
  const op = BENCH_OPS.find((candidate) => candidate === plain);
  if (op === undefined) throw new ConfigurationError(`unknown collective ${JSON.stringify(name)}${suggestion(plain, BENCH_OPS, ', ')}`);
  return op;
}

export function parseDType(name: string): DType {
  if (!DTYPES.includes(name as DType)) throw new ConfigurationError(`unknown dtype ${JSON.stringify(name)}${suggestion(name, DTYPES, ' ')}`);
  return name as DType;
}

/** `(did you mean X?)` for a likely typo, else the list of what is accepted. */
function suggestion(name: string, accepted: readonly string[], separator: string): string {
  const guess = didYouMean(name, accepted);
  return guess === null ? `; expected one of ${accepted.join(separator)}` : ` (did you mean ${guess}?)`;
}

/**
 * nccl-tests' bus bandwidth factor: busbw = algbw x factor, the share of the data every rank's
 * link must carry in an optimal algorithm, so that results compare across world sizes.
 */
export function busFactor(op: BenchOp, worldSize: number): number {
  const n = worldSize;
  switch (op) {
    case 'allreduce':
      return (2 * (n - 1)) / n;
    case 'allgather':
    case 'reducescatter':
    case 'alltoall':
      return (n - 1) / n;
    case 'broadcast':
    case 'reduce':
      return 1;
    case 'barrier':
      return 0;
  }
}

/** The reduction the bench runs for `op` (nccl-tests' redop column): sum, or none. */
export function redopOf(op: BenchOp): 'sum' | 'none' {
  return op === 'allreduce' || op === 'reduce' || op === 'reducescatter' ? 'sum' : 'none';
}

/** The root rank the bench uses for `op` (nccl-tests' root column): 0, or -1 where there is none. */
export function rootOf(op: BenchOp): number {
  return op === 'broadcast' || op === 'reduce' ? 0 : -1;
}

/** One measured cell: an operation at one size. */
export interface Cell {
  readonly op: BenchOp;
  readonly dtype: DType;
  /**
   * nccl-tests' size: the bytes of the tensor for allreduce, broadcast and reduce; of the whole
   * gathered output for allgather; of each rank's whole input for reducescatter and alltoall.
   */
  readonly bytes: number;
  /** Elements in `bytes`. */
  readonly count: number;
  /** Elements each rank passes to the call. */
  readonly inputCount: number;
}

/**
 * The cell for `op` at (about) `bytes`: at least one element per rank, and counts divisible by
 * the world size where the collective splits its data (so the 8 B row of a 4-rank allgather is
 * 16 B, as in nccl-tests and the peers' tables).
 */
export function cellFor(op: BenchOp, dtype: DType, bytes: number, worldSize: number): Cell {
  const width = dtypeWidth(dtype);
  if (op === 'barrier') return { op, dtype, bytes: 0, count: 0, inputCount: 0 };
  const elements = Math.max(1, Math.floor(bytes / width));
  switch (op) {
    case 'allreduce':
    case 'broadcast':
    case 'reduce':
      return { op, dtype, bytes: elements * width, count: elements, inputCount: elements };
    case 'allgather': {
      const perRank = Math.max(1, Math.floor(elements / worldSize));
      return { op, dtype, bytes: perRank * worldSize * width, count: perRank * worldSize, inputCount: perRank };
    }
    case 'reducescatter':
    case 'alltoall': {
      const total = Math.max(1, Math.floor(elements / worldSize)) * worldSize;
      return { op, dtype, bytes: total * width, count: total, inputCount: total };
    }
  }
}

/** Message sizes from `minBytes` to `maxBytes`, multiplying by `step`; `maxBytes` always included. */
export function sizeSweep(minBytes: number, maxBytes: number, step: number): number[] {
  const sizes: number[] = [];
  for (let bytes = minBytes; bytes < maxBytes; bytes *= step) sizes.push(bytes);
  sizes.push(maxBytes);
  return sizes;
}

/** How long the ranks spend on each cell (all decisions are taken on values every rank agrees on). */
export interface Budget {
  /**
   * Before the first cell, each rank process calls every collective of the plan at its smallest
   * size, round after round, for at least this long and at least `processWarmupCalls` calls: Node's
   * optimizing compiler needs a few thousand small collectives before a process reaches its steady
   * state (an 8 B staged all-reduce here: ~500 µs a call for the first 1,000, ~170 µs from 2,500
   * on; with V8's tier-up budget lowered, steady from ~750), which the 40 ms of a cell's own
   * warm-up never reach.
   */
  readonly processWarmupMs: number;
  /**
   * The process warm-up's calls, at least (counted over the collectives of a round). A time alone
   * is too short where calls are slow: 16 ranks sharing 2 cores make ~400 small calls in 2 s, and
   * their 8 B all-reduce went on falling from ~5 ms to ~1 ms a call over the first 3,000-8,000
   * (bench/README.md, "The first thousands of calls").
   */
  readonly processWarmupCalls: number;
  /** Target duration of warm-up, beyond the first call and the probe call. */
  readonly warmupMs: number;
  /** Target duration of one timed sample (sets the iterations per sample). */
  readonly sampleMs: number;
  readonly minSamples: number;
  readonly maxSamples: number;
  /** Stop taking samples (past minSamples) once the samples took this long. */
  readonly cellMs: number;
  /** Stop taking samples (past the first, even below minSamples) once they took this long. */
  readonly maxCellMs: number;
  readonly maxIterations: number;
  /**
   * Calls per sample at least, in a cell of `SMALL_CELL_BYTES` or less: as Open MPI's and Gloo's
   * benchmarks batch small calls (mpi_bench.c, gloo_bench.py: 200), so that the skew of the ranks
   * leaving a sample's barrier, paid once per sample, weighs as little in rxccl's samples as in
   * theirs where a call is slow (16 ranks on 2 cores: ~2 ms, which `sampleMs` alone would sample
   * 10 at a time).
   */
  readonly smallBatch: number;
  /** Fixed warm-up calls after the first (sizing) call, instead of about `warmupMs` of them. */
  readonly warmupIterations?: number;
  /** Fixed calls per sample, instead of about `sampleMs` of them. */
  readonly iterations?: number;
}

export const DEFAULT_BUDGET: Budget = { processWarmupMs: 2_000, processWarmupCalls: 3_000, smallBatch: 200, warmupMs: 40, sampleMs: 20, minSamples: 3, maxSamples: 9, cellMs: 400, maxCellMs: 12_000, maxIterations: 2_000 };

const clamp = (value: number, low: number, high: number) => Math.min(high, Math.max(low, value));

/**
 * The warm-up calls after the probe (the worker's step 2) when one call takes `callMs`: the fixed
 * `warmupIterations`, else about `warmupMs` of them, at least one unless a call alone outlasts
 * `cellMs`. The worker and the run's estimate (estimate.ts) both count with it.
 */
export function warmupCalls(budget: Budget, callMs: number): number {
  return budget.warmupIterations ?? clamp(Math.ceil(budget.warmupMs / callMs), callMs < budget.cellMs ? 1 : 0, budget.maxIterations);
}

/** The largest cell whose samples take `smallBatch` calls at least (the peers' benchmarks' smallest sizes). */
export const SMALL_CELL_BYTES = 4096;

/**
 * The calls per timed sample (the worker's step 3) of a cell of `bytes` when one call takes
 * `callMs`: the fixed `iterations`, else about `sampleMs` of them, and `smallBatch` at least in a
 * small cell.
 */
export function callsPerSample(budget: Budget, callMs: number, bytes: number): number {
  const batch = bytes <= SMALL_CELL_BYTES ? budget.smallBatch : 0;
  return budget.iterations ?? clamp(Math.max(Math.round(budget.sampleMs / callMs), batch), 1, budget.maxIterations);
}

/**
 * nccl-tests' two forms of a call: the result in memory of its own, or in the input's (all-gather:
 * the input is this rank's slot of the output; reduce-scatter: the output this rank's slot of the
 * input). Reduce, all-to-all and barrier have only the first.
 */
export const FORMS = ['out-of-place', 'in-place'] as const;
export type Form = (typeof FORMS)[number];

/** The collectives with an in-place form. */
export const IN_PLACE_OPS: readonly BenchOp[] = ['allreduce', 'broadcast', 'allgather', 'reducescatter'];

/** Rounds of the process warm-up between two looks at the time taken (every rank stops at the same one; `ProcessWarmup` reports the first and the last such window). */
export const WARMUP_ROUNDS_PER_LOOK = 50;

/** A round of the process warm-up (worker.ts): one call of each collective of `cells`, at its smallest size, or SMALL_CELL_BYTES if smaller. */
export function processWarmupCells(cells: readonly Cell[], worldSize: number): Cell[] {
  const smallest = new Map<BenchOp, Cell>();
  for (const cell of cells) if (cell.bytes <= (smallest.get(cell.op)?.bytes ?? Infinity)) smallest.set(cell.op, cell);
  return [...smallest.values()].map((cell) => cellFor(cell.op, cell.dtype, Math.min(cell.bytes, SMALL_CELL_BYTES), worldSize));
}

/** What a world's process warm-up showed (rank 0's `WARMUP` line): its calls and time, and the time a call of its first and of its last `WARMUP_ROUNDS_PER_LOOK` rounds (max over ranks). */
export interface ProcessWarmup {
  readonly worldSize: number;
  readonly calls: number;
  readonly seconds: number;
  readonly firstUs: number;
  readonly lastUs: number;
}

/** What the bench process hands each rank process (as JSON in BENCH_PLAN). */
export interface WorkerPlan {
  readonly cells: readonly Cell[];
  readonly budget: Budget;
  /** Measure the in-place form too, where the collective has one. */
  readonly inPlace: boolean;
}

/** One form's measurement of a cell. */
export interface Timing {
  /** Median over samples of (max over ranks of the per-op average), microseconds. */
  readonly timeUs: number;
  readonly minUs: number;
  readonly maxUs: number;
  /** GB/s, GB = 1e9 bytes. */
  readonly algbw: number;
  readonly busbw: number;
  readonly samples: number;
  readonly iterations: number;
  readonly warmup: number;
  /** Result elements that differed from the expected value, summed over ranks (nccl-tests' #wrong). */
  readonly wrong: number;
}

/** One result row, as rank 0 reports it: the out-of-place measurement, and the in-place one where it was taken. */
export interface BenchRow extends Timing {
  readonly op: BenchOp;
  readonly worldSize: number;
  readonly transport: string;
  readonly dtype: DType;
  readonly bytes: number;
  readonly count: number;
  /** The in-place form's measurement (IN_PLACE_OPS, unless the bench was asked for the out-of-place form alone). */
  readonly inPlace?: Timing;
  /** Which round measured it (1..R), when the bench ran more than one (`--rounds`). */
  readonly round?: number;
  /** What ran, as `session.plan` names it: "ring on native", "hierarchical on js". */
  readonly algorithm?: string;
}

/**
 * `rxccl bench --quick`: a first look in seconds rather than minutes. Three sizes (latency, the
 * middle, bandwidth), 2 ranks, one round, a short process warm-up and three short samples per
 * cell; flags given beside it (-n, --sizes, -b/-e, --iters, --rounds) still win.
 */
export const QUICK = {
  worldSizes: [2],
  sizes: [8, 64 * 1024, 1024 * 1024],
  budget: { processWarmupMs: 500, processWarmupCalls: 0, smallBatch: 0, warmupMs: 10, sampleMs: 5, minSamples: 3, maxSamples: 3, cellMs: 0, maxCellMs: 3_000 } satisfies Partial<Budget>,
} as const;
