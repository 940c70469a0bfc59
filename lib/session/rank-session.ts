import type { AsyncIterableX } from './ix-types.js';
import { defer, lastValueFrom, type Observable, type SchedulerLike, Subject, type Subscription, throwError, timeout } from 'rxjs';
import { type ChildCommunicator, childCommunicator, type CommunicatorParent, openChildCommunicator } from '../communicator/child-communicator.js';
import { childCommunicatorId, WORLD_COMMUNICATOR } from '../communicator/communicator-id.js';
import { announceGroup } from '../communicator/group-announcement.js';
import {
  type Growth,
  type JobLineage as CommunicatorJobLineage,
  type Membership as CommunicatorMembership,
  failOnMemberLoss,
  type SessionHolds,
  worldMembership,
} from '../communicator/membership.js';
import { shrinkCommunicator } from '../communicator/shrink-communicator.js';
import { groupMembers, SPLIT_LAYOUT, splitEntry, splitMembers, type SplitOptions } from '../communicator/split-plan.js';
import type { CollectiveContext, CollectiveName } from '../collectives/algorithm.js';
import type { NativePlane } from '../collectives/schedule/native-plane.js';
import { ALGORITHMS, type Plane, sessionPlane } from '../collectives/select.js';
import { autoGroups, type CollectiveTuning } from '../collectives/tuning.js';
import { WaitingRanks } from '../collectives/waiting-ranks.js';
import { DEFAULT_SLOW_COLLECTIVE_MS } from '../diagnostics/slow-collective.js';
import { type CollectivePlan, planCollective } from '../collectives/plan.js';
import { debugLog } from '../diagnostics/debug-log.js';
import { ChannelClosedError, ConfigurationError, readSetting, TimeoutError } from '../errors.js';
import { JobGrowth } from '../transport/job-growth.js';
import { releaseResults } from '../kernels/result-memory.js';
import { ElementType } from '../protocol/element-type.js';
import { layoutHash } from '../protocol/layout-hash.js';
import { communicatorText } from '../protocol/message-key.js';
import type { DType } from '../protocol/element-type.js';
import type { Frame } from '../protocol/frame.js';
import { Opcode } from '../protocol/opcode.js';
import type { ReduceOp } from '../protocol/reduce-op.js';
import type { Tensor, TensorOf } from '../tensor.js';
import { bestRingOrder } from '../topology/best-ring-order.js';
import { CollectiveTopology } from '../topology/collective-topology.js';
import {
  executionFingerprint,
  type FingerprintInput,
  pinnedTopology,
  readAutotuneProfile,
  topologyFingerprint,
  validateAutotuneProfile,
} from '../collectives/autotune-profile.js';
import type { TopologyGroups } from '../topology/topology-groups.js';
import { probeTopology, type ProbeContext } from '../topology/probe.js';
import { resolveProbeOptions, type TopologyProbeOptions } from '../topology/probe-options.js';
import { probeVariables } from '../settings/setting-parts.js';
import { BufferPool } from '../transport/buffer-pool.js';
import { COLLECTIVE_RESPONSE_GRACE_MS, CollectiveChannel } from '../transport/collective-channel.js';
import { LazyDeadlines } from '../transport/lazy-deadlines.js';
import type { SessionLinks } from '../transport/links/links.js';
import { RankLosses } from '../transport/rank-losses.js';
import { SessionFailure } from '../transport/session-failure.js';
import type { CollectiveTransport } from '../transport/transport-kind.js';
import { MAX_TIMER_DELAY_MS, validateTimeout } from '../transport/transport-kind.js';
import { busyPollMicros } from './busy-poll.js';
import { planeSpinMicros } from './plane-spin.js';
import { type BroadcastOptions, CollectiveRequests, type OutputOptions, type ReductionOptions } from './collective-requests.js';
import { CollectiveRunner } from './collective-runner.js';
import { EventLoopHold } from './event-loop-hold.js';
import type { SessionEvent } from './events.js';
import { exchangeRequest, type ExchangeOptions } from './exchange-options.js';
import { allReduceMany, type FusionOptions } from './fused-all-reduce.js';
import { leaveBeforeExit } from './leave-before-exit.js';
import { logSessionEvents, sessionWarningLogger } from './log-session-events.js';
import { openLinks } from './open-links.js';
import { ObjectCollectives } from './object-collectives.js';
import { PointToPoint, type ProbedMessage, type RailOption, type ReceiveShape } from './point-to-point.js';
import type { ResolvedSessionOptions } from './session-options.js';
import { type ContextView, railOrderOf, sessionContext, type SessionContextParts } from './session-context.js';

/** How a session that `openSession` opened goes on into the job its job grows into (`grow()`, docs/protocol.md 13.9). */
export type JobLineage = CommunicatorJobLineage<RankSession>;

export type { SessionHolds };

/**
 * The parts a session runs on, for sessions built without sockets (`RankSession.over`): rxccl/testing
 * runs whole jobs in memory this way, through the same queue, validation and algorithm table.
 */
export interface SessionParts {
  readonly rank: number;
  readonly worldSize: number;
  readonly transport: CollectiveTransport;
  readonly links: SessionLinks;
  readonly coordinator: Pick<CollectiveChannel, 'exchange' | 'close'>;
  readonly failure: SessionFailure;
  readonly tuning: CollectiveTuning;
  /** The collective timeout (see `SessionOptions.collectiveTimeoutMs`). */
  readonly timeoutMs: number;
  readonly scheduler: SchedulerLike;
  /** After how long, and again every as long, a collective waiting for ranks no coordinator sees says so (default 30 s, as the coordinator's). */
  readonly slowCollectiveMs?: number;
  /** Every rank on one host (default false): large all-reduces, all-gathers, reduce-scatters and broadcasts then go pairwise under `auto`. */
  readonly ranksShareHost?: boolean;
  /** The native data plane (tcp_peer), where the job runs one; default none (the JS plane). */
  readonly nativePlane?: NativePlane | null;
  /** A fault-tolerant job's lost ranks as this rank hears of them (`failure` is then the job's); default none. */
  readonly losses?: RankLosses | null;
}

/** Where a session sits in its job (lib/communicator/membership.ts). */
type Membership = CommunicatorMembership<RankSession>;

/** Everything a session is made of: its parts, with what `over` leaves to defaults settled. */
interface SessionCore extends Omit<SessionParts, 'timeoutMs' | 'ranksShareHost' | 'nativePlane' | 'losses' | 'slowCollectiveMs'> {
  /** The collective timeout now (`setTimeout` changes it). */
  readonly timeout: { ms: number };
  readonly slowCollectiveMs: number;
  /** Whom its running collective waits for (its waits, and a communicator's leader, say so). */
  readonly waiting: WaitingRanks;
  /** How long its links wait for a point-to-point message (the session timeout until `setTimeout`); null: the links time their own. */
  readonly messageTimeout: { ms: number } | null;
  readonly holds: readonly Promise<unknown>[];
  readonly loop: EventLoopHold;
  /** Memory for buffers that live for one collective: also where the coordinator's responses that feed a kernel are assembled. */
  readonly scratch: BufferPool;
  /** Every rank shares this rank's host (see `Situation`). */
  readonly ranksShareHost: boolean;
  /** The native data plane, where the job runs one. */
  readonly nativePlane: NativePlane | null;
  readonly membership: Membership;
}

/**
 * One rank's membership in a job (the reference design's `TcpRankSession`): an ordered collective
 * channel to the coordinator and the links of its transport (the coordinator's rails on
 * tcp_host_staged, the direct peer mesh on tcp_peer).
 *
 * Every method validates its arguments before anything is sent. Collectives run one at a time in
 * call order, each by the algorithm the table in lib/collectives/select.ts picks; point-to-point
 * messages are multiplexed. The first failure (an abort from any rank, a timeout, a lost
 * connection) fails the whole session: pending and later calls reject with it and `failure$`
 * errors with it.
 */
