/**
 * The bench's report as nccl-tests prints it (all_reduce_perf and friends): a block per
 * collective and world size, one row per size printed as soon as it is measured, fixed precision,
 * the out-of-place and the in-place form side by side (time, algbw, busbw, #wrong each; `-` where
 * the collective has no in-place form, said once under the block's header), then the block's
 * out-of-bounds count and average bus bandwidth (of the out-of-place form, as nccl-tests'). With
 * peer times (`--peers`) two more columns per peer give the peer's time and rxccl's time over it
 * (in the form the peer's benchmark runs, `comparableTime`); a cell left `-` gets its reason on a
 * `#` line when the block closes.
 */
import { comparableTime } from './peers/peer.js';
import type { BenchRow, ProcessWarmup, Timing } from './plan.js';
import { IN_PLACE_OPS, redopOf, rootOf, WARMUP_ROUNDS_PER_LOOK } from './plan.js';

/** A peer's column: its median time in microseconds for a row, or why it has none. */
export interface PeerColumn {
  readonly column: string;
  readonly time: (row: BenchRow) => number | undefined;
  /** Why the peer's cell of `row` is empty (asked only when `time` has none). */
  readonly whyEmpty?: (row: BenchRow) => string;
}

const ROW_COLUMNS = [
  ['size', '(B)', 12],
  ['count', '(elements)', 12],
  ['type', '', 6],
  ['redop', '', 6],
  ['root', '', 5],
] as const;

/** One form's columns: printed twice, out-of-place then in-place. */
const FORM_COLUMNS = [
  ['time', '(us)', 10],
  ['algbw', '(GB/s)', 8],
  ['busbw', '(GB/s)', 8],
  ['#wrong', '', 7],
] as const;

const COLUMNS = [...ROW_COLUMNS, ...FORM_COLUMNS, ...FORM_COLUMNS];

export class NcclTable {
  private block: BenchRow[] = [];
  /** The block's reasons for empty peer cells, each once, by column. */
  private empty = new Map<string, Set<string>>();
  private readonly rows: BenchRow[] = [];
  /** The world sizes whose process warm-up has been said (under their first block's header). */
  private readonly warmupsSaid = new Set<number>();
  private readonly columns: readonly (readonly [string, string, number])[];

  /** `meta` is read when a block opens: the workers report it before their first row. */
  constructor(
    private readonly print: (line: string) => void,
    private readonly meta: () => Record<string, unknown>,
    private readonly peers: readonly PeerColumn[] = [],
  ) {
    this.columns = [...COLUMNS, ...peers.flatMap(({ column }) => [[column, '(us)', 10] as const, ['ratio', '', 7] as const])];
  }

  /** Prints a row, opening a new block (and closing the last) when the collective or world changes. */
  add(row: BenchRow): void {
    const last = this.block.at(-1);
    if (last === undefined || last.op !== row.op || last.worldSize !== row.worldSize) {
      if (last !== undefined) this.closeBlock();
      this.openBlock(row);
    }
    // Which algorithm runs, each time it changes within the block (nccl-tests has no column for it).
    if (row.algorithm !== undefined && row.algorithm !== this.block.at(-1)?.algorithm) this.print(`# from ${row.bytes} B: ${row.algorithm}`);
    this.block.push(row);
    this.rows.push(row);
    const cells = [row.bytes, row.count, row.dtype, redopOf(row.op), rootOf(row.op), ...formCells(row), ...formCells(row.inPlace)];
    const peers = this.peers.flatMap(({ column, time, whyEmpty }) => {
      const theirs = time(row);
      if (theirs === undefined && whyEmpty !== undefined) this.empty.set(column, (this.empty.get(column) ?? new Set()).add(whyEmpty(row)));
      return peerCells(theirs, comparableTime(row));
    });
    this.print(` ${this.line([...cells, ...peers])}`);
  }

  /** Closes the open block, if any, and prints `text`: the next row opens a block of its own (a new round). */
  section(text: string): void {
    if (this.block.length > 0) this.closeBlock();
    this.print(text);
  }

