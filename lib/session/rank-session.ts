import { from as asyncIterableFrom, type AsyncIterableX } from 'ix/asynciterable';
import { defer, lastValueFrom, map, mergeMap, Observable, type SchedulerLike, Subject, tap, throwError } from 'rxjs';
import type { CollectiveContext, CollectiveName, Collectives } from '../collectives/algorithm.js';
import { PIECE_BYTES } from '../collectives/peer-data.js';
import { runRow } from '../collectives/run-scheduled.js';
import type { NativePlane } from '../collectives/schedule/native-plane.js';
import { agreeBeforeCoordinator } from '../collectives/schedule/plane-executor.js';
import { ScheduleCache } from '../collectives/schedule/schedule-cache.js';
import { type AlgorithmRow, type Plane, selectAlgorithm, sessionPlane } from '../collectives/select.js';
import { debugLog } from '../diagnostics/debug-log.js';
import { validateReduction } from '../kernels/index.js';
import { ChannelClosedError, ConfigurationError } from '../errors.js';
import { ANY_RANK } from '../protocol/constants.js';
import { type DType, elementTypeOfDType } from '../protocol/element-type.js';
import type { Frame } from '../protocol/frame.js';
import { Opcode } from '../protocol/opcode.js';
import type { ReduceOp } from '../protocol/reduce-op.js';
import { type Tensor, tensorFromBytes, type TensorOf, type TensorView, viewTensor } from '../tensor.js';
import { bestRingOrder } from '../topology/best-ring-order.js';
import { CollectiveTopology } from '../topology/collective-topology.js';
import { probeTopology, type ProbeContext } from '../topology/probe.js';
import { probeOptionsFromEnvironment, resolveProbeOptions, type TopologyProbeOptions } from '../topology/probe-options.js';
import { BufferPool } from '../transport/buffer-pool.js';
import { CollectiveChannel } from '../transport/collective-channel.js';
import { LazyDeadlines } from '../transport/lazy-deadlines.js';
import type { SessionLinks } from '../transport/links/links.js';
import { SessionFailure } from '../transport/session-failure.js';
import type { CollectiveTransport } from '../transport/transport-kind.js';
import { validateTimeout } from '../transport/transport-kind.js';
import { checkCount, checkDivisible, checkRail, checkRank, checkReduceOp, checkShape, checkTag } from './arguments.js';
import { exchangeRequest, type ExchangeOptions } from './exchange-options.js';
import { CollectiveQueue } from './collective-queue.js';
import { busyPollMicros } from './busy-poll.js';
import { EventLoopHold } from './event-loop-hold.js';
import { leaveBeforeExit } from './leave-before-exit.js';
import type { SessionEvent } from './events.js';
import { logSessionEvents } from './log-session-events.js';
import { openLinks } from './open-links.js';
import type { ResolvedSessionOptions } from './session-options.js';
import type { CollectiveTuning } from '../collectives/tuning.js';

/** The shape of a point-to-point receive: what the matching send must carry. */
export interface ReceiveShape<D extends DType = DType> {
  readonly dtype: D;
  readonly count: number;
}

export interface ReductionOptions<T extends Tensor = Tensor> {
  /** Write the result into the input tensor and return it (no new memory). */
  readonly inPlace?: boolean;
  /**
   * Write the result into `output` and return it (no new memory; the input stays as it is): a
   * tensor of the input's type and length that does not overlap it. Not with `inPlace`.
   */
  readonly output?: T;
}

export interface BroadcastOptions<T extends Tensor = Tensor> {
  /** Receive the root's tensor into this rank's `data` and return it (no new memory; the root's stays as it is). */
  readonly inPlace?: boolean;
  /**
   * Write the root's tensor into `output` and return it (no new memory; `data` stays as it is): a
   * tensor of `data`'s type and length that does not overlap it. Not with `inPlace`.
   */
  readonly output?: T;
}

