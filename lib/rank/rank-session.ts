import { from as asyncIterableFrom, type AsyncIterableX } from 'ix/asynciterable';
import type { Observable } from 'rxjs';
import { ChannelClosedError, ConfigurationError, ProtocolError } from '../errors.js';
import { ringAllReduce, type RingLinks } from '../collectives/ring-all-reduce.js';
import { reduceSlices, validateReduction } from '../kernels/index.js';
import { ANY_RANK, FLAG_COUNTS_PREFIX, FLAG_PEER_DATA, MAX_FRAME_PAYLOAD_BYTES } from '../protocol/constants.js';
import { encodeCounts, readCountsPrefix } from '../protocol/counts.js';
import { type DType, dtypeOfElementType, ElementType, elementTypeOfDType } from '../protocol/element-type.js';
import type { Frame } from '../protocol/frame.js';
import { Opcode, opcodeName } from '../protocol/opcode.js';
import { reduceOpCode, type ReduceOp } from '../protocol/reduce-op.js';
import { type Tensor, tensorFromBytes, type TensorView, viewTensor } from '../tensor.js';
import { CollectiveTopology } from '../topology/collective-topology.js';
import { probeTopology } from '../topology/probe.js';
import { probeOptionsFromEnvironment, resolveProbeOptions, type TopologyProbeOptions } from '../topology/probe-options.js';
import { BufferPool } from '../transport/buffer-pool.js';
import { connectChannel } from '../transport/connect-channel.js';
import type { FrameChannel } from '../transport/frame-channel.js';
import type { CollectiveTransport } from '../transport/transport-kind.js';
import { validateTimeout } from '../transport/transport-kind.js';
import { checkCount, checkDivisible, checkRail, checkRank, checkReduceOp, checkTag } from './arguments.js';
import { CollectiveClient, type CollectiveRequest } from './collective-client.js';
import { CoordinatorDataPlane, type DataPlane, PeerDataPlane } from './data-plane.js';
import { openPeerPlane } from './open-peer-plane.js';
import { P2pClient } from './p2p-client.js';
import type { ResolvedSessionOptions } from './session-options.js';
import { SessionFailure } from './session-failure.js';

/** The shape of a point-to-point receive: what the matching send must carry. */
export interface ReceiveShape {
  readonly dtype: DType;
  readonly count: number;
}

export interface RailOption {
  /** The P2P rail to use; default `tag % rails`. */
  readonly rail?: number;
}

/** From this size an all-reduce on tcp_peer goes round the ring of direct links. */
export const RING_MIN_BYTES = 256 * 1024;

/** Collectives whose response carries every rank's payload. */
const GATHERING: ReadonlySet<Opcode> = new Set([Opcode.AllReduce, Opcode.Reduce, Opcode.AllGather, Opcode.Gather]);

function splitEqually(bytes: Uint8Array, parts: number): Uint8Array[] {
  const size = bytes.length / parts;
  return Array.from({ length: parts }, (_, index) => bytes.subarray(index * size, (index + 1) * size));
}

/** A tensor the session returns for a dtype it learnt from the wire: tagged for f16/bf16. */
function tensorOfDType(dtype: DType, bytes: Uint8Array): Tensor {
  return tensorFromBytes(dtype, bytes, dtype === 'f16' || dtype === 'bf16');
}

/** Resolves every connection attempt; if one fails, closes those that succeeded and rethrows. */
async function settleAll(attempts: Promise<FrameChannel>[]): Promise<FrameChannel[]> {
  const settled = await Promise.allSettled(attempts);
  const failed = settled.find((result): result is PromiseRejectedResult => result.status === 'rejected');
  const channels = settled.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
  if (failed === undefined) return channels;
  for (const channel of channels) channel.destroy();
  throw failed.reason;
}

