/**
 * Why a peer's cell of a row is empty (`-`), in one line the table prints under the block: a
 * column's benchmarks do not measure that collective, the one that does was not run here (and
 * what it lacks), it failed at this world size (its error line), or its output had no such row.
 */
import type { BenchOp } from '../plan.js';
import type { Peer } from './peer.js';

/** How one peer stands in the round being measured. */
export interface PeerState {
  readonly peer: Peer;
  /** Why it cannot run here (`prepare`'s answer): not installed, no source, another element type. */
  readonly notRun?: string;
  /** Its failure at the world size being measured, as `measurePeer` names it. */
  readonly failed?: string;
}

/** Why `column` has no time for `op` at `bytes` on `worldSize` ranks, given every peer's state. */
export function whyEmpty(cell: { readonly op: BenchOp; readonly bytes: number; readonly worldSize: number }, column: string, states: readonly PeerState[]): string {
  const inColumn = states.filter(({ peer }) => peer.column === column);
  const owner = inColumn.find(({ peer }) => peer.ops.includes(cell.op));
  if (owner === undefined) return `no benchmark in this column measures ${cell.op} (${inColumn.map(({ peer }) => `${peer.name}: ${peer.ops.join(', ')}`).join('; ')})`;
  if (owner.notRun !== undefined) return `${owner.peer.name} not run: ${owner.notRun}`;
  if (owner.failed !== undefined) return owner.failed;
  return `${owner.peer.name} reported no ${cell.op} row of ${cell.bytes} B at ${cell.worldSize} ranks`;
}