export class RankSession {
  readonly failure$: Observable<never>;
  /**
   * Typed events as the session works (see `SessionEvent`): each collective with its sequence,
   * algorithm, size and time, point-to-point messages, heartbeats, the failure. Never payload
   * bytes; built only while someone subscribes. Completes on `close()`.
   *
   * @example
   * session.events$.subscribe((event) => {
   *   if (event.type === 'collective-finished') console.log(event.sequence, event.collective, event.algorithm, event.durationMs);
   * });
   */
  readonly events$: Observable<SessionEvent>;
  private readonly events = new Subject<SessionEvent>();
  readonly rank: number;
  readonly worldSize: number;
  readonly transport: CollectiveTransport;
  private readonly links: SessionLinks;
  private readonly coordinator: Pick<CollectiveChannel, 'exchange' | 'close'>;
  private readonly failure: SessionFailure;
  private readonly tuning: CollectiveTuning;
  private readonly timeout: { ms: number };
  private readonly slowCollectiveMs: number;
  private readonly messageTimeout: { ms: number } | null;
  private readonly holds: readonly Promise<unknown>[];
  private readonly loop: EventLoopHold;
  private readonly scheduler: SchedulerLike;
  private readonly scratch: BufferPool;
  private readonly ranksShareHost: boolean;
  private readonly nativePlane: NativePlane | null;
  private readonly membership: Membership;
  /** What the context is made of, besides what the session sees (`see`). */
  private readonly contextParts: SessionContextParts;
  /**
   * The context its algorithms run in now: frozen, replaced wholesale (`see`) when the session
   * learns its topology, groups or profile. Each call takes it once when made, so a change never
   * reaches a call already made.
   */
  private context: CollectiveContext;
  private readonly deadlines: LazyDeadlines;
  private readonly runner: CollectiveRunner;
  private readonly requests: CollectiveRequests;
  private readonly messaging: PointToPoint;
  private readonly objects: ObjectCollectives;
  private closed = false;
  private meshSequence = 0n;
  /** Splits of this session so far: the next one's number in its communicators' ids. */
  private splits = 0;
  /** `group` calls so far, by rank set: the next one's number in its communicator's id. */
  private readonly groups = new Map<string, number>();
  /** Per rank, the group calls that listed it so far: the tag of the next announcement to it (`announceGroup`). */
  private readonly groupAnnouncements = new Map<number, number>();
  /**
   * A process whose only work left is this idle session (its sockets hold nothing) is about to
   * exit: the session leaves first, so the others see a LEAVE, not a dropped connection. (The
   * world only: a communicator's links are the world's.)
   */
  private readonly stopLeavingOnExit: () => void;
  /** Ends this communicator when one of its ranks is lost (a fault-tolerant job's). */
  private readonly lossWatch: Subscription | null;
  /** Shrinks of this communicator so far: the next one's number in its communicator's id. */
  private shrinks = 0;

  private constructor(core: SessionCore) {
    this.rank = core.rank;
    this.worldSize = core.worldSize;
    this.transport = core.transport;
    this.links = core.links;
    this.coordinator = core.coordinator;
    this.failure = core.failure;
    this.tuning = core.tuning;
    this.timeout = core.timeout;
    this.slowCollectiveMs = core.slowCollectiveMs;
    this.messageTimeout = core.messageTimeout;
    this.holds = core.holds;
    this.loop = core.loop;
    this.scheduler = core.scheduler;
    this.scratch = core.scratch;
    this.ranksShareHost = core.ranksShareHost;
    this.nativePlane = core.nativePlane;
    this.membership = core.membership;
    const { rank, worldSize, transport, tuning, coordinator, failure, nativePlane, timeout, links, loop, waiting } = core;
    this.stopLeavingOnExit = core.membership.id === WORLD_COMMUNICATOR ? leaveBeforeExit(() => void this.close()) : () => undefined;
    this.failure$ = failure.failure$;
    this.events$ = this.events.asObservable();
    failure.failure$.subscribe({
      error: (error: unknown) => {
        // A native collective ends with the session, at once.
        nativePlane?.end();
        if (this.events.observed) this.events.next({ type: 'failed', error });
      },
    });
    this.deadlines = new LazyDeadlines(core.scheduler);
    this.lossWatch = failOnMemberLoss(core.membership, failure, `rank ${rank} of ${this.name}`);
    // The engine waits on a thread of its own, and says whom for while it does (none otherwise).
    if (nativePlane?.waitingFor !== undefined) waiting.add(() => nativePlane.waitingFor!());
    this.contextParts = {
      rank,
      worldSize,
      transport,
      tuning,
      coordinator,
      scratch: core.scratch,
      nativePlane,
      timeoutMs: () => timeout.ms,
      nextMeshSequence: () => this.meshSequence++,
      deadlines: this.deadlines,
      waiting,
      abort: (reason) => void this.abortLinks(reason),
      peerLost: core.membership.losses === null ? null : (peer, reason) => core.membership.losses!.needed(core.membership.jobRanks[peer]!, reason),
    };
    this.context = sessionContext(this.contextParts);
    const plane = sessionPlane(transport, nativePlane !== null);
    this.runner = new CollectiveRunner({
      transport,
      links,
      context: () => this.context,
      tuning,
      plane,
      ranksShareHost: core.ranksShareHost,
      failure,
      loop,
      events: this.events,
      waiting,
      slowCollectiveMs: core.slowCollectiveMs,
      warnings: sessionWarningLogger(rank, debugLog),
      scheduler: core.scheduler,
      closedText: this.closedText,
    });
    this.requests = new CollectiveRequests(this.runner, rank, worldSize);
    this.messaging = new PointToPoint(links, failure, loop, this.events);
    this.objects = new ObjectCollectives((data, sendCounts) => this.requests.allToAllV(data, sendCounts), rank, worldSize);
  }

