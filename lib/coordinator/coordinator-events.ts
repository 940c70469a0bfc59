/** What a rank last submitted on the ordered collective channel, as the coordinator saw it. */
export interface SubmittedCollective {
  readonly rank: number;
  /** null: nothing submitted yet. */
  readonly sequence: number | null;
  readonly operation: string | null;
}

/**
 * What a coordinator reports on `coordinator.events$` as a job runs: typed, never a payload byte.
 * `channel` is `'collective'` or `'rail N'` (tcp_peer's control channel is rail 0).
 */
export type CoordinatorEvent =
  | { readonly type: 'rank-joined'; readonly rank: number; readonly channel: string }
  /** Every rank joined `channel`: READY went out. */
  | { readonly type: 'channel-ready'; readonly channel: string }
  /** Every `joinReportIntervalMs` until every rank joined every channel: who is still missing. */
  | { readonly type: 'ranks-not-joined'; readonly missing: readonly number[]; readonly waitedMs: number }
  /** `rank` waited `timeoutMs` on `channel` for `missing` to join: it was told so, and its place freed. */
  | { readonly type: 'rendezvous-timed-out'; readonly rank: number; readonly channel: string; readonly missing: readonly number[]; readonly timeoutMs: number }
  /** The rank's collective channel ended cleanly between sequences. */
  | { readonly type: 'rank-left'; readonly rank: number }
  /** A fault-tolerant job lost the rank (`faultTolerant`): the others were told, the job goes on. */
  | { readonly type: 'rank-lost'; readonly rank: number; readonly reason: string }
  /** A fault-tolerant job's count of processes waiting to join it changed (docs/protocol.md 13.9). */
  | { readonly type: 'joiners-waiting'; readonly waiting: number }
  /**
   * The job grew: `members` (job ranks, in their new order) and `newcomers` joiners go on in a job
   * whose coordinator listens on `port` of this one's host (`Coordinator.successor`).
   */
  | { readonly type: 'grown'; readonly members: readonly number[]; readonly newcomers: number; readonly uniqueId: string; readonly port: number }
  /** The first rank submitted `sequence`. */
  | { readonly type: 'collective-started'; readonly sequence: number; readonly operation: string; readonly rank: number }
  | { readonly type: 'collective-completed'; readonly sequence: number; readonly operation: string; readonly bytes: number; readonly durationMs: number }
  /** `sequence` has waited `waitedMs` (past `slowCollectiveMs`) for `missing`; `ranks` says where each rank is. */
  | {
      readonly type: 'collective-waiting';
      readonly sequence: number;
      readonly operation: string;
      readonly waitedMs: number;
      readonly missing: readonly number[];
      readonly ranks: readonly SubmittedCollective[];
    }
  /** A send met its receive on `rail`. */
  | { readonly type: 'p2p-matched'; readonly rail: number; readonly source: number; readonly destination: number; readonly tag: bigint; readonly bytes: number }
  | { readonly type: 'heartbeat'; readonly rank: number; readonly rail: number }
  | { readonly type: 'failed'; readonly error: unknown }
  /** Every rank left cleanly. */
  | { readonly type: 'finished' };

/** Where loops report events: a Subject fits; `observed` false means nobody listens (build nothing). */
export interface CoordinatorEventSink {
  readonly observed: boolean;
  next(event: CoordinatorEvent): void;
}

/** A sink nobody listens to, for loops run without a coordinator (tests). */
export const NO_EVENTS: CoordinatorEventSink = { observed: false, next: () => undefined };

/** One line per event for the debug log (see lib/diagnostics/debug-log.ts); no payload. */
export function describeCoordinatorEvent(event: CoordinatorEvent): string {
  switch (event.type) {
    case 'rank-joined':
      return `rank ${event.rank} joined (${event.channel})`;
    case 'channel-ready':
      return `every rank joined (${event.channel})`;
    case 'ranks-not-joined':
      return `ranks [${event.missing.join(',')}] have not joined after ${Math.round(event.waitedMs)} ms`;
    case 'rendezvous-timed-out':
      return `rank ${event.rank} waited ${event.timeoutMs} ms for ranks [${event.missing.join(',')}] to join (${event.channel})`;
    case 'rank-left':
      return `rank ${event.rank} left`;
    case 'rank-lost':
      return `rank ${event.rank} lost (${event.reason}); the other ranks were told`;
    case 'joiners-waiting':
      return `${event.waiting} processes wait to join; the ranks were told`;
    case 'grown':
      return `grew: ranks [${event.members.join(',')}] and ${event.newcomers} newcomers go on in job ${event.uniqueId}, coordinator port ${event.port}`;
    case 'collective-started':
      return `collective sequence ${event.sequence} ${event.operation} started by rank ${event.rank}`;
    case 'collective-completed':
      return `collective sequence ${event.sequence} ${event.operation} ${event.bytes} bytes in ${event.durationMs.toFixed(3)} ms`;
    case 'collective-waiting':
      return (
        `collective sequence ${event.sequence} ${event.operation} has waited ${Math.round(event.waitedMs)} ms for ranks [${event.missing.join(',')}]; ` +
        `last submitted: ${event.ranks.map((rank) => `rank ${rank.rank} ${rank.sequence === null ? 'nothing' : `sequence ${rank.sequence} ${rank.operation}`}`).join(', ')}`
      );
    case 'p2p-matched':
      return `point-to-point rank ${event.source} -> rank ${event.destination} tag ${event.tag} rail ${event.rail}: ${event.bytes} bytes`;
    case 'heartbeat':
      return `heartbeat from rank ${event.rank} (rail ${event.rail})`;
    case 'failed':
      return `failed: ${event.error instanceof Error ? event.error.message : String(event.error)}`;
    case 'finished':
      return 'every rank left';
  }
}
