/**
 * The contract between `rxccl bench` (bench-command.ts) and the collectives bench it loads at run
 * time (bench/collectives/run.ts; dist/bench/ in a build that has it): the options the command
 * passes to the bench's `runCollectivesBench(options)`, and what it reads back. The bench builds
 * its own types on these (it takes and returns more: a test's time budget, every row's
 * measurements); the library imports nothing from bench/, so the command type-checks and runs
 * without it.
 */

export interface BenchOptions {
  /** The world sizes to measure, one job of that many rank processes each. */
  worldSizes?: number[];
  /** The collectives, by name (allreduce, allgather, ...), as the bench accepts them. */
  ops?: string[];
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
  /** Warm-up calls per cell after the first (default: the bench's time budget). */
  warmupIterations?: number;
  /** Calls per timed sample (default: the bench's time budget). */
  iterations?: number;
  /** Fewer sizes, ranks and samples (the bench's QUICK): a first look in seconds; what else is given still wins. */
  quick?: boolean;
  /** Measure each collective's in-place form too, where it has one, beside the out-of-place form (default true). */
  inPlace?: boolean;
  /** Measure the peers (Gloo, Open MPI over TCP) beside rxccl where installed, for ratio columns. */
  peers?: boolean;
  /**
   * Measure the peers and rxccl in turn this many times per world size (default 1), then sum up
   * each cell by the median of its same-round ratios.
   */
  rounds?: number;
  /** Spread the ranks, and the peers', over this many hosts: network namespaces of their own (root, Linux). */
  hosts?: number;
  /** With `hosts`: each host's egress rate, shaped with tc tbf ("1gbit"). */
  hostRate?: string;
  onProgress?: (done: number, total: number) => void;
  /** Where the report goes, a line at a time (default: stdout); null prints nothing. */
  print?: ((text: string) => void) | null;
}

/** One measured row, as far as the commands read it: the out-of-place form's figures, and the in-place form's where measured. */
export interface BenchResultRow {
  /** Result elements that differed from the expected value, summed over ranks (nccl-tests' #wrong). */
  readonly wrong: number;
  readonly inPlace?: { readonly wrong: number; readonly timeUs: number };
  readonly op: string;
  readonly worldSize: number;
  /** nccl-tests' size: for allgather the whole output, for reducescatter and alltoall each rank's whole input. */
  readonly bytes: number;
  /** Median time of one call, microseconds. */
  readonly timeUs: number;
  /** What ran, as `session.plan` names it ("ring on native"). */
  readonly algorithm?: string;
}

export interface BenchResult {
  readonly rows: readonly BenchResultRow[];
  /** What rank 0 said of the job: kernels, transport, topology groups, autotune fingerprints. */
  readonly meta: Readonly<Record<string, unknown>>;
}

/** The bench module's `runCollectivesBench`. */
export type RunBench = (options: BenchOptions) => Promise<BenchResult>;
