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
 * What a session's planner sees of its job: its ring, groups, links, rails and autotune profile.
 * A session learns some of it as it opens (a probe, the groups of its hosts, a profile) and then
 * takes a new context that sees it (`sessionContext` again): a context never changes.
 */
export type ContextView = Pick<CollectiveContext, 'ringOrder' | 'topologyGroups' | 'groupsAreHosts' | 'topology' | 'railOrder' | 'profile'>;

/** What a session sees before it learns anything: its tuning's (GX1_RING_ORDER, else the declared topology's best ring, else rank order). */
export function tunedView(worldSize: number, tuning: CollectiveTuning): ContextView {
  const topology = tuning.topology instanceof CollectiveTopology ? tuning.topology : null;
  return {
    ringOrder: tuning.ringOrder ?? (topology !== null ? bestRingOrder(topology) : Array.from({ length: worldSize }, (_, index) => index)),
    // `auto` groups without declared links are inferred when the session opens (RankSession.useAutoGroups).
    topologyGroups: tuning.groups === 'auto' ? null : tuning.groups,
    topology,
    railOrder: railOrderOf(tuning, topology),
    // Read when the session opens (RankSession.useAutotuneProfile): its fingerprint needs the probed topology.
    profile: null,
  };
}

/**
 * The context a session's algorithms run in, frozen: its coordinator (in a native session the
 * ranks first meet on the data links, `agreeBeforeCoordinator`), what it sees of its job (`view`,
 * by default its tuning's), where its collectives agree (on the mesh on tcp_peer), its native
 * plane and the schedules written for this view (a cache of its own: a new view writes its own).
 */
export function sessionContext(parts: SessionContextParts, view: ContextView = tunedView(parts.worldSize, parts.tuning)): CollectiveContext {
  const { rank, worldSize, transport, tuning, coordinator, nativePlane } = parts;
  const context: CollectiveContext = {
    rank,
    worldSize,
    coordinate: (request, payload, useScratch) => {
      if (nativePlane === null || worldSize === 1) return coordinator.exchange(request, payload, useScratch);
      return agreeBeforeCoordinator(nativePlane, context, request).pipe(mergeMap(() => coordinator.exchange(request, payload, useScratch)));
    },
    scratch: parts.scratch,
    ringOrder: view.ringOrder,
    ringChannels: tuning.ringChannels,
    topologyGroups: view.topologyGroups,
    groupsAreHosts: view.groupsAreHosts,
    topology: view.topology,
    railOrder: view.railOrder,
    profile: view.profile,
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
  return Object.freeze(context);
}