/**
 * One rank's membership in a job (the reference design's `TcpRankSession`): an ordered collective
 * channel to the coordinator, plus either `rails` multiplexed P2P channels through the coordinator
 * (tcp_host_staged) or a direct peer mesh with a control channel (tcp_peer).
 *
 * Every method validates its arguments before anything is sent. Collectives run one at a time in
 * call order; P2P requests are multiplexed. Reductions run rank-side in the GX kernels. The first
 * failure (an abort from any rank, a timeout, a lost connection) fails the whole session: pending
 * and later calls reject with it and `failure$` errors with it.
 */
export class RankSession {
  readonly failure$: Observable<never>;
  private closed = false;
  private readonly closeWaits: Promise<void>[] = [];

  private constructor(
    readonly rank: number,
    readonly worldSize: number,
    readonly transport: CollectiveTransport,
    private readonly collective: CollectiveClient,
    private readonly plane: DataPlane,
    private readonly failure: SessionFailure,
    private timeoutMs: number,
    /** Memory for responses that only feed a reduction kernel. */
    private readonly scratch: BufferPool,
  ) {
    this.failure$ = failure.failure$;
  }

  static async open(options: ResolvedSessionOptions): Promise<RankSession> {
    const address = { host: options.host, port: options.port };
    const { uniqueId, rank, worldSize, timeoutMs } = options;
    const join = (rail: number | null) => ({ uniqueId, rank, worldSize, timeoutMs, rail });
    const failure = new SessionFailure();
    let collectiveChannel: FrameChannel;
    let plane: DataPlane;
    if (options.transport === 'tcp_peer') {
      collectiveChannel = await connectChannel(address, join(null));
      try {
        plane = await openPeerPlane(collectiveChannel, address, options, failure);
      } catch (error) {
        collectiveChannel.destroy();
        throw error;
      }
    } else {
      // All channels at once: the coordinator answers each kind once every rank has joined it.
      const channels = await settleAll([connectChannel(address, join(null)), ...Array.from({ length: options.rails }, (_, rail) => connectChannel(address, join(rail)))]);
      collectiveChannel = channels[0]!;
      plane = new CoordinatorDataPlane(channels.slice(1).map((channel, rail) => new P2pClient(channel, uniqueId, rank, worldSize, rail, failure)));
    }
    const scratch = new BufferPool();
    const collective = new CollectiveClient(collectiveChannel, uniqueId, rank, worldSize, failure, timeoutMs, scratch);
    return new RankSession(rank, worldSize, options.transport, collective, plane, failure, timeoutMs, scratch);
  }

  get rails(): number {
    return this.plane.rails;
  }

  /** The session's failure, if it has failed. */
  get error(): unknown {
    return this.failure.error;
  }

  async barrier(): Promise<void> {
    await this.run({ opcode: Opcode.Barrier }, []);
  }

  async allReduce<T extends Tensor>(data: T, op: ReduceOp = 'sum'): Promise<T> {
    const view = this.reducible(data, op);
    if (this.plane instanceof PeerDataPlane && view.bytes.length >= RING_MIN_BYTES) return this.ringAllReduce(view, op, this.plane) as Promise<T>;
    const response = await this.run(this.shaped(Opcode.AllReduce, view, { reduceOp: reduceOpCode(op) }), [view.bytes], true);
    return this.reduced(view, op, response.payload) as Promise<T>;
  }

  async reduce<T extends Tensor>(data: T, op: ReduceOp, root: number): Promise<T | null> {
    const view = this.reducible(data, op);
    checkRank(root, this.worldSize, 'root');
    const response = await this.run(this.shaped(Opcode.Reduce, view, { reduceOp: reduceOpCode(op), rootRank: root }), [view.bytes], true);
    return this.rank === root ? ((await this.reduced(view, op, response.payload)) as T) : null;
  }

  async broadcast<T extends Tensor>(data: T, root: number): Promise<T> {
    const view = viewTensor(data);
    checkRank(root, this.worldSize, 'root');
    const response = await this.run(this.shaped(Opcode.Broadcast, view, { rootRank: root }), this.rank === root ? [view.bytes] : []);
    return tensorFromBytes(view.dtype, response.payload, view.tagged) as T;
  }