  /** Closes the last block and prints the run's total. */
  end(wallSeconds: number): void {
    if (this.block.length > 0) this.closeBlock();
    const wrong = this.rows.reduce((sum, row) => sum + wrongOf(row), 0);
    this.print(`# ${this.rows.length} rows in ${wallSeconds.toFixed(1)} s; ${wrong === 0 ? 'every result checked OK' : `${wrong} wrong elements`}`);
  }

  private openBlock(row: BenchRow): void {
    const meta = this.meta();
    const groups = meta.groups === undefined ? '' : `, topology groups ${String(meta.groups)}`;
    this.print(`# ${row.op}, ${row.worldSize} ranks, transport ${row.transport}${groups}, kernels ${String(meta.kernels ?? '?')}, Node ${String(meta.node ?? process.version)}`);
    this.print(`#${this.groups()}`);
    this.print(`#${this.line(this.columns.map(([name]) => name))}`);
    this.print(`#${this.line(this.columns.map(([, unit]) => unit))}`);
    if (!IN_PLACE_OPS.includes(row.op)) this.print(`# (${row.op} has no in-place form: its in-place columns stay empty)`);
    const warmup = (meta.warmups as Record<number, ProcessWarmup> | undefined)?.[row.worldSize];
    if (warmup !== undefined && !this.warmupsSaid.has(row.worldSize)) {
      this.warmupsSaid.add(row.worldSize);
      this.print(`# ${formatWarmup(warmup)}`);
    }
  }

  /** The line naming the two forms over their columns, as nccl-tests heads them. */
  private groups(): string {
    const width = (from: number, to: number) => this.columns.slice(from, to).reduce((sum, [, , columnWidth]) => sum + columnWidth + 1, 0);
    const start = ROW_COLUMNS.length;
    const form = FORM_COLUMNS.length;
    // Less one: the line's leading `#` stands where a row has its leading space.
    return ' '.repeat(width(0, start) - 1) + 'out-of-place'.padStart(width(start, start + form)) + 'in-place'.padStart(width(start + form, start + 2 * form));
  }

  private closeBlock(): void {
    for (const [column, reasons] of this.empty) for (const reason of reasons) this.print(`# ${column} empty: ${reason}`);
    this.empty = new Map();
    const wrong = this.block.reduce((sum, row) => sum + wrongOf(row), 0);
    const sized = this.block.filter((row) => row.bytes > 0);
    this.print(`# Out of bounds values : ${wrong} ${wrong === 0 ? 'OK' : 'FAILED'}`);
    if (sized.length > 0) this.print(`# Avg bus bandwidth    : ${(sized.reduce((sum, row) => sum + row.busbw, 0) / sized.length).toFixed(3)}`);
    this.print('#');
    this.block = [];
  }

  /** Values right-aligned in the columns' widths. */
  private line(values: readonly (string | number)[]): string {
    return values.map((value, index) => String(value).padStart(this.columns[index]![2])).join(' ');
  }
}

/** The process warm-up as said once per world: what a cold process costs before the timed rows (JIT). */
export function formatWarmup({ calls, seconds, firstUs, lastUs }: ProcessWarmup): string {
  return `warm-up: ${calls} small calls in ${seconds.toFixed(1)} s before the first row; a call took ${firstUs.toFixed(0)} us in the first ${WARMUP_ROUNDS_PER_LOOK} rounds, ${lastUs.toFixed(0)} us in the last`;
}

/** One form's cells; `-` in each where it was not measured. */
function formCells(timing: Timing | undefined): (string | number)[] {
  return timing === undefined ? ['-', '-', '-', '-'] : [timing.timeUs.toFixed(2), timing.algbw.toFixed(2), timing.busbw.toFixed(2), timing.wrong];
}

/** A row's wrong elements over both forms. */
export function wrongOf(row: BenchRow): number {
  return row.wrong + (row.inPlace?.wrong ?? 0);
}

function peerCells(peerUs: number | undefined, ourUs: number): string[] {
  return peerUs === undefined ? ['-', '-'] : [peerUs.toFixed(2), (ourUs / peerUs).toFixed(2)];
}