export interface OutputOptions<T extends Tensor> {
  /**
   * Write the result into `output` and return it (no new memory): a tensor of the input's type
   * with the result's length (W times the input's for allGather, a W-th of it for reduceScatter).
   * It must not overlap the input, except as NCCL's in-place forms: allGather's input may be this
   * rank's slot of the output, reduceScatter's output this rank's slot of the input.
   */
  readonly output?: T;
}

export interface RailOption {
  /** The P2P rail to use; default `tag % rails`. */
  readonly rail?: number;
}

/** What a session holds beyond its connections: work its `close()` also waits for. */
export interface SessionHolds {
  /** Settled either way before `close()` resolves (rank 0 keeps the coordinator it hosts serving). */
  readonly closeAfter?: readonly Promise<unknown>[];
}

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
  readonly timeoutMs: number;
  readonly scheduler: SchedulerLike;
  /** Every rank on one host (default false): large all-reduces, all-gathers, reduce-scatters and broadcasts then go pairwise under `auto`. */
  readonly ranksShareHost?: boolean;
  /** The native data plane (tcp_peer), where the job runs one; default none (the JS plane). */
  readonly nativePlane?: NativePlane | null;
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
  private readonly queue = new CollectiveQueue();
  private readonly context: CollectiveContext;
  private readonly deadlines: LazyDeadlines;
  private closed = false;
  private meshSequence = 0n;
  /** Where this session's scheduled collectives run (see `Situation`). */
  private readonly plane: Plane;
  /** The (collective, algorithm, plane) choices already named on the debug log. */
  private readonly named = new Set<string>();
  /** Ordered operations submitted so far: the next one's `sequence` in events. */
  private submitted = 0;
  /**
   * A process whose only work left is this idle session (its sockets hold nothing) is about to
   * exit: the session leaves first, so the others see a LEAVE, not a dropped connection.
   */
  private readonly stopLeavingOnExit = leaveBeforeExit(() => void this.close());

  private constructor(
    readonly rank: number,
    readonly worldSize: number,
    readonly transport: CollectiveTransport,
    private readonly links: SessionLinks,
    private readonly coordinator: Pick<CollectiveChannel, 'exchange' | 'close'>,
    private readonly failure: SessionFailure,
    private readonly tuning: CollectiveTuning,
    private readonly timeout: { ms: number },
    private readonly holds: readonly Promise<unknown>[],
    private readonly loop: EventLoopHold,
    scheduler: SchedulerLike,
    /** Memory for buffers that live for one collective: also where the coordinator's responses that feed a kernel are assembled. */
    scratch: BufferPool,
    /** Every rank shares this rank's host (see `Situation`). */
    private readonly ranksShareHost: boolean,
    /** The native data plane, where the job runs one. */
    private readonly nativePlane: NativePlane | null,
  ) {
    this.failure$ = failure.failure$;
    this.events$ = this.events.asObservable();
    this.plane = sessionPlane(transport, nativePlane !== null);
    failure.failure$.subscribe({
      error: (error: unknown) => {
        // A native collective ends with the session, at once.
        nativePlane?.end();
        if (this.events.observed) this.events.next({ type: 'failed', error });
      },
    });
    this.deadlines = new LazyDeadlines(scheduler);
    const identity = Array.from({ length: worldSize }, (_, index) => index);
    this.context = {
      rank,
      worldSize,
      // In a native session the ranks meet on the data links first (`agreeBeforeCoordinator`).
      coordinate: (request, parts, useScratch) => {
        if (nativePlane === null || worldSize === 1) return coordinator.exchange(request, parts, useScratch);
        return agreeBeforeCoordinator(nativePlane, this.context, request).pipe(mergeMap(() => coordinator.exchange(request, parts, useScratch)));
      },
      scratch,
      ringOrder: tuning.ringOrder ?? (tuning.topology instanceof CollectiveTopology ? bestRingOrder(tuning.topology) : identity),
      ringChannels: tuning.ringChannels,
      pieceBytes: PIECE_BYTES,
      agreement: transport === 'tcp_peer' ? 'mesh' : 'coordinator',
      nextMeshSequence: () => this.meshSequence++,
      timeoutMs: () => timeout.ms,
      deadlines: this.deadlines,
      abort: (reason) => void this.abortLinks(reason),
      nativePlane,
      schedules: new ScheduleCache(),
    };
  }

  static async open(options: ResolvedSessionOptions, holds: SessionHolds = {}): Promise<RankSession> {
    const failure = new SessionFailure();
    const timeout = { ms: options.timeoutMs };
    const started = performance.now();
    const { collective, links, sockets, processesOnHost, nativePlane } = await openLinks(options, failure, () => timeout.ms);
    const busyPoll = busyPollMicros(options.busyPoll, processesOnHost);
    debugLog.info(
      `rank ${options.rank} of ${options.worldSize} joined through coordinator ${options.host}:${options.port} ` +
        `(${options.transport}, ${links.rails} rails, ${dataPlaneText(options.transport, nativePlane)}busy-poll ${busyPoll} us) in ${(performance.now() - started).toFixed(1)} ms`,
    );
    const owner = { uniqueId: options.uniqueId, rank: options.rank, worldSize: options.worldSize, failure, scheduler: options.scheduler };
    // One pool for the session's scratch and the staged responses it reduces, so that a reduction
    // gives the response's memory back to the pool it came from.
    const scratch = new BufferPool();
    const coordinator = new CollectiveChannel(collective, owner, () => timeout.ms, scratch);
    const session = new RankSession(
      options.rank,
      options.worldSize,
      options.transport,
      links,
      coordinator,
      failure,
      options.tuning,
      timeout,
      holds.closeAfter ?? [],
      new EventLoopHold(sockets, busyPoll / 1000),
      options.scheduler,
      scratch,
      options.transport === 'tcp_peer' && processesOnHost === options.worldSize,
      nativePlane,
    );
    logSessionEvents(session.events$, options.rank, debugLog);
    if (options.tuning.topology === 'probe') await session.useProbedRing();
    return session;
  }

  /** A session over `parts` (no sockets, no topology probe). */
  static over(parts: SessionParts): RankSession {
    const { rank, worldSize, transport, links, coordinator, failure, tuning, timeoutMs, scheduler } = parts;
    const shared = parts.ranksShareHost ?? false;
    const hold = new EventLoopHold([]);
    return new RankSession(rank, worldSize, transport, links, coordinator, failure, tuning, { ms: timeoutMs }, [], hold, scheduler, new BufferPool(), shared, parts.nativePlane ?? null);
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
   * The session's failure, if it has failed.
   * @example
   * if (session.error !== undefined) console.error('session failed:', session.error);
   */
  get error(): unknown {
    return this.failure.error;
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
    return this.submit('barrier', () => ({}), 0);
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
    return this.tensorCollective<'allReduce', T>('allReduce', data, (view, output) => ({ view, op: this.reducible(view, op), output }), resultMemory(data, options));
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
    return this.tensorCollective<'reduce', T | null>('reduce', data, (view) => ({ view, op: this.reducible(view, op), root: checkRank(root, this.worldSize, 'root') }));
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
    return this.tensorCollective<'broadcast', T>(
      'broadcast',
      data,
      (view, output) => ({ view, root: checkRank(root, this.worldSize, 'root'), output }),
      resultMemory(data, options),
    );
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
    return this.tensorCollective<'allGather', T>('allGather', data, (view, output) => ({ view, output }), resultMemory(data, { output: options?.output }), (count) => count * this.worldSize);
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
    return this.tensorCollective<'gather', T | null>('gather', data, (view) => ({ view, root: checkRank(root, this.worldSize, 'root') }));
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
    return this.tensorCollective<'reduceScatter', T>(
      'reduceScatter',
      data,
      (view, output) => {
        const request = { view, op: this.reducible(view, op), output };
        checkDivisible(view.count, this.worldSize, 'reduce-scatter');
        return request;
      },
      resultMemory(data, { output: options?.output }),
      (count) => {
        checkDivisible(count, this.worldSize, 'reduce-scatter');
        return count / this.worldSize;
      },
    );
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
    return this.tensorCollective<'allToAll', T>(
      'allToAll',
      data,
      (view, output) => {
        checkDivisible(view.count, this.worldSize, 'all-to-all');
        return { view, output };
      },
      resultMemory(data, { output: options?.output }),
    );
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
    let view: TensorView | null = null;
    return this.submit(
      'scatter',
      () => {
        checkRank(root, this.worldSize, 'root');
        checkCount(countPerRank, 'countPerRank');
        view = data === null ? null : viewTensor(data);
        const total = countPerRank * this.worldSize;
        if (this.rank === root && view === null) throw new ConfigurationError(`scatter root rank ${root} must pass data`);
        if (view !== null && view.count !== total) {
          throw new ConfigurationError(`scatter data has ${view.count} elements, expected countPerRank ${countPerRank} x world size ${this.worldSize} = ${total}`);
        }
        return { view, root, countPerRank };
      },
      0,
    ).pipe(
      map(({ dtype, bytes }) => {
        // A rank that passed null learnt the type from the wire: f16/bf16 come tagged.
        const tagged = view?.tagged ?? (dtype === 'f16' || dtype === 'bf16');
        return tensorFromBytes(dtype, bytes, tagged) as T;
      }),
    );
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
    let view: TensorView | null = null;
    return this.submit(
      'allToAllV',
      () => {
        view = viewTensor(data);
        if (!Array.isArray(sendCounts) || sendCounts.length !== this.worldSize) {
          throw new ConfigurationError(`all-to-all-v needs ${this.worldSize} send counts, got ${Array.isArray(sendCounts) ? sendCounts.length : typeof sendCounts}`);
        }
        sendCounts.forEach((count, rank) => checkCount(count, `sendCounts[${rank}]`));
        const total = sendCounts.reduce((sum, count) => sum + count, 0);
        if (total !== view.count) throw new ConfigurationError(`all-to-all-v send counts sum to ${total}, data has ${view.count} elements`);
        return { view, sendCounts };
      },
      0,
    ).pipe(map(({ bytes, counts }) => ({ data: tensorFromBytes(view!.dtype, bytes, view!.tagged) as T, counts })));
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
    return lastValueFrom(this.queued(() => this.context.coordinate(request, payload.length > 0 ? [payload] : [])));
  }

  /**
   * Reconfigures the collective timeout of every later sequence, on every rank (a collective).
   * @example
   * await session.setTimeout(600_000); // a long checkpoint step: give every rank ten minutes
   */
  async setTimeout(ms: number): Promise<void> {
    validateTimeout(ms, 'collective timeout');
    const milliseconds = BigInt(Math.max(1, Math.round(ms)));
    await lastValueFrom(this.queued(() => this.context.coordinate({ opcode: Opcode.SetTimeout, tag: milliseconds }, [])));
    this.timeout.ms = Number(milliseconds);
  }

  /**
   * Sends `data` to `destination` (itself too) under `tag`; resolves once the transport took it
   * (the bytes must stay untouched until then). Messages with one tag arrive in order.
   *
   * @example
   * await session.send(1, 7, Float32Array.of(1, 2, 3));
   */
  async send(destination: number, tag: number | bigint, data: Tensor, options: RailOption | null = {}): Promise<void> {
    checkRank(destination, this.worldSize, 'destination');
    const wireTag = checkTag(tag);
    const view = viewTensor(data);
    const rail = this.rail(wireTag, options);
    const started = performance.now();
    await lastValueFrom(
      defer(() => this.links.send(rail, destination, wireTag, view.bytes, { elementType: view.elementType, count: view.count })).pipe(
        this.failure.untilEnded(),
        this.loop.during(),
      ),
      { defaultValue: undefined },
    );
    if (this.events.observed) {
      this.events.next({ type: 'p2p-sent', destination, tag: wireTag, rail, bytes: view.bytes.length, durationMs: performance.now() - started });
    }
  }

  /**
   * Receives the next matching message; `source` null means any rank. The result's type follows
   * the dtype asked for (f16/bf16 come as `{ dtype, data: Uint16Array }`).
   *
   * @example
   * const weights = await session.receive(0, 7, { dtype: 'f32', count: 1024 }); // Float32Array
   */
  async receive<D extends DType>(source: number | null, tag: number | bigint, like: ReceiveShape<D>, options: RailOption | null = {}): Promise<TensorOf<D>> {
    if (source !== null) checkRank(source, this.worldSize, 'source');
    const wireTag = checkTag(tag);
    const { dtype, count } = checkShape(like);
    const rail = this.rail(wireTag, options);
    const started = performance.now();
    const payload = await lastValueFrom(
      defer(() => this.links.receive(rail, source ?? ANY_RANK, wireTag, { elementType: elementTypeOfDType(dtype), count })).pipe(
        this.failure.untilEnded(),
        this.loop.during(),
      ),
    );
    if (this.events.observed) {
      this.events.next({ type: 'p2p-received', source, tag: wireTag, rail, bytes: payload.length, durationMs: performance.now() - started });
    }
    return tensorFromBytes(dtype, payload, dtype === 'f16' || dtype === 'bf16') as TensorOf<D>;
  }

  /**
   * Pull-based receive: each pull posts one receive, and leaving the loop posts no more.
   *
   * @example
   * for await (const gradient of session.messages(null, 3, { dtype: 'f32', count: 256 })) apply(gradient);
   */
  messages<D extends DType>(source: number | null, tag: number | bigint, like: ReceiveShape<D>): AsyncIterableX<TensorOf<D>> {
    if (source !== null) checkRank(source, this.worldSize, 'source');
    checkTag(tag);
    checkShape(like);
    const session = this;
    return asyncIterableFrom(
      (async function* () {
        for (;;) yield await session.receive(source, tag, like);
      })(),
    );
  }

  /**
   * Measures latency and bandwidth between every pair of ranks on every rail (tcp_peer only; a
   * collective: every rank calls it). Every rank ends with the identical topology. Options default
   * to the `GX1_TOPOLOGY_PROBE_*` variables.
   * @example
   * const topology = await session.probeTopology({ latencyIterations: 20 });
   */
  async probeTopology(options?: Partial<TopologyProbeOptions>): Promise<CollectiveTopology> {
    const resolved = options === undefined ? probeOptionsFromEnvironment() : resolveProbeOptions(options);
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
    if (!this.closed) {
      this.closed = true;
      this.stopLeavingOnExit();
      this.failure.close(new ChannelClosedError(`rank ${this.rank} session closed`));
      this.queue.close();
      this.nativePlane?.close();
      this.links.close();
      this.coordinator.close();
      this.deadlines.stop();
      this.events.complete();
    }
    await Promise.all(this.holds.map((work) => work.then(() => undefined, () => undefined)));
  }

  /** `await using session = await openSession()` closes the session when the scope ends. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /** Probes the links and makes the best ring of what was measured this session's ring (GX1_TOPOLOGY_LINKS=probe). */
  private async useProbedRing(): Promise<void> {
    const topology = await this.probeTopology();
    if (this.tuning.ringOrder !== null) return;
    (this.context as { ringOrder: readonly number[] }).ringOrder = bestRingOrder(topology);
    // Schedules written for the old ring are stale.
    this.context.schedules.clear();
    this.nativePlane?.forget();
  }

  /**
   * A tensor collective whose result has the input's dtype and form. With `output` (the caller's tensor of the result's length,
   * `resultCount` of the input's: the input itself for in-place calls), the algorithm writes the
   * result there (or the session copies it there) and `output` itself is the result.
   */
  private tensorCollective<N extends CollectiveName, Out>(
    collective: N,
    data: Tensor,
    request: (view: TensorView, output: Uint8Array | undefined) => Collectives[N][0],
    memory?: ResultMemory<Tensor>,
    resultCount: (count: number) => number = (count) => count,
  ): Observable<Out> {
    let view: TensorView | null = null;
    let into: Uint8Array | undefined;
    return this.submit(
      collective,
      () => {
        if (memory?.conflict === true) throw new ConfigurationError(`${collective} takes inPlace or an output, not both`);
        view = viewTensor(data);
        into = memory === undefined ? undefined : checkOutput(collective, view, viewTensor(memory.tensor), resultCount(view.count), memory.inPlace, this.rank);
        return request(view, into);
      },
      () => view!.bytes.length,
    ).pipe(
      map((result) => {
        if (into === undefined) return (result === null ? null : tensorFromBytes(view!.dtype, result as Uint8Array, view!.tagged)) as Out;
        if (result !== into) into.set(result as Uint8Array);
        return memory!.tensor as Out;
      }),
    );
  }

  /**
   * Validates (now: a bad argument is an error of the returned Observable and nothing is sent),
   * then queues the collective; when its turn comes the table picks the algorithm. Hot: the call
   * submits it exactly once, whoever listens.
   */
  private submit<N extends CollectiveName>(collective: N, validate: () => Collectives[N][0], bytes: number | (() => number)): Observable<Collectives[N][1]> {
    let request: Collectives[N][0];
    try {
      if (this.closed) throw new ChannelClosedError(`rank ${this.rank} session closed`);
      request = validate();
    } catch (error) {
      return throwError(() => error);
    }
    const size = typeof bytes === 'number' ? bytes : bytes();
    const row = selectAlgorithm(collective, { transport: this.transport, plane: this.plane, worldSize: this.worldSize, bytes: size, tuning: this.tuning, ranksShareHost: this.ranksShareHost });
    this.nameChoice(collective, row, size);
    // The native data plane's thread waits for the data itself: an event loop polling beside it
    // only takes a core from it.
    const busyPoll = row.plane !== 'native';
    return this.queued((sequence) => {
      const run = runRow(collective, row, this.links, request, this.context);
      // Events cost an allocation and a clock read per collective: only when someone listens.
      if (!this.events.observed) return run;
      const base = { sequence, collective, algorithm: row.name, plane: row.plane };
      this.events.next({ type: 'collective-started', ...base, bytes: size });
      const started = performance.now();
      return run.pipe(
        tap({
          complete: () => this.events.next({ type: 'collective-finished', ...base, bytes: size, durationMs: performance.now() - started }),
          error: (error: unknown) => this.events.next({ type: 'collective-failed', ...base, error }),
        }),
      );
    }, busyPoll);
  }

  /**
   * Says on the debug log (info) which algorithm and plane a collective takes, the first time it
   * takes them (a size that changes the choice says so again).
   */
  private nameChoice(collective: CollectiveName, row: AlgorithmRow<CollectiveName>, bytes: number): void {
    if (!debugLog.enabled('info')) return;
    const choice = `${collective} ${row.name} ${row.plane}`;
    if (this.named.has(choice)) return;
    this.named.add(choice);
    debugLog.info(`rank ${this.rank} ${collective} of ${bytes} bytes runs ${row.name} on the ${row.plane === 'js' ? 'JS' : row.plane} plane`);
  }

  /** Tells every rank to end the job, and stops this rank's own native collective now (not when the abort comes back). */
  private abortLinks(reason: string): number {
    this.nativePlane?.end();
    return this.links.abort(reason);
  }

  /**
   * Runs `work` in the collective queue, ending with the session's failure if that comes first.
   * `work` gets the operation's place in the call order (its `sequence` in events); `busyPoll`
   * false keeps the event loop from polling while it runs (see `EventLoopHold`).
   */
  private queued<T>(work: (sequence: number) => Observable<T>, busyPoll = true): Observable<T> {
    const sequence = this.submitted++;
    // One hand-written layer for defer + loop.during() + failure.untilEnded(): every collective passes here.
    return this.queue.submit(
      new Observable<T>((subscriber) => {
        this.loop.hold(subscriber, busyPoll);
        this.failure.enroll(subscriber);
        subscriber.add(work(sequence).subscribe(subscriber));
      }),
    );
  }

  private reducible(view: TensorView, op: ReduceOp): ReduceOp {
    validateReduction(view.dtype, checkReduceOp(op));
    return op;
  }

  private rail(tag: bigint, options: RailOption | null): number {
    const rail = options?.rail;
    return rail === undefined ? Number(tag % BigInt(this.rails)) : checkRail(rail, this.rails);
  }
}