  static async open(options: ResolvedSessionOptions, holds: SessionHolds = {}, lineage: JobLineage | null = null): Promise<RankSession> {
    const jobFailure = new SessionFailure();
    const losses = options.faultTolerant ? new RankLosses(options.scheduler) : null;
    const growth: Growth<RankSession> | null = losses === null || lineage === null ? null : { job: new JobGrowth(options), lineage, world: null };
    // In a fault-tolerant job the world can fail alone (a lost rank) while the job goes on.
    const failure = losses === null ? jobFailure : SessionFailure.following(jobFailure);
    // Collectives wait the collective timeout; point-to-point messages the session timeout (connecting too).
    const timeout = { ms: options.collectiveTimeoutMs };
    const messageTimeout = { ms: options.timeoutMs };
    const started = performance.now();
    const { transport, collective, links, sockets, processesOnHost, nativePlane, hostGroups, communicatorPlanes } = await openLinks(options, jobFailure, () => messageTimeout.ms, losses, growth?.job ?? null);
    const busyPoll = busyPollMicros(options.busyPoll, processesOnHost);
    debugLog.info(
      `rank ${options.rank} of ${options.worldSize} joined through coordinator ${options.host}:${options.port} ` +
        `(${transport}, ${links.rails} rails, ${dataPlaneText(transport, nativePlane, planeSpinMicros(options.spin, options.oversubscribedSpin, processesOnHost ?? options.worldSize))}busy-poll ${busyPoll} us) in ${(performance.now() - started).toFixed(1)} ms`,
    );
    const owner = { uniqueId: options.uniqueId, rank: options.rank, worldSize: options.worldSize, failure: jobFailure, scheduler: options.scheduler };
    // One pool for the session's scratch and the staged responses it reduces, so that a reduction
    // gives the response's memory back to the pool it came from.
    const scratch = new BufferPool();
    const coordinator = new CollectiveChannel(collective, owner, () => timeout.ms, scratch);
    const session = new RankSession({
      rank: options.rank,
      worldSize: options.worldSize,
      transport,
      links,
      coordinator,
      failure,
      tuning: options.tuning,
      timeout,
      slowCollectiveMs: DEFAULT_SLOW_COLLECTIVE_MS,
      waiting: new WaitingRanks(),
      messageTimeout,
      holds: holds.closeAfter ?? [],
      loop: new EventLoopHold(sockets, busyPoll / 1000),
      scheduler: options.scheduler,
      scratch,
      ranksShareHost: transport === 'tcp_peer' && processesOnHost === options.worldSize,
      nativePlane,
      membership: worldMembership(links, jobFailure, losses, communicatorPlanes, growth, options.settings),
    });
    if (growth !== null) growth.world = session;
    logSessionEvents(session.events$, options.rank, debugLog);
    try {
      if (options.tuning.topology === 'probe') await session.useProbedTopology();
      const { autotuneProfile } = options.tuning;
      const profile = autotuneProfile === null ? null : readSetting(autotuneProfile.setting, () => readAutotuneProfile(autotuneProfile.path));
      // A profile tuned on probed links within 4x of this probe's: its links, so its fingerprint.
      const pinned = profile === null || session.context.topology === null || options.tuning.topology !== 'probe' ? null : pinnedTopology(profile, session.context.topology);
      if (pinned !== null) session.adoptTopology(pinned);
      if (options.tuning.groups === 'auto') session.useAutoGroups(hostGroups);
      // The native plane's ranks of one host share memory (single copy): by default its hosts are
      // the groups, where they hold several ranks.
      else if (options.tuning.groups === null && nativePlane !== null) session.useHostGroups(hostGroups);
      if (autotuneProfile !== null) readSetting(autotuneProfile.setting, () => session.useAutotuneProfile(profile));
    } catch (error) {
      // The probe failed, nothing could be inferred from it, or the profile is not this job's: no session to hand back, nothing left open.
      await session.close().catch(() => undefined);
      throw error;
    }
    return session;
  }

  /** A session over `parts` (no sockets, no topology probe). */
  static over(parts: SessionParts): RankSession {
    const { rank, worldSize, transport, links, coordinator, tuning, timeoutMs, scheduler } = parts;
    const losses = parts.losses ?? null;
    const failure = losses === null ? parts.failure : SessionFailure.following(parts.failure);
    return new RankSession({
      rank,
      worldSize,
      transport,
      links,
      coordinator,
      failure,
      tuning,
      timeout: { ms: timeoutMs },
      slowCollectiveMs: parts.slowCollectiveMs ?? DEFAULT_SLOW_COLLECTIVE_MS,
      waiting: new WaitingRanks(),
      messageTimeout: null,
      holds: [],
      loop: new EventLoopHold([]),
      scheduler,
      scratch: new BufferPool(),
      ranksShareHost: parts.ranksShareHost ?? false,
      nativePlane: parts.nativePlane ?? null,
      membership: worldMembership(links, parts.failure, losses),
    });
  }

  /**
   * Parallel connections between every pair of ranks (GX1_P2P_RAILS, 1..64).
   * @example
   * const rail = Number(tag) % session.rails; // the rail a tag uses by default
   */
  get rails(): number {
    return this.links.rails;
  }

  /**
   * This communicator's id: 0 for the job's world (the session `openSession` returns), else the id
   * its messages carry on the wire (docs/protocol.md 13.1), the same on every member.
   * @example
   * const pairs = await session.split({ color: session.rank >> 1 });
   * console.log(pairs?.communicatorId.toString(16));
   */
  get communicatorId(): bigint {
    return this.membership.id;
  }

  /**
   * The job rank (the world's rank) of each of this communicator's ranks: `jobRanks[r]` is rank r
   * here. On the world, 0..W-1.
   * @example
   * const group = await session.split({ color: session.rank % 2 });
   * console.log(`rank ${group!.rank} here is job rank ${group!.jobRanks[group!.rank]}`);
   */
  get jobRanks(): readonly number[] {
    return this.membership.jobRanks;
  }

  /**
   * The session's failure, if it has failed.
   * @example
   * if (session.error !== undefined) console.error('session failed:', session.error);
   */
  get error(): unknown {
    return this.failure.error;
  }

  /**
   * The topology groups hierarchical collectives follow on this session (GX1_TOPOLOGY_GROUPS, or
   * inferred from the links with `auto`; the same on every rank), else null.
   * @example
   * console.log(`groups: ${session.topologyGroups?.map((group) => group.join(',')).join(';') ?? 'none'}`);
   */
  get topologyGroups(): TopologyGroups | null {
    return this.context.topologyGroups;
  }

  /**
   * The links the planner weighs on this session (GX1_TOPOLOGY_LINKS: declared, or probed when it
   * opened; with rail and aggregate links), else null: none declared or probed.
   * @example
   * console.log(session.topology?.link(0, 1)?.bandwidthMbps);
   */
  get topology(): CollectiveTopology | null {
    return this.context.topology;
  }

  /**
   * What a collective of `bytes` (this rank's tensor; a reduce-scatter's whole input) runs on this
   * session, and why: the reference's `CollectivePlan`, with every candidate `auto` weighed and its
   * estimate (`candidates`: the cheapest runs, docs/protocol.md 9.10). A call of that size runs
   * this algorithm (`events$` names it).
   * @example
   * const { algorithm, plane, estimatedTimeNs } = session.plan('allReduce', 64 << 20);
   */
  plan(collective: CollectiveName, bytes: number): CollectivePlan {
    if (!Object.hasOwn(ALGORITHMS, collective)) throw new ConfigurationError(`plan: unknown collective ${JSON.stringify(collective)}; expected one of ${Object.keys(ALGORITHMS).join(' ')}`);
    if (!Number.isSafeInteger(bytes) || bytes < 0) throw new ConfigurationError(`plan: bytes must be a byte count, got ${String(bytes)}`);
    return planCollective(collective, this.runner.situation(bytes));
  }

  /** The plane this session's scheduled collectives run on. */
  private get plane(): Plane {
    return sessionPlane(this.transport, this.nativePlane !== null);
  }

  /**
   * The fingerprints an autotune profile for this job carries (`rxccl tune` writes them; a profile
   * with others is refused): the reference's recipe over this session's topology (declared,
   * probed, else uniform), ring, groups, rails and direct figures, and rxccl's execution with
   * this transport.
   * @example
   * const { topology, execution } = session.autotuneFingerprints;
   */
  get autotuneFingerprints(): { readonly topology: string; readonly execution: string } {
    return { topology: topologyFingerprint(this.fingerprintInput()), execution: executionFingerprint(this.transport, this.plane) };
  }

  /**
   * The ring order ring and chain algorithms follow on this session (the same on every rank).
   * @example
   * console.log(`ring: ${session.ringOrder.join(' -> ')}`);
   */
  get ringOrder(): readonly number[] {
    return this.context.ringOrder;
  }

  /**
   * Waits until every rank has entered the barrier (a collective: every rank calls it, in the same
   * order as its other collectives).
   * @example
   * await session.barrier(); // every rank has finished writing its checkpoint
   */
  barrier(): Promise<void> {
    return lastValueFrom(this.barrier$(), { defaultValue: undefined });
  }

