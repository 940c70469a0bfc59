import { mergeMap } from 'rxjs';
import type { CollectiveContext } from '../collectives/algorithm.js';
import { PIECE_BYTES } from '../collectives/peer-data.js';
import type { NativePlane } from '../collectives/schedule/native-plane.js';
import { agreeBeforeCoordinator } from '../collectives/schedule/plane-executor.js';
import { ScheduleCache } from '../collectives/schedule/schedule-cache.js';
import type { CollectiveTuning } from '../collectives/tuning.js';
import type { WaitingRanks } from '../collectives/waiting-ranks.js';
import { bestRingOrder } from '../topology/best-ring-order.js';
import { preferredRailOrder } from '../topology/link-tuning.js';
import { CollectiveTopology } from '../topology/collective-topology.js';
import type { BufferPool } from '../transport/buffer-pool.js';
import type { CollectiveChannel } from '../transport/collective-channel.js';
import type { LazyDeadlines } from '../transport/lazy-deadlines.js';
import type { CollectiveTransport } from '../transport/transport-kind.js';

/** What a session gives its algorithms (see `CollectiveContext`). */
export interface SessionContextParts {
  readonly rank: number;
  readonly worldSize: number;
  readonly transport: CollectiveTransport;
  readonly tuning: CollectiveTuning;
  readonly coordinator: Pick<CollectiveChannel, 'exchange'>;
  readonly scratch: BufferPool;
  readonly nativePlane: NativePlane | null;
  readonly timeoutMs: () => number;
  readonly nextMeshSequence: () => bigint;
  readonly deadlines: LazyDeadlines;
  readonly waiting: WaitingRanks;
  readonly abort: (reason: string) => void;
  readonly peerLost: ((peer: number, reason: string) => void) | null;
}

/** The rail order of a session: GX1_RAIL_ORDER, else (auto) the topology's best rails first, else none. */
export function railOrderOf(tuning: CollectiveTuning, topology: CollectiveTopology | null): readonly number[] | null {
  if (tuning.railOrder !== 'auto') return tuning.railOrder;
  return topology === null || topology.rails === 1 ? null : preferredRailOrder(topology, topology.rails);
}

/**
 * The context a session's algorithms run in: its coordinator (in a native session the ranks first
 * meet on the data links, `agreeBeforeCoordinator`), its ring (GX1_RING_ORDER, else the topology's
 * best, else rank order), where its collectives agree (on the mesh on tcp_peer), its native plane
 * and the schedules it has written.
 */
export function sessionContext(parts: SessionContextParts): CollectiveContext {
  const { rank, worldSize, transport, tuning, coordinator, nativePlane } = parts;
  const identity = Array.from({ length: worldSize }, (_, index) => index);
  const context: CollectiveContext = {
    rank,
    worldSize,
    coordinate: (request, payload, useScratch) => {
      if (nativePlane === null || worldSize === 1) return coordinator.exchange(request, payload, useScratch);
      return agreeBeforeCoordinator(nativePlane, context, request).pipe(mergeMap(() => coordinator.exchange(request, payload, useScratch)));
    },
    scratch: parts.scratch,
    ringOrder: tuning.ringOrder ?? (tuning.topology instanceof CollectiveTopology ? bestRingOrder(tuning.topology) : identity),
    ringChannels: tuning.ringChannels,
    // `auto` groups without declared links are inferred when the session opens (RankSession.useAutoGroups).
    topologyGroups: tuning.groups === 'auto' ? null : tuning.groups,
    topology: tuning.topology instanceof CollectiveTopology ? tuning.topology : null,
    railOrder: railOrderOf(tuning, tuning.topology instanceof CollectiveTopology ? tuning.topology : null),
    // Read when the session opens (RankSession.useAutotuneProfile): its fingerprint needs the probed topology.
    profile: null,
    pieceBytes: PIECE_BYTES,
    agreement: transport === 'tcp_peer' ? 'mesh' : 'coordinator',
    nextMeshSequence: parts.nextMeshSequence,
    timeoutMs: parts.timeoutMs,
    deadlines: parts.deadlines,
    waiting: parts.waiting,
    abort: parts.abort,
    peerLost: parts.peerLost,
    nativePlane,
    schedules: new ScheduleCache(),
  };
  return context;
}