  async allGather<T extends Tensor>(data: T): Promise<T> {
    const view = viewTensor(data);
    const response = await this.run(this.shaped(Opcode.AllGather, view), [view.bytes]);
    return tensorFromBytes(view.dtype, response.payload, view.tagged) as T;
  }

  async gather<T extends Tensor>(data: T, root: number): Promise<T | null> {
    const view = viewTensor(data);
    checkRank(root, this.worldSize, 'root');
    const response = await this.run(this.shaped(Opcode.Gather, view, { rootRank: root }), [view.bytes]);
    return this.rank === root ? (tensorFromBytes(view.dtype, response.payload, view.tagged) as T) : null;
  }

  /**
   * tcp_peer, large tensors: the coordinator only agrees on the operation (PEER_DATA), the data
   * goes round a ring of direct links (see `ringAllReduce`).
   */
  private async ringAllReduce(view: TensorView, op: ReduceOp, plane: PeerDataPlane): Promise<Tensor> {
    const agreed = await this.run({ opcode: Opcode.AllReduce, elementType: view.elementType, elementCount: view.count, reduceOp: reduceOpCode(op), flags: FLAG_PEER_DATA }, []);
    const links: RingLinks = {
      rank: this.rank,
      worldSize: this.worldSize,
      rails: this.rails,
      send: (rail, destination, tag, bytes, count) => plane.send(rail, destination, tag, view.elementType, count, bytes, this.timeoutMs),
      receive: async (rail, source, tag, count) => (await plane.receive(rail, source, tag, view.elementType, count, this.timeoutMs)).payload,
      release: (bytes) => plane.peerMesh.recycle(bytes),
    };
    const result = await this.failure.race(() => ringAllReduce(links, { dtype: view.dtype, op, data: view.bytes, sequence: agreed.header.sequence }));
    return tensorFromBytes(view.dtype, result, view.tagged);
  }

  /** Root passes `countPerRank * worldSize` elements; other ranks pass null (or a same-shaped array). */
  async scatter<T extends Tensor>(data: T | null, root: number, countPerRank: number): Promise<T> {
    checkRank(root, this.worldSize, 'root');
    checkCount(countPerRank, 'countPerRank');
    const view = data === null ? null : viewTensor(data);
    const total = countPerRank * this.worldSize;
    if (this.rank === root && view === null) throw new ConfigurationError(`scatter root rank ${root} must pass data`);
    if (view !== null && view.count !== total) {
      throw new ConfigurationError(`scatter data has ${view.count} elements, expected countPerRank ${countPerRank} x world size ${this.worldSize} = ${total}`);
    }
    const request: CollectiveRequest =
      view === null ? { opcode: Opcode.Scatter, rootRank: root } : this.shaped(Opcode.Scatter, view, { rootRank: root });
    const response = await this.run(request, this.rank === root ? [view!.bytes] : []);
    if (view !== null) return tensorFromBytes(view.dtype, response.payload, view.tagged) as T;
    // A rank that passed null declared no shape on the wire: check what the root sent here.
    if (response.header.elementCount !== countPerRank) {
      throw new ConfigurationError(
        `scatter root rank ${root} sent ${response.header.elementCount} elements per rank, rank ${this.rank} expected countPerRank ${countPerRank}`,
      );
    }
    return tensorOfDType(dtypeOfElementType(response.header.elementType), response.payload) as T;
  }

  async reduceScatter<T extends Tensor>(data: T, op: ReduceOp = 'sum'): Promise<T> {
    const view = this.reducible(data, op);
    checkDivisible(view.count, this.worldSize, 'reduce-scatter');
    const response = await this.run(this.shaped(Opcode.ReduceScatter, view, { reduceOp: reduceOpCode(op) }), [view.bytes], true);
    return this.reduced(view, op, response.payload) as Promise<T>;
  }

  async allToAll<T extends Tensor>(data: T): Promise<T> {
    const view = viewTensor(data);
    checkDivisible(view.count, this.worldSize, 'all-to-all');
    const response = await this.run(this.shaped(Opcode.AllToAll, view), [view.bytes]);
    return tensorFromBytes(view.dtype, response.payload, view.tagged) as T;
  }