  /**
   * The barrier as a cold Observable: it is queued when subscribed and completes once every rank entered.
   * @example
   * session.barrier$().subscribe({ complete: () => console.log('all ranks here') });
   */
  barrier$(): Observable<void> {
    return this.requests.barrier();
  }

  /**
   * Element-wise reduction of every rank's tensor; every rank gets the result, a fresh tensor of the
   * same form, or `data` itself with `{ inPlace: true }` (as torch's `all_reduce`: no new memory).
   * @example
   * const sum = await session.allReduce(Float32Array.of(1, 2)); // [W, 2W] for W ranks
   * await session.allReduce(gradients, 'avg', { inPlace: true }); // gradients now hold the mean
   */
  allReduce<T extends Tensor>(data: T, op: ReduceOp = 'sum', options: ReductionOptions<T> = {}): Promise<T> {
    return lastValueFrom(this.allReduce$(data, op, options));
  }

  /**
   * `allReduce` as a cold Observable that emits the result once.
   * @example
   * const mean = await lastValueFrom(session.allReduce$(gradients, 'avg'));
   */
  allReduce$<T extends Tensor>(data: T, op: ReduceOp = 'sum', options: ReductionOptions<T> = {}): Observable<T> {
    return this.requests.allReduce(data, op, options);
  }

  /**
   * All-reduces many tensors as few collectives (fusion, as torch DDP's buckets and Horovod's
   * fusion buffer): each type's tensors are packed, in order, into buckets of at most `bucketBytes`
   * (default 64 MiB), one all-reduce each, and the results come back per tensor, in order: fresh
   * tensors (views into their bucket's result), or the tensors themselves with `{ inPlace: true }`.
   * Every rank passes tensors of the same types and lengths in the same order; the agreement checks
   * each bucket's layout. `allReduceFused` is the operator for a stream of tensors.
   * @example
   * const grads = model.layers.map((layer) => layer.gradient); // hundreds of small Float32Arrays
   * await session.allReduceMany(grads, 'avg', { inPlace: true }); // a few collectives, not hundreds
   */
  allReduceMany<T extends Tensor>(tensors: readonly T[], op: ReduceOp = 'sum', options: FusionOptions = {}): Promise<T[]> {
    return lastValueFrom(this.allReduceMany$(tensors, op, options));
  }

  /** `allReduceMany` as an Observable that emits the results once (submitted at the call, as `allReduce$`). */
  allReduceMany$<T extends Tensor>(tensors: readonly T[], op: ReduceOp = 'sum', options: FusionOptions = {}): Observable<T[]> {
    return allReduceMany((bucket, bucketOp, inPlace, layout) => this.requests.allReduce(bucket, bucketOp, { inPlace }, layout), this.scratch, tensors, op, options);
  }

  /**
   * Element-wise reduction of every rank's tensor, delivered to `root` only (the others get null).
   * @example
   * const total = await session.reduce(Float32Array.of(loss), 'sum', 0); // Float32Array on rank 0, null elsewhere
   */
  reduce<T extends Tensor>(data: T, op: ReduceOp, root: number): Promise<T | null> {
    return lastValueFrom(this.reduce$(data, op, root));
  }

  /**
   * `reduce` as a cold Observable.
   * @example
   * session.reduce$(Int32Array.of(hits), 'sum', 0).subscribe((total) => total && console.log(total[0]));
   */
  reduce$<T extends Tensor>(data: T, op: ReduceOp, root: number): Observable<T | null> {
    return this.requests.reduce(data, op, root);
  }

  /**
   * `root`'s tensor on every rank; the other ranks pass a tensor of the same type and length. The
   * result is a fresh tensor, or `data` itself with `{ inPlace: true }` (as torch's `broadcast`).
   * @example
   * const weights = await session.broadcast(session.rank === 0 ? initial : new Float32Array(initial.length), 0);
   * await session.broadcast(parameters, 0, { inPlace: true }); // every rank's parameters now hold rank 0's
   */
  broadcast<T extends Tensor>(data: T, root: number, options: BroadcastOptions<T> = {}): Promise<T> {
    return lastValueFrom(this.broadcast$(data, root, options));
  }

  /**
   * `broadcast` as a cold Observable.
   * @example
   * const weights = await lastValueFrom(session.broadcast$(buffer, 0));
   */
  broadcast$<T extends Tensor>(data: T, root: number, options: BroadcastOptions<T> = {}): Observable<T> {
    return this.requests.broadcast(data, root, options);
  }

  /**
   * Every rank's tensor, concatenated in rank order, on every rank (every rank passes the same
   * length); a fresh tensor, or `options.output`.
   * @example
   * const all = await session.allGather(Int32Array.of(session.rank)); // [0, 1, ..., W-1]
   * await session.allGather(shard, { output: whole }); // whole.length === W * shard.length
   */
  allGather<T extends Tensor>(data: T, options: OutputOptions<T> = {}): Promise<T> {
    return lastValueFrom(this.allGather$(data, options));
  }

  /**
   * `allGather` as a cold Observable.
   * @example
   * const all = await lastValueFrom(session.allGather$(Float64Array.of(metric)));
   */
  allGather$<T extends Tensor>(data: T, options: OutputOptions<T> = {}): Observable<T> {
    return this.requests.allGather(data, options);
  }

  /**
   * Every rank's tensor, concatenated in rank order, on `root` only (the others get null).
   * @example
   * const losses = await session.gather(Float32Array.of(loss), 0);
   */
  gather<T extends Tensor>(data: T, root: number): Promise<T | null> {
    return lastValueFrom(this.gather$(data, root));
  }

  /**
   * `gather` as a cold Observable.
   * @example
   * const losses = await lastValueFrom(session.gather$(Float32Array.of(loss), 0));
   */
  gather$<T extends Tensor>(data: T, root: number): Observable<T | null> {
    return this.requests.gather(data, root);
  }

  /**
   * Element-wise reduction of every rank's tensor, of which rank r keeps the r-th of W equal shards
   * (the length must divide by the world size); a fresh tensor, or `options.output`.
   * @example
   * const shard = await session.reduceScatter(gradients, 'sum'); // gradients.length / W elements
   */
  reduceScatter<T extends Tensor>(data: T, op: ReduceOp = 'sum', options: OutputOptions<T> = {}): Promise<T> {
    return lastValueFrom(this.reduceScatter$(data, op, options));
  }

  /**
   * `reduceScatter` as a cold Observable.
   * @example
   * const shard = await lastValueFrom(session.reduceScatter$(gradients));
   */
  reduceScatter$<T extends Tensor>(data: T, op: ReduceOp = 'sum', options: OutputOptions<T> = {}): Observable<T> {
    return this.requests.reduceScatter(data, op, options);
  }

  /**
   * Rank r sends the s-th of W equal shards of its tensor to rank s and receives, in rank order,
   * the r-th shard of every rank's tensor: a fresh tensor, or `options.output` (of the input's
   * length, not overlapping it).
   * @example
   * const received = await session.allToAll(Int32Array.from({ length: session.worldSize }, (_, s) => 10 * session.rank + s));
   */
  allToAll<T extends Tensor>(data: T, options: OutputOptions<T> = {}): Promise<T> {
    return lastValueFrom(this.allToAll$(data, options));
  }

  /**
   * `allToAll` as a cold Observable.
   * @example
   * const received = await lastValueFrom(session.allToAll$(outgoing));
   */
  allToAll$<T extends Tensor>(data: T, options: OutputOptions<T> = {}): Observable<T> {
    return this.requests.allToAll(data, options);
  }

  /**
   * Root passes `countPerRank * worldSize` elements; other ranks pass null (or a same-shaped array).
   * @example
   * const mine = await session.scatter(session.rank === 0 ? Int32Array.from({ length: 2 * session.worldSize }, (_, i) => i) : null, 0, 2);
   */
  scatter<T extends Tensor>(data: T | null, root: number, countPerRank: number): Promise<T> {
    return lastValueFrom(this.scatter$(data, root, countPerRank));
  }