/** What the join line says of the data plane: tcp_peer has one, native or JS. */
function dataPlaneText(transport: CollectiveTransport, nativePlane: NativePlane | null): string {
  if (transport !== 'tcp_peer') return '';
  return nativePlane === null ? 'JS data plane, ' : 'native data plane, ';
}

function splitEqually(bytes: Uint8Array, parts: number): Uint8Array[] {
  const size = bytes.length / parts;
  return Array.from({ length: parts }, (_, index) => bytes.subarray(index * size, (index + 1) * size));
}

/** The bytes of a caller's output tensor, checked against the result it must hold. */
function checkOutput(collective: CollectiveName, input: TensorView, output: TensorView, expected: number, inPlace: boolean, rank: number): Uint8Array {
  if (output.dtype !== input.dtype || output.count !== expected) {
    throw new ConfigurationError(`${collective} output is ${output.dtype} x ${output.count}, its result is ${input.dtype} x ${expected}`);
  }
  // In place, the algorithm gets the input's own view: it recognises it and writes no copy.
  if (inPlace) return input.bytes;
  // Results are written while the input is still being read. Besides in place, only the slots of
  // NCCL's in-place forms may be shared: allGather's input as this rank's slot of the output,
  // reduceScatter's output as this rank's slot of the input.
  if (overlaps(input.bytes, output.bytes) && !sharesOwnSlot(collective, input.bytes, output.bytes, rank)) {
    const hint = collective === 'allReduce' || collective === 'broadcast' ? ' (to write the result over the input, use { inPlace: true })' : '';
    throw new ConfigurationError(`${collective} output overlaps its input${hint}`);
  }
  return output.bytes;
}

