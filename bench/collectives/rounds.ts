/**
 * `rxccl bench --peers --rounds R`: the peers and rxccl measured in turn, R times per world size,
 * and each cell summed up by the median of its R same-round ratios.
 *
 * Why: on a shared machine the speed drifts over minutes (this project's VM ran Gloo's 64 MiB
 * all-reduce at 115-146 ms within one session). One round measures a peer minutes before rxccl,
 * so a ratio may compare a fast window with a slow one; a ratio taken within each round and then
 * the median over rounds is steadier than the ratio of two medians taken apart, and the spread of
 * the per-round ratios says how far to trust it.
 */
import { median } from '../../lib/diagnostics/median.js';
import type { BenchRow } from './plan.js';
import { comparableTime, peerKey } from './peers/peer.js';

/** What one round measured: rxccl's rows and each peer's median µs by peerKey, by peer column. */
export interface MeasuredRound {
  readonly rows: readonly BenchRow[];
  readonly peers: ReadonlyMap<string, ReadonlyMap<string, number>>;
}

/** One peer's side of a cell over the rounds. */
export interface PeerRounds {
  readonly column: string;
  /** Its time in each round that measured it. */
  readonly timesUs: readonly number[];
  /** rxccl time / peer time within each round where both measured the cell. */
  readonly ratios: readonly number[];
}

/** One cell (a collective at a size on a number of ranks) over the rounds. */
export interface CellRounds {
  readonly op: BenchRow['op'];
  readonly bytes: number;
  readonly worldSize: number;
  /** rxccl's time in each round, in round order (in the form the peers run it: `comparableTime`). */
  readonly timesUs: readonly number[];
  readonly peers: readonly PeerRounds[];
}

/** Gathers every cell's times and same-round ratios, cells in the order rxccl first measured them. */
export function cellRounds(rounds: readonly MeasuredRound[], columns: readonly string[]): CellRounds[] {
  const cells = new Map<string, { op: BenchRow['op']; bytes: number; worldSize: number; timesUs: number[]; peers: { column: string; timesUs: number[]; ratios: number[] }[] }>();
  for (const round of rounds) {
    for (const row of round.rows) {
      const key = peerKey(row.op, row.bytes, row.worldSize);
      let cell = cells.get(key);
      if (cell === undefined) {
        cell = { op: row.op, bytes: row.bytes, worldSize: row.worldSize, timesUs: [], peers: columns.map((column) => ({ column, timesUs: [], ratios: [] })) };
        cells.set(key, cell);
      }
      const ours = comparableTime(row);
      cell.timesUs.push(ours);
      for (const peer of cell.peers) {
        const theirs = round.peers.get(peer.column)?.get(key);
        if (theirs === undefined) continue;
        peer.timesUs.push(theirs);
        peer.ratios.push(ours / theirs);
      }
    }
  }
  return [...cells.values()];
}

/**
 * The summary printed after the rounds, as `#` lines below the rounds' own rows: per cell, rxccl's
 * median time and, per peer, its median time and the median (min-max) of the same-round ratios.
 */
export function formatRoundSummary(cells: readonly CellRounds[], rounds: number): string[] {
  const columns = cells[0]?.peers.map((peer) => peer.column) ?? [];
  const header = ['op', 'size', 'ranks', 'rxccl(us)', ...columns.flatMap((column) => [`${column}(us)`, 'ratio', '(min-max)'])];
  const widths = [14, 12, 6, 11, ...columns.flatMap(() => [11, 7, 13])];
  const line = (values: readonly string[]) => `#${values.map((value, index) => value.padStart(widths[index]!)).join(' ')}`;
  const lines = [`# Summary over ${rounds} rounds: medians of each round's time, and of each round's rxccl/peer ratio (min-max over rounds)`, line(header)];
  for (const cell of cells) {
    const peers = cell.peers.flatMap((peer) =>
      peer.ratios.length === 0 ? ['-', '-', '-'] : [median(peer.timesUs).toFixed(2), median(peer.ratios).toFixed(2), `${Math.min(...peer.ratios).toFixed(2)}-${Math.max(...peer.ratios).toFixed(2)}`],
    );
    lines.push(line([cell.op, String(cell.bytes), String(cell.worldSize), median(cell.timesUs).toFixed(2), ...peers]));
  }
  return lines;
}
