import type { CollectiveName } from '../collectives/algorithm.js';
import type { Plane } from '../collectives/select.js';

/** What every collective event says: which call, by which algorithm, on which plane. */
interface CollectiveFields {
  /** The collective's place in this session's call order (0, 1, ...): the same on every rank. */
  readonly sequence: number;
  readonly collective: CollectiveName;
  readonly algorithm: string;
  /** Where it ran: the native data plane, the JS plane (the event loop over the links), or the coordinator. */
  readonly plane: Plane;
}

/**
 * What a session reports on `session.events$` as it works: typed, never a payload byte. Enough for
 * a notebook or a pipeline to see which algorithm ran, how big and how long, and for the flight
 * recorder to say what a rank did last.
 */
export type SessionEvent =
  | (CollectiveFields & { readonly type: 'collective-started'; readonly bytes: number })
  | (CollectiveFields & { readonly type: 'collective-finished'; readonly bytes: number; readonly durationMs: number })
  | (CollectiveFields & { readonly type: 'collective-failed'; readonly error: unknown })
  /**
   * A collective no coordinator sees (on the mesh, the JS plane's links or the native plane) has
   * waited `waitedMs` for `missing`, whose data has not come: every `slowCollectiveMs` while it waits.
   */
  | (CollectiveFields & { readonly type: 'collective-waiting'; readonly waitedMs: number; readonly missing: readonly number[] })
  /** A send the transport took (the coordinator acknowledged it, or the peer socket accepted it). */
  | { readonly type: 'p2p-sent'; readonly destination: number; readonly tag: bigint; readonly rail: number; readonly bytes: number; readonly durationMs: number }
  /** A receive that matched its send. */
  | { readonly type: 'p2p-received'; readonly source: number | null; readonly tag: bigint; readonly rail: number; readonly bytes: number; readonly durationMs: number }
  /** A send or receive that failed (`peer`: the destination, or the source, null for any). */
  | { readonly type: 'p2p-failed'; readonly operation: 'send' | 'receive'; readonly peer: number | null; readonly tag: bigint; readonly rail: number; readonly error: unknown }
  | { readonly type: 'heartbeat'; readonly roundTripMs: number }
  /** The session's failure (an abort, a timeout, a lost connection): the last event. */
  | { readonly type: 'failed'; readonly error: unknown };

/** One line per event for the debug log; no payload. */
export function describeSessionEvent(event: SessionEvent): string {
  switch (event.type) {
    case 'collective-started':
      return `collective sequence ${event.sequence} ${event.collective} (${event.algorithm}, ${event.plane}) ${event.bytes} bytes started`;
    case 'collective-finished':
      return `collective sequence ${event.sequence} ${event.collective} (${event.algorithm}, ${event.plane}) ${event.bytes} bytes in ${event.durationMs.toFixed(3)} ms`;
    case 'collective-failed':
      return `collective sequence ${event.sequence} ${event.collective} (${event.algorithm}, ${event.plane}) failed: ${errorMessage(event.error)}`;
    case 'collective-waiting':
      return `collective sequence ${event.sequence} ${event.collective} (${event.algorithm}, ${event.plane}) has waited ${Math.round(event.waitedMs)} ms for ranks [${event.missing.join(',')}]`;
    case 'p2p-sent':
      return `sent ${event.bytes} bytes to rank ${event.destination} tag ${event.tag} rail ${event.rail} in ${event.durationMs.toFixed(3)} ms`;
    case 'p2p-received':
      return `received ${event.bytes} bytes from ${event.source === null ? 'any rank' : `rank ${event.source}`} tag ${event.tag} rail ${event.rail} in ${event.durationMs.toFixed(3)} ms`;
    case 'p2p-failed':
      return `${event.operation} ${event.operation === 'send' ? 'to' : 'from'} ${event.peer === null ? 'any rank' : `rank ${event.peer}`} tag ${event.tag} rail ${event.rail} failed: ${errorMessage(event.error)}`;
    case 'heartbeat':
      return `heartbeat round trip ${event.roundTripMs.toFixed(3)} ms`;
    case 'failed':
      return `failed: ${errorMessage(event.error)}`;
  }
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