  /** Sends `sendCounts[d]` consecutive elements to rank d; returns what each rank sent here. */
  async allToAllV<T extends Tensor>(data: T, sendCounts: readonly number[]): Promise<{ data: T; counts: number[] }> {
    const view = viewTensor(data);
    if (!Array.isArray(sendCounts) || sendCounts.length !== this.worldSize) {
      throw new ConfigurationError(`all-to-all-v needs ${this.worldSize} send counts, got ${Array.isArray(sendCounts) ? sendCounts.length : typeof sendCounts}`);
    }
    sendCounts.forEach((count, rank) => checkCount(count, `sendCounts[${rank}]`));
    const total = sendCounts.reduce((sum, count) => sum + count, 0);
    if (total !== view.count) throw new ConfigurationError(`all-to-all-v send counts sum to ${total}, data has ${view.count} elements`);
    const request = this.shaped(Opcode.AllToAllV, view, { flags: FLAG_COUNTS_PREFIX });
    const response = await this.run(request, [encodeCounts(sendCounts), view.bytes]);
    const { counts, data: received } = readCountsPrefix(response.payload, this.worldSize);
    return { data: tensorFromBytes(view.dtype, received, view.tagged) as T, counts };
  }

  /** Reconfigures the collective timeout of every later sequence, on every rank (a collective). */
  async setTimeout(ms: number): Promise<void> {
    validateTimeout(ms, 'collective timeout');
    const milliseconds = BigInt(Math.max(1, Math.round(ms)));
    await this.run({ opcode: Opcode.SetTimeout, tag: milliseconds }, []);
    this.timeoutMs = Number(milliseconds);
    this.collective.timeoutMs = this.timeoutMs;
  }

  async send(destination: number, tag: number | bigint, data: Tensor, options: RailOption = {}): Promise<void> {
    checkRank(destination, this.worldSize, 'destination');
    const wireTag = checkTag(tag);
    const view = viewTensor(data);
    await this.plane.send(this.rail(wireTag, options), destination, wireTag, view.elementType, view.count, view.bytes, this.timeoutMs);
  }

  /** Receives the next matching message; `source` null means any rank. f16/bf16 come as `{ dtype, data }`. */
  async receive(source: number | null, tag: number | bigint, like: ReceiveShape, options: RailOption = {}): Promise<Tensor> {
    if (source !== null) checkRank(source, this.worldSize, 'source');
    const wireTag = checkTag(tag);
    const elementType = elementTypeOfDType(like?.dtype);
    checkCount(like.count, 'receive count');
    const frame = await this.plane.receive(this.rail(wireTag, options), source, wireTag, elementType, like.count, this.timeoutMs);
    return tensorOfDType(like.dtype, frame.payload);
  }

