/**
 * How long a bench run will take, said before it starts: a model, not a measurement. Every call
 * is given an a-priori time (a latency per other rank plus its bus bytes at a loopback bandwidth,
 * figures of the idle 2-core VM of bench/README.md), and the run is what the worker (worker.ts)
 * and the peers' benchmarks (gloo_bench.py, mpi_bench.c: their plan()) would do with calls of that
 * time: warm-up, samples, the processes' start and warm-up, and, per byte, building the inputs and
 * checking the result (data-check.ts, which dominates the largest cells). A busy host, another
 * network or a slow algorithm at some size makes the real time differ, by a factor at worst.
 */
import type { Peer } from './peers/peer.js';
import { type Budget, busFactor, callsPerSample, type Cell, IN_PLACE_OPS, processWarmupCells, warmupCalls } from './plan.js';

/** The model's figures. */
export const A_PRIORI = {
  /** A small collective's time per other rank. */
  latencySeconds: 150e-6,
  /** Bus bytes per second over loopback. */
  bytesPerSecond: 1e9,
  /** Building a form's inputs and outputs (twice: the timed calls', the checked call's) and checking its result, per byte. */
  checkSecondsPerByte: 30e-9,
  /** Starting a job's rank processes and opening their sessions. */
  jobStartSeconds: 1.5,
  /** Starting a peer's benchmark (python3 importing torch, mpirun spawning its ranks). */
  peerStartSeconds: 3,
} as const;

/** One call's a-priori time, in seconds. */
export function callSeconds(cell: Cell, worldSize: number): number {
  return A_PRIORI.latencySeconds * Math.max(1, worldSize - 1) + (cell.bytes * Math.max(1, busFactor(cell.op, worldSize))) / A_PRIORI.bytesPerSecond;
}

/** What the worker spends on one form of a cell of `bytes` whose calls take `call` seconds (worker.ts's steps 1-4). */
export function formSeconds(call: number, bytes: number, budget: Budget): number {
  const ms = call * 1e3;
  const warmup = warmupCalls(budget, ms);
  const iterations = callsPerSample(budget, ms, bytes);
  const sampleMs = iterations * ms;
  const samples = Math.min(budget.maxSamples, Math.max(budget.minSamples, Math.ceil(budget.cellMs / sampleMs)), Math.max(1, Math.ceil(budget.maxCellMs / sampleMs)));
  // The probe call, the warm-up, the samples, the checked call; the inputs and the check.
  return (2 + warmup + samples * iterations) * call + bytes * A_PRIORI.checkSecondsPerByte;
}

/** The calls the peers' benchmarks make of one cell: warm-up plus samples x batch (their plan(), by size; a barrier as the smallest). */
function peerCalls(bytes: number): number {
  const [warm, batch, samples] = bytes <= 4096 ? [50, 200, 11] : bytes <= 65536 ? [20, 50, 11] : bytes <= 1 << 20 ? [5, 10, 11] : bytes <= 16 << 20 ? [3, 2, 7] : [2, 1, 7];
  return warm + batch * samples;
}

/** The process warm-up (worker.ts): rounds of `processWarmupCells`, for `processWarmupMs` and `processWarmupCalls` calls at least. */
function processWarmupSeconds(cells: readonly Cell[], worldSize: number, budget: Budget): number {
  const round = processWarmupCells(cells, worldSize);
  const roundSeconds = round.reduce((sum, cell) => sum + callSeconds(cell, worldSize), 0);
  return Math.max(budget.processWarmupMs / 1e3, (budget.processWarmupCalls / Math.max(1, round.length)) * roundSeconds);
}

/** What one run measures: per world size its cells, the forms, the rounds, the peers that will run. */
export interface RunShape {
  readonly plans: readonly { readonly worldSize: number; readonly cells: readonly Cell[] }[];
  readonly budget: Budget;
  readonly inPlace: boolean;
  readonly rounds: number;
  readonly peers: readonly Peer[];
}

/** The run's estimated duration, in seconds. */
export function estimateSeconds(run: RunShape): number {
  let seconds = 0;
  for (const { worldSize, cells } of run.plans) {
    let round = A_PRIORI.jobStartSeconds + processWarmupSeconds(cells, worldSize, run.budget);
    for (const cell of cells) {
      const call = callSeconds(cell, worldSize);
      round += formSeconds(call, cell.bytes, run.budget) * (run.inPlace && IN_PLACE_OPS.includes(cell.op) ? 2 : 1);
    }
    for (const peer of run.peers) {
      const measured = cells.filter((cell) => peer.ops.includes(cell.op));
      if (measured.length === 0) continue;
      round += A_PRIORI.peerStartSeconds + measured.reduce((sum, cell) => sum + peerCalls(cell.bytes) * callSeconds(cell, worldSize), 0);
    }
    seconds += round * run.rounds;
  }
  return seconds;
}

/** "about 45 s", "about 2 min 40 s": rounded to what an estimate can say. */
export function formatDuration(seconds: number): string {
  if (seconds < 60) return `about ${Math.max(1, Math.round(seconds))} s`;
  const whole = Math.round(seconds / 10) * 10;
  const minutes = Math.floor(whole / 60);
  const rest = whole % 60;
  return `about ${minutes} min${rest === 0 ? '' : ` ${rest} s`}`;
}