  /**
   * `scatter` as a cold Observable.
   * @example
   * const mine = await lastValueFrom(session.scatter$(session.rank === 0 ? batches : null, 0, batchSize));
   */
  scatter$<T extends Tensor>(data: T | null, root: number, countPerRank: number): Observable<T> {
    return this.requests.scatter(data, root, countPerRank);
  }

  /**
   * Sends `sendCounts[d]` consecutive elements to rank d; returns what each rank sent here.
   * @example
   * // rank r sends r + 1 elements to every rank; counts says how many came from each
   * const { data, counts } = await session.allToAllV(new Int32Array(session.worldSize * (session.rank + 1)).fill(session.rank), Array(session.worldSize).fill(session.rank + 1));
   */
  allToAllV<T extends Tensor>(data: T, sendCounts: readonly number[]): Promise<{ data: T; counts: number[] }> {
    return lastValueFrom(this.allToAllV$(data, sendCounts));
  }

  /**
   * `allToAllV` as a cold Observable.
   * @example
   * const { data, counts } = await lastValueFrom(session.allToAllV$(outgoing, sendCounts));
   */
  allToAllV$<T extends Tensor>(data: T, sendCounts: readonly number[]): Observable<{ data: T; counts: number[] }> {
    return this.requests.allToAllV(data, sendCounts);
  }

  /**
   * A raw collective through the coordinator (the reference design's `exchange`): every rank calls
   * it with the same options; the coordinator checks them like a built-in collective's (layout hash
   * included), routes `payload` as the opcode says, and each rank gets its response frame.
   * @example
   * const frame = await session.exchange({ opcode: Opcode.AllGather, elementType: 'u8', count: 4 }, Uint8Array.of(1, 2, 3, 4));
   */
  async exchange(options: ExchangeOptions, payload: Uint8Array = new Uint8Array(0)): Promise<Frame> {
    const request = exchangeRequest(options, this.worldSize);
    if (!(payload instanceof Uint8Array)) throw new ConfigurationError(`exchange payload must be a Uint8Array, got ${typeof payload}`);
    const { coordinate } = this.context;
    return lastValueFrom(this.runner.queued(() => coordinate(request, payload.length > 0 ? [payload] : [])));
  }

  /**
   * Reconfigures, on every rank (a collective), the collective timeout of every later sequence,
   * and how long every later point-to-point send or receive waits (until then the session timeout).
   * @example
   * await session.setTimeout(600_000); // a long checkpoint step: give every rank ten minutes
   */
  async setTimeout(ms: number): Promise<void> {
    validateTimeout(ms, 'collective timeout');
    const milliseconds = BigInt(Math.max(1, Math.round(ms)));
    const { coordinate } = this.context;
    await lastValueFrom(this.runner.queued(() => coordinate({ opcode: Opcode.SetTimeout, tag: milliseconds }, [])));
    this.timeout.ms = Number(milliseconds);
    if (this.messageTimeout !== null) this.messageTimeout.ms = Number(milliseconds);
  }

  /**
   * Sends `data` to `destination` (itself too) under `tag`; resolves once the transport took it
   * (the bytes must stay untouched until then). Messages with one tag arrive in order.
   *
   * @example
   * await session.send(1, 7, Float32Array.of(1, 2, 3));
   */
  send(destination: number, tag: number | bigint, data: Tensor, options: RailOption | null = {}): Promise<void> {
    return this.messaging.send(destination, tag, data, options);
  }

  /**
   * Receives the next matching message; `source` null means any rank. The result's type follows
   * the dtype asked for (f16/bf16 come as `{ dtype, data: Uint16Array }`).
   *
   * @example
   * const weights = await session.receive(0, 7, { dtype: 'f32', count: 1024 }); // Float32Array
   */
  receive<D extends DType>(source: number | null, tag: number | bigint, like: ReceiveShape<D>, options: RailOption | null = {}): Promise<TensorOf<D>> {
    return this.messaging.receive(source, tag, like, options);
  }

  /**
   * Pull-based receive: each pull posts one receive, and leaving the loop posts no more.
   *
   * @example
   * for await (const gradient of session.messages(null, 3, { dtype: 'f32', count: 256 })) apply(gradient);
   */
  messages<D extends DType>(source: number | null, tag: number | bigint, like: ReceiveShape<D>): AsyncIterableX<TensorOf<D>> {
    return this.messaging.messages(source, tag, like);
  }

  /**
   * Push-based receive: a cold Observable that, per subscription, receives every matching message
   * one after another and emits it, until unsubscribed (`source` null: any rank). One receive is
   * posted at a time; what comes faster waits in the transport's matching, bounded by the
   * unmatched-bytes limit (`unmatchedBytesLimit`). Unsubscribing withdraws the receive posted, and
   * a message that comes later stays for a later receive (tcp_peer; with tcp_host_staged the
   * coordinator cannot take back a receive it holds, and the message it then matches is dropped).
   * A failure (an abort, a timeout) is an error notification. The `send` operator is its other end.
   *
   * @example
   * session.receive$(0, 5, { dtype: 'f32', count: 1024 }).pipe(map(normalize), send(session, 2, 5)).subscribe();
   */
  receive$<D extends DType>(source: number | null, tag: number | bigint, like: ReceiveShape<D>, options: RailOption | null = {}): Observable<TensorOf<D>> {
    return this.messaging.receive$(source, tag, like, options);
  }

  /**
   * Sends any structured-cloneable value (`v8.serialize`: what `structuredClone` and `postMessage`
   * take) to `destination` under `tag`, as one u8 message; `receiveObject` is its receive. A value
   * v8 refuses (a function, a symbol) is refused with `NOT_SERIALIZABLE`, one over a frame
   * (`MAX_FRAME_PAYLOAD_BYTES`) with `OBJECT_TOO_LARGE`, before anything is sent.
   *
   * @example
   * await session.sendObject(1, 9, { step: 3, losses: [0.5, 0.25], at: new Date() });
   */
  sendObject(destination: number, tag: number | bigint, value: unknown, options: RailOption | null = {}): Promise<void> {
    return this.messaging.sendObject(destination, tag, value, options);
  }

  /**
   * Receives the next matching `sendObject` message (of any size) and returns its value, a
   * structured clone of what was sent; `source` null means any rank.
   *
   * @example
   * const { step, losses } = await session.receiveObject<{ step: number; losses: number[] }>(0, 9);
   */
  receiveObject<T = unknown>(source: number | null, tag: number | bigint, options: RailOption | null = {}): Promise<T> {
    return this.messaging.receiveObject(source, tag, options) as Promise<T>;
  }

  /**
   * Waits until a matching message waits here for its receive and reports it (`source`, `dtype`,
   * `count`, `bytes`) without taking it (MPI's `MPI_Probe`): a receive posted next gets it. `source`
   * null means any rank. tcp_peer only (the coordinator holds a staged job's waiting messages).
   *
   * @example
   * const { source, count } = await session.probe(null, 4);
   * const data = await session.receive(source, 4, { dtype: 'f32', count });
   */
  probe(source: number | null, tag: number | bigint, options: RailOption | null = {}): Promise<ProbedMessage> {
    return this.messaging.probe(source, tag, options);
  }

  /**
   * `probe` without waiting (MPI's `MPI_Iprobe`): the matching message waiting here now, left
   * waiting, or undefined if none is.
   *
   * @example
   * const pending = session.iprobe(null, 4); // undefined: nothing from anyone yet
   */
  iprobe(source: number | null, tag: number | bigint, options: RailOption | null = {}): ProbedMessage | undefined {
    return this.messaging.iprobe(source, tag, options);
  }