  /** Pull-based receive: each pull posts one receive, and leaving the loop posts no more. */
  messages(source: number | null, tag: number | bigint, like: ReceiveShape): AsyncIterableX<Tensor> {
    if (source !== null) checkRank(source, this.worldSize, 'source');
    checkTag(tag);
    elementTypeOfDType(like?.dtype);
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
   */
  async probeTopology(options?: Partial<TopologyProbeOptions>): Promise<CollectiveTopology> {
    const resolved = options === undefined ? probeOptionsFromEnvironment() : resolveProbeOptions(options);
    if (!(this.plane instanceof PeerDataPlane)) {
      throw new ConfigurationError('topology probe requires GX1_COLLECTIVE_TRANSPORT=tcp_peer (direct peer links to measure)');
    }
    this.failure.check();
    const session = this;
    return this.failure.race(() =>
      probeTopology(
        {
          rank: this.rank,
          worldSize: this.worldSize,
          rails: this.rails,
          send: (rail, destination, tag, bytes) => session.plane.send(rail, destination, tag, ElementType.U8, bytes.length, bytes, session.timeoutMs),
          receive: async (rail, source, tag, byteCount) => (await session.plane.receive(rail, source, tag, ElementType.U8, byteCount, session.timeoutMs)).payload,
          allGather: async (bytes) => splitEqually(await session.allGather(bytes), session.worldSize),
          barrier: () => session.barrier(),
          now: () => process.hrtime.bigint(),
        },
        resolved,
      ),
    );
  }

  /** Round trip of an empty control frame through the coordinator, in milliseconds. */
  async heartbeat(timeoutMs: number): Promise<number> {
    validateTimeout(timeoutMs, 'heartbeat timeout');
    const started = performance.now();
    await this.plane.control.request({
      opcode: Opcode.Heartbeat,
      peer: ANY_RANK,
      tag: 0n,
      elementType: ElementType.None,
      elementCount: 0,
      timeoutMs,
    });
    return performance.now() - started;
  }

  /**
   * Abandons the session on every rank: the abort goes over the P2P rails (not the ordered
   * collective channel), so it interrupts ranks blocked in a collective as well as pending P2P work.
   */
  async abort(message: string): Promise<void> {
    const text = String(message);
    if (text.length === 0) throw new ConfigurationError('abort message must not be empty');
    const sent = this.plane.abort(text) > 0;
    if (!sent) throw new ChannelClosedError(`rank ${this.rank} could not send its abort: every rail is closed`);
  }

  /** Leaves the session: LEAVE on every rail, then the connections are closed. */
  async close(): Promise<void> {
    if (!this.closed) {
      this.closed = true;
      this.failure.close(new ChannelClosedError(`rank ${this.rank} session closed`));
      this.plane.close();
      this.collective.close();
    }
    await Promise.all(this.closeWaits);
  }

  /**
   * Makes `close()` also wait for `work` (settled either way). Rank 0 uses it to keep the
   * coordinator it hosts serving until every other rank has left.
   * @internal
   */
  holdCloseUntil(work: Promise<unknown>): void {
    this.closeWaits.push(work.then(() => undefined, () => undefined));
  }

  private run(request: CollectiveRequest, parts: readonly Uint8Array[], scratch = false): Promise<Frame> {
    if (this.closed) return Promise.reject(new ChannelClosedError(`rank ${this.rank} session closed`));
    return this.collective.request(request, parts, scratch);
  }

  private shaped(opcode: Opcode, view: TensorView, extra: Partial<CollectiveRequest> = {}): CollectiveRequest {
    if (GATHERING.has(opcode) && view.bytes.length * this.worldSize > MAX_FRAME_PAYLOAD_BYTES) {
      // The coordinator answers these with every rank's data in one frame.
      throw new ConfigurationError(
        `${opcodeName(opcode)} of ${view.bytes.length} bytes x world size ${this.worldSize} exceeds the frame limit ` +
          `MAX_FRAME_PAYLOAD_BYTES (${MAX_FRAME_PAYLOAD_BYTES}); split the tensor`,
      );
    }
    return { opcode, elementType: view.elementType, elementCount: view.count, ...extra };
  }

  private reducible(data: Tensor, op: ReduceOp): TensorView {
    const view = viewTensor(data);
    validateReduction(view.dtype, checkReduceOp(op));
    return view;
  }

  /** Reduces the `worldSize` slices the coordinator returned into this rank's result. */
  private async reduced(view: TensorView, op: ReduceOp, payload: Uint8Array): Promise<Tensor> {
    if (payload.length % this.worldSize !== 0) {
      throw new ProtocolError(`reduction payload of ${payload.length} bytes does not split into ${this.worldSize} slices`);
    }
    try {
      const output = await reduceSlices({ dtype: view.dtype, op, input: payload, slices: this.worldSize });
      return tensorFromBytes(view.dtype, output, view.tagged);
    } finally {
      // The response was only the kernel's input: its memory serves the next reduction.
      this.scratch.give(payload);
    }
  }

  private rail(tag: bigint, options: RailOption): number {
    return options.rail === undefined ? Number(tag % BigInt(this.rails)) : checkRail(options.rail, this.rails);
  }
}