function overlaps(a: Uint8Array, b: Uint8Array): boolean {
  return a.buffer === b.buffer && a.length > 0 && b.length > 0 && a.byteOffset < b.byteOffset + b.length && b.byteOffset < a.byteOffset + a.length;
}

/** Whether `output` and `input` share exactly this rank's slot (see `checkOutput`). */
function sharesOwnSlot(collective: CollectiveName, input: Uint8Array, output: Uint8Array, rank: number): boolean {
  const [whole, slot] = collective === 'allGather' ? [output, input] : collective === 'reduceScatter' ? [input, output] : [null, null];
  return whole !== null && slot !== null && slot.byteOffset === whole.byteOffset + rank * slot.length;
}

/** Where an all-reduce's or a broadcast's result goes: the input itself (`inPlace`), the caller's `output`, else fresh memory (undefined). */
function resultMemory<T extends Tensor>(data: T, options: { readonly inPlace?: boolean; readonly output?: T } | undefined): ResultMemory<T> | undefined {
  if (options?.inPlace === true) return { tensor: data, inPlace: true, conflict: options.output !== undefined };
  return options?.output === undefined ? undefined : { tensor: options.output, inPlace: false, conflict: false };
}

/** A result's memory chosen by the caller. */
interface ResultMemory<T extends Tensor> {
  readonly tensor: T;
  /** The input's own memory. */
  readonly inPlace: boolean;
  /** Both `inPlace` and an `output` were given. */
  readonly conflict: boolean;
}