  /**
   * `root`'s value, any structured-cloneable one, on every rank (mpi4py's `bcast`, torch's
   * `broadcast_object_list`); the others pass anything (it is not read). One collective: an
   * all-to-all-v of the serialized value, so no rank needs its size beforehand. A value v8 refuses,
   * or one over `MAX_FRAME_PAYLOAD_BYTES / worldSize` (less 8 bytes), fails every rank alike,
   * naming the root (`NOT_SERIALIZABLE`, `OBJECT_TOO_LARGE`), and the collective still completes.
   *
   * @example
   * const config = await session.broadcastObject(session.rank === 0 ? loadConfig() : undefined, 0);
   */
  broadcastObject<T>(value: T | null | undefined, root: number): Promise<T> {
    return lastValueFrom(this.broadcastObject$(value, root));
  }

  /** `broadcastObject` as an Observable that emits the value once (submitted at the call, as `broadcast$`). */
  broadcastObject$<T>(value: T | null | undefined, root: number): Observable<T> {
    return this.objects.broadcast(value as T, root);
  }

  /**
   * Every rank's value, in rank order, on every rank (mpi4py's `allgather`, torch's
   * `all_gather_object`); values of any size and shape. Refusals as `broadcastObject`'s: every
   * rank fails naming the lowest rank whose value could not go.
   *
   * @example
   * const stats = await session.allGatherObject({ rank: session.rank, samples: seen.size });
   */
  allGatherObject<T>(value: T): Promise<T[]> {
    return lastValueFrom(this.allGatherObject$(value));
  }

  /** `allGatherObject` as an Observable that emits the values once (submitted at the call). */
  allGatherObject$<T>(value: T): Observable<T[]> {
    return this.objects.allGather(value);
  }

  /**
   * Every rank's value, in rank order, on `root`; null on the others (mpi4py's `gather`, torch's
   * `gather_object`). A value that cannot go fails the root and its own rank, naming it.
   *
   * @example
   * const reports = await session.gatherObject({ rank: session.rank, errors }, 0); // array on rank 0, null elsewhere
   */
  gatherObject<T>(value: T, root: number): Promise<T[] | null> {
    return lastValueFrom(this.gatherObject$(value, root));
  }

  /** `gatherObject` as an Observable that emits once (submitted at the call). */
  gatherObject$<T>(value: T, root: number): Observable<T[] | null> {
    return this.objects.gather(value, root);
  }

  /**
   * Splits this communicator (a collective: every rank calls it, in order with its other
   * collectives): ranks that pass the same `color` form a new communicator, ordered by `key`, then
   * by their rank here; `color: null` joins none and gets null. The new communicator has this
   * session's whole API, its own sequence space, and runs its collectives beside this one's and
   * other communicators' without waiting for them, on the job's existing connections (as MPI's
   * `MPI_Comm_split`, NCCL's `ncclCommSplit`).
   * @example
   * const row = await session.split({ color: Math.floor(session.rank / 4), key: session.rank });
   * await row!.allReduce(gradients, 'sum', { inPlace: true }); // summed over the 4 ranks of this row
   */
  async split(options: SplitOptions): Promise<Communicator | null> {
    const entry = splitEntry(options);
    const index = this.splits++;
    const bytes = new Uint8Array(BigInt64Array.of(BigInt(entry.color), BigInt(entry.key)).buffer);
    const request = { opcode: Opcode.AllGather, elementType: ElementType.I64, elementCount: 2, tag: layoutHash(SPLIT_LAYOUT) };
    const { coordinate } = this.context;
    const response = await lastValueFrom(this.runner.queued(() => coordinate(request, [bytes])));
    const said = new BigInt64Array(new Uint8Array(response.payload).buffer);
    const entries = Array.from({ length: this.worldSize }, (_, rank) => ({ color: Number(said[2 * rank]), key: Number(said[2 * rank + 1]) }));
    const members = splitMembers(entries, this.rank);
    if (members === null) return null;
    return this.openCommunicator(childCommunicatorId(this.membership.id, `split ${index} color ${entries[this.rank]!.color}`), members);
  }

  /**
   * A communicator of the ranks listed, in the order listed (only they call it, each with the same
   * list; as torch's `new_group`, without the other ranks' calls). Its first acts: the listed ranks
   * tell each other which ranks they listed (a rank that listed other ranks is named at once, with
   * both lists), and agree on the order (a rank that lists them otherwise is named); one that never
   * calls is named as missing when the timeout ends it.
   * @example
   * if (session.rank < 2) {
   *   const pair = await session.group([0, 1]);
   *   await pair.broadcast(weights, 0, { inPlace: true });
   * }
   */
  async group(ranks: readonly number[]): Promise<Communicator> {
    const members = groupMembers(ranks, this.rank, this.worldSize);
    const sorted = [...members].sort((a, b) => a - b);
    const occurrence = this.groups.get(sorted.join(',')) ?? 0;
    this.groups.set(sorted.join(','), occurrence + 1);
    const how = `group ${sorted.join(',')} ${occurrence}`;
    // The ranks meet first in rank order, whatever order each listed them in, and agree on the order
    // itself (it is the layout): ranks that listed the same ranks otherwise fail, named.
    const announced = announceGroup({
      links: this.links,
      members,
      counts: this.groupAnnouncements,
      // Past the meeting leader's round timeout, which names a listed rank that never calls.
      waitMs: this.timeout.ms + 2 * COLLECTIVE_RESPONSE_GRACE_MS,
      abort: (reason) => void this.abortLinks(reason),
    });
    const meeting = this.adopt(childCommunicator(this.asParent, childCommunicatorId(this.membership.id, `${how} agreement`), sorted));
    try {
      // Ranks that listed other ranks are on other meetings: their announcements end this at once.
      await Promise.all([announced, meeting.exchange({ opcode: Opcode.Barrier, elementType: ElementType.None, count: 0, layoutHash: layoutHash(`group ${members.join(',')}`) })]);
    } finally {
      await meeting.close();
    }
    return this.openCommunicator(childCommunicatorId(this.membership.id, how), members);
  }

  /**
   * Measures latency and bandwidth between every pair of ranks on every rail (tcp_peer only; a
   * collective: every rank calls it). Every rank ends with the identical topology. Options default
   * to the `GX1_TOPOLOGY_PROBE_*` variables.
   * @example
   * const topology = await session.probeTopology({ latencyIterations: 20 });
   */
  async probeTopology(options?: Partial<TopologyProbeOptions>): Promise<CollectiveTopology> {
    const resolved = resolveProbeOptions(options ?? probeVariables(this.membership.settings));
    if (this.transport !== 'tcp_peer') {
      throw new ConfigurationError('topology probe requires GX1_COLLECTIVE_TRANSPORT=tcp_peer (direct peer links to measure)');
    }
    this.failure.check();
    const probe: ProbeContext = {
      links: this.links,
      allGather: async (bytes) => splitEqually(await this.allGather(bytes), this.worldSize),
      barrier: () => this.barrier(),
      now: () => process.hrtime.bigint(),
    };
    return lastValueFrom(defer(() => probeTopology(probe, resolved)).pipe(this.failure.untilEnded(), this.loop.during()));
  }

  /**
   * Round trip of an empty control frame through the coordinator, in milliseconds.
   *
   * @example
   * const ms = await session.heartbeat(5_000);
   */
  async heartbeat(timeoutMs: number): Promise<number> {
    validateTimeout(timeoutMs, 'heartbeat timeout');
    const started = performance.now();
    await lastValueFrom(this.links.heartbeat(timeoutMs).pipe(this.loop.during()), { defaultValue: undefined });
    const roundTripMs = performance.now() - started;
    if (this.events.observed) this.events.next({ type: 'heartbeat', roundTripMs });
    return roundTripMs;
  }

