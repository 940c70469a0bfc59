/**
 * The bench's report as nccl-tests prints it (all_reduce_perf and friends): a block per
 * collective and world size, one row per size printed as soon as it is measured, fixed precision,
 * then the block's out-of-bounds count and average bus bandwidth. With peer times (`--peers`) two
 * more columns per peer give the peer's time and rxccl's time over it.
 */
import type { BenchRow } from './plan.js';
import { redopOf, rootOf } from './plan.js';

/** A peer's column name and its median time in microseconds for a row (undefined when it measured no such row). */
export interface PeerColumn {
  readonly column: string;
  readonly time: (row: BenchRow) => number | undefined;
}

const COLUMNS = [
  ['size', '(B)', 12],
  ['count', '(elements)', 12],
  ['type', '', 6],
  ['redop', '', 6],
  ['root', '', 5],
  ['time', '(us)', 10],
  ['algbw', '(GB/s)', 8],
  ['busbw', '(GB/s)', 8],
  ['#wrong', '', 7],
] as const;

export class NcclTable {
  private block: BenchRow[] = [];
  private readonly rows: BenchRow[] = [];
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
    const cells = [row.bytes, row.count, row.dtype, redopOf(row.op), rootOf(row.op), row.timeUs.toFixed(2), row.algbw.toFixed(2), row.busbw.toFixed(2), row.wrong];
    const peers = this.peers.flatMap(({ time }) => peerCells(time(row), row.timeUs));
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
    const wrong = this.rows.reduce((sum, row) => sum + row.wrong, 0);
    this.print(`# ${this.rows.length} rows in ${wallSeconds.toFixed(1)} s; ${wrong === 0 ? 'every result checked OK' : `${wrong} wrong elements`}`);
  }

  private openBlock(row: BenchRow): void {
    const meta = this.meta();
    const groups = meta.groups === undefined ? '' : `, topology groups ${String(meta.groups)}`;
    this.print(`# ${row.op}, ${row.worldSize} ranks, transport ${row.transport}${groups}, kernels ${String(meta.kernels ?? '?')}, Node ${String(meta.node ?? process.version)}`);
    this.print(`#${this.line(this.columns.map(([name]) => name))}`);
    this.print(`#${this.line(this.columns.map(([, unit]) => unit))}`);
  }

  private closeBlock(): void {
    const wrong = this.block.reduce((sum, row) => sum + row.wrong, 0);
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

function peerCells(peerUs: number | undefined, ourUs: number): string[] {
  return peerUs === undefined ? ['-', '-'] : [peerUs.toFixed(2), (ourUs / peerUs).toFixed(2)];
}
