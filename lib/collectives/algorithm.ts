import type { Observable } from 'rxjs';
import type { DType } from '../protocol/element-type.js';
import type { Frame } from '../protocol/frame.js';
import type { ReduceOp } from '../protocol/reduce-op.js';
import type { TensorView } from '../tensor.js';
import type { CollectiveTopology } from '../topology/collective-topology.js';
import type { AutotuneProfile } from './autotune-profile.js';
import type { TopologyGroups } from '../topology/topology-groups.js';
import type { BufferPool } from '../transport/buffer-pool.js';
import type { CollectiveRequest } from '../transport/collective-channel.js';
import type { LazyDeadlines } from '../transport/lazy-deadlines.js';
import type { Links } from '../transport/links/links.js';
import type { NativePlane } from './schedule/native-plane.js';
import type { ScheduleCache } from './schedule/schedule-cache.js';
import type { WaitingRanks } from './waiting-ranks.js';

/**
 * What an algorithm may use besides the links: the coordinator (the staged algorithms agree and
 * send their data there; on tcp_host_staged every collective agrees there), scratch memory, the
 * ring every ring-family algorithm follows, and the native data plane where the session has one.
 */
export interface CollectiveContext {
  readonly rank: number;
  readonly worldSize: number;
  /**
   * Cold: one exchange with the coordinator for this collective. It checks that every rank
   * submitted the same operation and answers with this rank's response (its sequence keys the
   * algorithm's tags). With `scratch` the response is assembled in `scratch` memory, which the
   * algorithm must give back.
   */
  coordinate(request: CollectiveRequest, parts: readonly Uint8Array[], scratch?: boolean): Observable<Frame>;
  /** Memory for buffers that live for one collective (reduction inputs). */
  readonly scratch: BufferPool;
  /** The ring order (every rank once) of ring and chain algorithms: GX1_RING_ORDER, else the topology's best. */
  readonly ringOrder: readonly number[];
  /** Independent rings a ring algorithm stripes its data over (GX1_RING_CHANNELS). */
  readonly ringChannels: number;
  /** The topology groups hierarchical algorithms follow (GX1_TOPOLOGY_GROUPS, given or inferred), else null. */
  readonly topologyGroups: TopologyGroups | null;
  /**
   * The groups are the hosts the ranks advertise (the native plane's default where hosts hold
   * several ranks, or GX1_TOPOLOGY_GROUPS=auto): the planner weighs them without links, a host's
   * links out sharing one way out (lib/collectives/cost-model.ts).
   */
  readonly groupsAreHosts?: boolean;
  /** The job's links, declared (GX1_TOPOLOGY_LINKS) or probed, that the planner weighs; else null. */
  readonly topology: CollectiveTopology | null;
  /** The rails in the order the JS plane's pieces take them (GX1_RAIL_ORDER, or the topology's best); null: 0, 1, ... */
  readonly railOrder: readonly number[] | null;
  /** The autotune profile `auto` takes its measured choices from (GX1_COLLECTIVE_AUTOTUNE_PROFILE), else null. */
  readonly profile: AutotuneProfile | null;
  /** The size pipelined algorithms cut their tensors into (PIECE_BYTES; tests make it tiny). */
  readonly pieceBytes: number;
  /**
   * Where collectives that move their data rank to rank agree: on the mesh (each rank's header on the
   * links its schedule uses, no round of its own) or at the coordinator (a PEER_DATA request). Every rank of a session uses the same.
   */
  readonly agreement: 'mesh' | 'coordinator';
  /** The number of the next collective agreed on the mesh (per session, from 0: docs/protocol.md 9.7). */
  nextMeshSequence(): bigint;
  /** How long a rank waits for its peers in a collective that stays off the coordinator. */
  timeoutMs(): number;
  /** Where those waits are timed: one lazy timer for the session's collectives (see `LazyDeadlines`). */
  readonly deadlines: LazyDeadlines;
  /** Where those waits say whom they wait for, for the session's waiting warning; absent: nobody asks (tests' contexts). */
  readonly waiting?: WaitingRanks;
  /** Ends the job on every rank with `reason` (a failure only this rank has seen). */
  abort(reason: string): void;
  /**
   * A fault-tolerant job's answer to a peer whose links ended while a collective needed it: the
   * peer is lost here (`RankLosses.needed`), so this rank's communicators with it fail with
   * `RankLostError`, which ends the collective; the job goes on. Null elsewhere: the job ends.
   */
  readonly peerLost: ((peer: number, reason: string) => void) | null;
  /** The session's native data plane (tcp_peer, where every rank runs one), else null. */
  readonly nativePlane: NativePlane | null;
  /** The session's schedules by call shape (`runScheduled`). */
  readonly schedules: ScheduleCache;
}

/**
 * One way to run one collective, as Gloo's algorithm classes: given the links, the request and the
 * context, a cold Observable that runs it on subscribe and emits this rank's result once.
 */
export type Algorithm<Request, Result> = (links: Links, request: Request, context: CollectiveContext) => Observable<Result>;

/** A tensor collective: the tensor is this rank's contribution (read only unless it is the output). */
export interface TensorRequest {
  readonly view: TensorView;
  /**
   * Where the result goes, of exactly the result's size (an in-place all-reduce or broadcast
   * passes the input's own bytes); default fresh memory. Writing into memory that is already
   * mapped saves the first-touch cost of a fresh buffer, which for large tensors is a good part of
   * the collective's time. An algorithm may ignore it: the session then
   * copies its result there.
   */
  readonly output?: Uint8Array;
}

export interface RootedRequest extends TensorRequest {
  readonly root: number;
}

export interface ReductionRequest extends TensorRequest {
  readonly op: ReduceOp;
  /**
   * What the tensor is made of, where the ranks must agree on more than its length: a fused
   * bucket's tensors (lib/collectives/fusion/buckets.ts), as a layout hash. Every path's agreement
   * checks it (the request's tag, docs/protocol.md 9.7); absent for a plain call.
   */
  readonly layout?: bigint;
}

export interface RootedReductionRequest extends ReductionRequest {
  readonly root: number;
}

/** Only the root passes data; the others may pass null and learn the type from the root. */
export interface ScatterRequest {
  readonly view: TensorView | null;
  readonly root: number;
  readonly countPerRank: number;
}

export interface AllToAllVRequest extends TensorRequest {
  readonly sendCounts: readonly number[];
}

/** A result whose element type the rank may not have known beforehand (a scatter at a null-passing rank). */
export interface TypedBytes {
  readonly dtype: DType;
  readonly bytes: Uint8Array;
}

export interface CountedBytes {
  readonly bytes: Uint8Array;
  readonly counts: number[];
}

/** Every collective, with its request and its result at one rank. */
export interface Collectives {
  barrier: [request: Record<string, never>, result: void];
  allReduce: [ReductionRequest, Uint8Array];
  reduce: [RootedReductionRequest, Uint8Array | null];
  broadcast: [RootedRequest, Uint8Array];
  allGather: [TensorRequest, Uint8Array];
  gather: [RootedRequest, Uint8Array | null];
  scatter: [ScatterRequest, TypedBytes];
  reduceScatter: [ReductionRequest, Uint8Array];
  allToAll: [TensorRequest, Uint8Array];
  allToAllV: [AllToAllVRequest, CountedBytes];
}

export type CollectiveName = keyof Collectives;