  /**
   * Abandons the session on every rank: the abort goes over the point-to-point channels (not the
   * ordered collective channel), so it interrupts ranks blocked in a collective as well as
   * pending point-to-point work.
   * @example
   * await session.abort('rank 2 ran out of memory'); // every rank fails with this reason
   */
  async abort(message: string): Promise<void> {
    const text = String(message);
    if (text.length === 0) throw new ConfigurationError('abort message must not be empty');
    if (this.abortLinks(text) === 0) throw new ChannelClosedError(`rank ${this.rank} could not send its abort: every rail is closed`);
  }

  /**
   * Leaves the session: LEAVE on every channel, then the connections are closed (rank 0 hosting
   * the coordinator also waits for the other ranks to leave). A process that forgets it still
   * exits: an idle session does not keep the event loop alive, and leaves on `beforeExit`.
   *
   * @example
   * await using session = await openSession(); // closed when the scope ends
   */
  async close(): Promise<void> {
    await this.end();
    await Promise.all(this.holds.map((work) => work.then(() => undefined, () => undefined)));
  }

  /** `close()` but for waiting on what the session holds (a grown job's session takes those over). */
  private async end(): Promise<void> {
    if (!this.closed) {
      this.closed = true;
      // The world's close ends every communicator of the job on this rank (a communicator's, only itself).
      // (Awaited only where there are some: a close without communicators ends its work at once, as before.)
      const { communicators } = this.membership;
      if (this.membership.id === WORLD_COMMUNICATOR && communicators.size > 0) await Promise.all([...communicators].map((communicator) => communicator.close()));
      this.stopLeavingOnExit();
      const closed = new ChannelClosedError(this.closedText);
      this.failure.close(closed);
      if (this.membership.id === WORLD_COMMUNICATOR) this.membership.jobFailure.close(closed);
      this.lossWatch?.unsubscribe();
      this.membership.communicators.delete(this);
      this.runner.close();
      this.logSingleCopy();
      this.logSharedMemory();
      this.nativePlane?.close();
      // The mappings kept ready for fresh results go back too (results still held return to the pool when freed).
      if (this.membership.id === WORLD_COMMUNICATOR) releaseResults();
      this.links.close();
      this.coordinator.close();
      this.deadlines.stop();
      this.events.complete();
    }
  }

  /** `await using session = await openSession()` closes the session when the scope ends. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  private fingerprintInput(): FingerprintInput {
    const { topology, ringOrder, railOrder } = this.context;
    // The native plane's default groups follow from the hosts, as the job does, not from tuning: a
    // profile tuned with or without them fits alike.
    const groups = this.context.groupsAreHosts === true && this.tuning.groups === null ? null : this.context.topologyGroups;
    const { directBandwidthMbps, directLatencyNs } = this.tuning;
    return { topology: topology ?? CollectiveTopology.uniform(this.worldSize), ringOrder, groups, directBandwidthMbps, directLatencyNs, rails: this.rails, railOrder };
  }

  /** GX1_COLLECTIVE_AUTOTUNE_PROFILE: checks the profile is this job's; `auto` then takes its choices. */
  private useAutotuneProfile(raw: unknown): void {
    const profile = validateAutotuneProfile(raw, {
      worldSize: this.worldSize,
      transport: this.transport,
      plane: this.plane,
      ringChannels: this.tuning.ringChannels,
      fingerprint: this.fingerprintInput(),
    });
    this.see({ profile });
  }

  /** GX1_TOPOLOGY_LINKS=probe: measures the links and takes them (`adoptTopology`). */
  private async useProbedTopology(): Promise<void> {
    const { railLinks, aggregateLinks } = this.tuning;
    const probed = await this.probeTopology();
    // Declared rail and aggregate links (GX1_TOPOLOGY_RAIL_LINKS, ..._AGGREGATE_LINKS) win over what was measured.
    this.adoptTopology(railLinks.length + aggregateLinks.length > 0 ? probed.withRailLinks(probed.rails, railLinks, aggregateLinks) : probed);
  }

  /** Makes `topology` the session's: the planner weighs it, its best ring and rails are the session's (unless configured). */
  private adoptTopology(topology: CollectiveTopology): void {
    this.see({ topology, railOrder: railOrderOf(this.tuning, topology), ...(this.tuning.ringOrder === null ? { ringOrder: bestRingOrder(topology) } : {}) });
  }

  /**
   * GX1_TOPOLOGY_GROUPS=auto, where the links were not declared: the hosts the ranks advertise
   * where they make groups (tcp_peer; at least two, not one rank each), else the fast domains of
   * the probed links (`autoGroups`). Hosts first: a probe on busy machines is noisy, the machine a
   * rank runs on is not.
   */
  private useAutoGroups(byHost: number[][] | null): void {
    if (!this.useHostGroups(byHost)) this.useGroups(autoGroups(this.context.topology, this.tuning.groupPayloadBytes, this.tuning), false);
  }

  /** The hosts the ranks advertise as the groups, where they make a hierarchy (at least two, not one rank each): whether they do. */
  private useHostGroups(byHost: number[][] | null): boolean {
    if (byHost === null || byHost.length < 2 || byHost.length >= this.worldSize) return false;
    this.useGroups(byHost, true);
    return true;
  }

  private useGroups(groups: TopologyGroups, areHosts: boolean): void {
    this.see({ topologyGroups: groups, groupsAreHosts: areHosts });
  }

  /**
   * Replaces the context with one that sees `change` besides what it saw (calls already made keep
   * theirs). Schedules written for the old one are stale: the new context has a cache of its own,
   * and the native plane forgets the programs it compiled.
   */
  private see(change: Partial<ContextView>): void {
    this.context = sessionContext(this.contextParts, { ...this.context, ...change });
    this.nativePlane?.forget();
  }




  /**
   * After a rank of this communicator was lost (a fault-tolerant job: `faultTolerant`,
   * GX1_FAULT_TOLERANT=1, `rxccl launch --keep-going`): every rank left calls it, and gets a new
   * communicator of the ranks left, in their order here, over the job's links (as ULFM's
   * `MPI_Comm_shrink`, NCCL's `ncclCommShrink`), on a native data plane of its own where the world
   * runs one (as `split`'s). The ranks agree on who is left from the
   * coordinator's notices, so a rank that is only slow stays in. A rank lost during the shrink may
   * still be in the communicator returned (the same on every survivor): its first call then fails
   * with `RankLostError`, and shrinking it goes on. A job whose coordinator is gone (or that was
   * aborted) cannot go on: shrink then fails with that, saying so.
   * @example
   * try {
   *   sum = await world.allReduce(gradients); // not in place: a failed call may have written part of it
   * } catch (error) {
   *   if (!(error instanceof RankLostError)) throw error;
   *   world = await world.shrink(); // then the same call again, on the ranks left
   * }
   */
  async shrink(): Promise<Communicator> {
    return shrinkCommunicator({ ...this.asParent, name: this.name, closed: this.closed, nextIndex: () => this.shrinks++ }, (child) => this.adopt(child));
  }

  /**
   * Processes waiting to join this fault-tolerant job, as this rank last heard from the
   * coordinator (docs/protocol.md 13.9); 0 in a job that cannot grow. `grow()` admits them.
   */
  get joinersWaiting(): number {
    return this.membership.growth?.job.waiting ?? 0;
  }

  /**
   * The ranks of this communicator that joined its job while it ran (`grow()`): they start
   * without the others' state, which a rank that carried the job on sends them (for example
   * `broadcastObject(state, 0)`; rank 0 always carried it on). Empty in a job that did not grow.
   */
  get newcomers(): readonly number[] {
    const from = this.membership.growth?.lineage.newcomersFrom ?? Infinity;
    return this.membership.jobRanks.flatMap((jobRank, rank) => (jobRank >= from ? [rank] : []));
  }

  /**
   * Admits the processes waiting to join this fault-tolerant job (started with `GX1_JOIN=1`, or
   * `openSession({ join: true })`; `rxccl launch --replace` starts them for ranks that died) and
   * returns the world of the job it grows into: this communicator's ranks first, in their order,
   * then the newcomers (`newcomers` there). Every rank of the communicator calls it at the same
   * point, a step boundary; how many are admitted is rank 0's count (`joinersWaiting`), sent to
   * the others, so they agree. Where none waits it returns this communicator. The grown job runs
   * on links of its own (the native data plane where the job has one, even after a shrink), and
   * this job's sessions on this rank are closed. The communicator must hold every rank the job
   * still has: the world or a shrink of it. Horovod elastic's reset is the model (docs/protocol.md 13.9).
   *
   * @example
   * world = await world.grow(); // at a step boundary: joiners get the state from rank 0
   * if (world.newcomers.length > 0) state = await world.broadcastObject(world.rank === 0 ? state : null, 0);
   */
  async grow(): Promise<Communicator> {
    const { growth, losses, jobRanks, jobLinks } = this.membership;
    if (growth === null || losses === null) {
      throw new ConfigurationError('grow() needs a fault-tolerant job opened with openSession() (faultTolerant: true, GX1_FAULT_TOLERANT=1, or rxccl launch --keep-going)');
    }
    if (this.closed) throw new ChannelClosedError(`rank ${this.rank} of ${this.name} closed: nothing to grow`);
    const outside = Array.from({ length: jobLinks.worldSize }, (_, jobRank) => jobRank).filter((jobRank) => !jobRanks.includes(jobRank) && !losses.noticed.includes(jobRank));
    if (outside.length > 0) {
      throw new ConfigurationError(`rank ${this.rank} cannot grow ${this.name}: job ranks [${outside.join(',')}] run outside it; grow the world, or the communicator a shrink of it returned`);
    }
    const [admitted] = await this.broadcast(Uint32Array.of(growth.job.waiting), 0);
    if (admitted === 0) return this;
    if (this.rank === 0) growth.job.request(admitted!, jobRanks);
    const job = await lastValueFrom(
      growth.job.admission$.pipe(
        timeout({
          first: Math.min(this.timeout.ms, MAX_TIMER_DELAY_MS),
          scheduler: this.scheduler,
          with: () => throwError(() => new TimeoutError(`rank ${this.rank} growing ${this.name}: the coordinator admitted nobody within ${this.timeout.ms} ms`)),
        }),
        // Asked: a member lost now is left out by the coordinator; only the job's own end stops the wait.
        this.membership.jobFailure.untilEnded(),
      ),
    );
    const world = growth.world!;
    const holds = world.holds;
    await world.end();
    return growth.lineage.openGrown(job, { closeAfter: holds });
  }

  /** What calls after `close()` are refused with. */
  private get closedText(): string {
    return this.membership.id === WORLD_COMMUNICATOR ? `rank ${this.rank} session closed` : `rank ${this.rank} of ${this.name} closed`;
  }

  /** `communicator 0x...`, or `the job's world`: how errors name this communicator. */
  private get name(): string {
    return this.membership.id === WORLD_COMMUNICATOR ? "the job's world" : `communicator ${communicatorText(this.membership.id)}`;
  }

  /** The communicator of `members` (ranks of this one, in their new order) with id `id`, with a native plane of its own where the world runs one (`openChildCommunicator`). */
  private async openCommunicator(id: bigint, members: readonly number[]): Promise<Communicator> {
    return this.adopt(await openChildCommunicator(this.asParent, id, members));
  }

  /** What a communicator of some of this one's ranks is made from (`childCommunicator`): its place in the job, its tuning and its context's ring and groups now. */
  private get asParent(): CommunicatorParent {
    const { rank, membership, tuning, scratch, scheduler } = this;
    const { ringOrder, topologyGroups } = this.context;
    return { rank, membership, tuning, ringOrder, topologyGroups, timeoutMs: this.timeout.ms, scratch, scheduler };
  }

  /**
   * The session of `child`, a communicator of some of this one's ranks: on this rank's event loop,
   * scratch and clock, its messages on the job's links timed by its own timeout (`GroupLinks`);
   * the world's close closes it.
   */
  private adopt(child: ChildCommunicator): Communicator {
    const session = new RankSession({
      ...child,
      transport: this.transport,
      slowCollectiveMs: this.slowCollectiveMs,
      messageTimeout: null,
      holds: [],
      loop: this.loop,
      scheduler: this.scheduler,
      scratch: this.scratch,
      ranksShareHost: this.ranksShareHost,
      membership: { ...this.membership, id: child.id, jobRanks: child.links.members },
    });
    this.membership.communicators.add(session);
    logSessionEvents(session.events$, this.rank, debugLog);
    return session;
  }

  /** `GX1_DEBUG=info`: which peers of this host the native plane read in place, and which read it. */
  private logSingleCopy(): void {
    if (!debugLog.enabled('info')) return;
    const peers = this.nativePlane?.singleCopyPeers?.();
    if (peers === undefined || peers === null) return;
    debugLog.info(`rank ${this.rank} single copy: read from ranks [${peers.readsFrom.join(',')}], read by ranks [${peers.readBy.join(',')}]`);
  }

  /**
   * Which peers of this host share rings with this rank (`GX1_DEBUG=info`), and each peer whose link
   * kept TCP though shared memory was on: a rank that could not create or map a ring warns why.
   */
  private logSharedMemory(): void {
    const peers = this.nativePlane?.sharedMemoryPeers?.();
    if (peers === undefined || peers === null) return;
    if (debugLog.enabled('info')) debugLog.info(`rank ${this.rank} shared memory: reads rings of ranks [${peers.readsFrom.join(',')}], read by ranks [${peers.writesTo.join(',')}]`);
    for (const { peer, reason } of peers.refused) {
      const line = `rank ${this.rank} keeps TCP with rank ${peer}: ${reason}`;
      if (reason.startsWith('cannot')) debugLog.warn(line);
      else if (debugLog.enabled('info')) debugLog.info(line);
    }
  }

  /** Tells every rank to end the job, and stops this rank's own native collective now (not when the abort comes back). */
  private abortLinks(reason: string): number {
    this.nativePlane?.end();
    return this.links.abort(reason);
  }
}

/**
 * A communicator: a session of some of the job's ranks (`split`, `group`), with the session's
 * whole API. The session `openSession` returns is the world's communicator.
 */
export type Communicator = RankSession;

/** What the join line says of the data plane: tcp_peer has one, native or JS. */
/** The plane's part of the joined line; the native plane's with the spin it waits with (./plane-spin.ts, as ./open-links.ts gave it). */
function dataPlaneText(transport: CollectiveTransport, nativePlane: NativePlane | null, spin: number | 'auto'): string {
  if (transport !== 'tcp_peer') return '';
  return nativePlane === null ? 'JS data plane, ' : `native data plane spinning ${spin === 'auto' ? 'adaptively' : `${spin} us`}, `;
}

function splitEqually(bytes: Uint8Array, parts: number): Uint8Array[] {
  const size = bytes.length / parts;
  return Array.from({ length: parts }, (_, index) => bytes.subarray(index * size, (index + 1) * size));
}
