import { connect as netConnect, type Socket } from 'node:net';
import { firstValueFrom, take, type Subscription } from 'rxjs';
import { ChannelClosedError, ConfigurationError, ProtocolError, RemoteAbortError, TimeoutError } from '../errors.js';
import { ANY_RANK } from '../protocol/constants.js';
import { ElementType, elementTypeName } from '../protocol/element-type.js';
import { frameText, makeHeader, type Frame } from '../protocol/frame.js';
import { Opcode, opcodeName } from '../protocol/opcode.js';
import type { UniqueId } from '../protocol/unique-id.js';
import { BufferPool } from './buffer-pool.js';
import { FrameChannel } from './frame-channel.js';
import { formatEndpoint, type SocketAddressText } from './peer-endpoint-config.js';

/** Who a mesh belongs to. */
export interface MeshIdentity {
  readonly uniqueId: UniqueId;
  readonly rank: number;
  readonly worldSize: number;
  readonly rails: number;
}

/** A receive posted on the mesh, waiting for its message. */
interface PostedReceive {
  readonly source: number;
  readonly tag: bigint;
  readonly elementType: ElementType;
  readonly count: number;
  readonly resolve: (frame: Frame) => void;
  readonly reject: (error: unknown) => void;
}

/** Unmatched bytes a link may hold before the mesh stops reading it (back-pressure on the sender). */
const LINK_BUFFER_LIMIT = 64 * 1024 * 1024;

function linkKey(peer: number, rail: number): string {
  return `${peer}/${rail}`;
}

/**
 * The direct rank-to-rank data plane of `tcp_peer` (the reference design's `DirectPeerMesh`): one
 * TCP connection per (peer, rail), set up deterministically (the higher rank dials the lower) with
 * a PeerHello handshake in both directions that checks unique id, ranks, world size and rail, so
 * a stray or crossed connection is refused and reported.
 *
 * Receiving is tagged matching per rail: a message meets the oldest posted receive whose source
 * (or ANY) and tag match, else waits in arrival order; FIFO per (source, tag). The element type
 * and count a receive expects are checked against the message. A peer whose link closes wakes
 * every receive waiting on it at once (`direct peer rank N left`). `abort` sends an Abort down every
 * link so every peer's pending work ends with the message.
 */
export class PeerMesh {
  private readonly links = new Map<string, FrameChannel>();
  private readonly readers = new Map<string, Subscription>();
  private readonly departed = new Set<number>();
  private readonly posted: PostedReceive[][];
  private readonly arrived: Frame[][];
  private readonly buffered = new Map<string, number>();
  private readonly sequences = new Map<string, bigint>();
  /** Memory for payloads that span socket chunks; consumers that are done with one give it back. */
  private readonly pool = new BufferPool(64 * 1024, 4);
  private failure: unknown = null;
  private onFailure: (error: unknown) => void = () => undefined;

  private constructor(readonly identity: MeshIdentity) {
    this.posted = Array.from({ length: identity.rails }, () => []);
    this.arrived = Array.from({ length: identity.rails }, () => []);
  }

  /**
   * Builds the mesh: dials every lower rank on every rail and waits for every higher rank to dial
   * in (through `incoming`, fed by the listeners bound before the endpoints were published).
   */
  static async connect(options: {
    identity: MeshIdentity;
    endpoints: readonly (readonly SocketAddressText[])[];
    incoming: AsyncIterable<{ rail: number | null; socket: Socket }>;
    timeoutMs: number;
  }): Promise<PeerMesh> {
    const mesh = new PeerMesh(options.identity);
    const { rank, worldSize, rails } = options.identity;
    const expectedIncoming = (worldSize - 1 - rank) * rails;
    try {
      await withTimeout(
        Promise.all([
          ...Array.from({ length: rank * rails }, (_, index) => {
            const peer = Math.floor(index / rails);
            const rail = index % rails;
            return mesh.dial(peer, rail, options.endpoints[peer]![rail]!);
          }),
          mesh.acceptAll(options.incoming, expectedIncoming),
        ]),
        options.timeoutMs,
        `rank ${rank} direct peer mesh setup`,
      );
    } catch (error) {
      mesh.close();
      throw error;
    }
    return mesh;
  }

  /** Called once with the mesh's first failure (an abort from a peer, a protocol error). */
  set failureHandler(handler: (error: unknown) => void) {
    this.onFailure = handler;
  }

  /** Writes one message; waits (up to `timeoutMs`) only while the socket pushes back. */
  async send(rail: number, destination: number, tag: bigint, elementType: ElementType, count: number, payload: Uint8Array, timeoutMs: number): Promise<void> {
    this.check();
    const { uniqueId, rank, worldSize } = this.identity;
    const key = linkKey(destination, rail);
    const sequence = this.sequences.get(key) ?? 0n;
    this.sequences.set(key, sequence + 1n);
    const header = makeHeader(
      { uniqueId, opcode: Opcode.Send, elementType, sourceRank: rank, destinationRank: destination, worldSize, sequence, tag, elementCount: count },
      payload.length,
    );
    if (destination === rank) {
      // To itself: no socket, but the same matching as a message from a peer.
      this.onMessage(rail, { header, payload: payload.slice() });
      return;
    }
    if (this.departed.has(destination)) throw new RemoteAbortError(`direct peer rank ${destination} left`);
    const link = this.links.get(key)!;
    if (!link.send({ header, parts: [payload] })) {
      await withTimeout(link.drained(), timeoutMs, `direct peer send to rank ${destination} with tag ${tag} on rail ${rail} (peer not reading)`);
    }
  }

  /** Waits for the next matching message; after `timeoutMs` it gives up with a TimeoutError. */
  receive(rail: number, source: number | null, tag: bigint, elementType: ElementType, count: number, timeoutMs: number): Promise<Frame> {
    this.check();
    const from = source ?? ANY_RANK;
    if (from !== ANY_RANK && this.departed.has(from) && !this.arrived[rail]!.some((frame) => frame.header.sourceRank === from)) {
      return Promise.reject(new RemoteAbortError(`direct peer rank ${from} left`));
    }
    return new Promise<Frame>((resolve, reject) => {
      const timer = setTimeout(() => {
        const queue = this.posted[rail]!;
        const index = queue.indexOf(receive);
        if (index >= 0) queue.splice(index, 1);
        const peer = from === ANY_RANK ? 'any rank' : `rank ${from}`;
        reject(new TimeoutError(`direct peer receive from ${peer} with tag ${tag} on rail ${rail}`));
      }, timeoutMs);
      const settle = <T>(finish: (value: T) => void) => (value: T) => {
        clearTimeout(timer);
        finish(value);
      };
      const receive: PostedReceive = { source: from, tag, elementType, count, resolve: settle(resolve), reject: settle(reject) };
      const queue = this.arrived[rail]!;
      const index = queue.findIndex((frame) => matches(frame, receive));
      if (index < 0) {
        this.posted[rail]!.push(receive);
        return;
      }
      const [frame] = queue.splice(index, 1);
      this.release(rail, frame!);
      deliver(frame!, receive);
    });
  }

  /** Takes back the payload of a received message its consumer no longer needs (see BufferPool). */
  recycle(payload: Uint8Array): void {
    this.pool.give(payload);
  }

  /** Sends an Abort with `message` down every link (best effort) so every peer stops at once. */
  abort(message: string): void {
    const payload = new Uint8Array(Buffer.from(message, 'utf8'));
    const { uniqueId, rank, worldSize } = this.identity;
    const header = makeHeader(
      { uniqueId, opcode: Opcode.Abort, elementType: ElementType.U8, sourceRank: rank, worldSize, elementCount: payload.length },
      payload.length,
    );
    for (const link of this.links.values()) {
      try {
        link.send({ header, parts: [payload] });
      } catch {
        // That peer is gone already.
      }
    }
  }

  /** Fails every pending receive with `error` and refuses later calls. */
  fail(error: unknown): void {
    if (this.failure !== null) return;
    this.failure = error;
    for (const queue of this.posted) for (const receive of queue.splice(0)) receive.reject(error);
    this.onFailure(error);
  }

  close(): void {
    for (const reader of this.readers.values()) reader.unsubscribe();
    for (const link of this.links.values()) link.finish();
    this.fail(new ChannelClosedError(`rank ${this.identity.rank} direct peer mesh closed`));
  }

  private check(): void {
    if (this.failure !== null) throw this.failure;
  }

  private async dial(peer: number, rail: number, endpoint: SocketAddressText): Promise<void> {
    const socket = await new Promise<Socket>((resolve, reject) => {
      const dialled = netConnect({ host: endpoint.host, port: endpoint.port, noDelay: true });
      dialled.once('connect', () => resolve(dialled));
      dialled.once('error', (error) =>
        reject(new ConfigurationError(`cannot reach direct peer rank ${peer} rail ${rail} at ${formatEndpoint(endpoint)}: ${error.message}`, { cause: error })),
      );
    });
    const channel = new FrameChannel(socket);
    channel.send({ header: this.hello(peer, rail), parts: [] });
    const reply = await firstHandshakeFrame(channel);
    this.checkHello(reply, peer, rail);
    this.attach(peer, rail, channel);
  }

  private async acceptAll(incoming: AsyncIterable<{ rail: number | null; socket: Socket }>, expected: number): Promise<void> {
    let accepted = 0;
    if (expected === 0) return;
    for await (const { rail: listenerRail, socket } of incoming) {
      const channel = new FrameChannel(socket);
      try {
        const hello = await firstHandshakeFrame(channel);
        const peer = hello.header.sourceRank;
        const rail = Number(hello.header.tag);
        if (listenerRail !== null && listenerRail !== rail) {
          throw new ProtocolError(`direct peer rank ${peer} dialled the rail ${listenerRail} listener for rail ${rail}`);
        }
        this.checkHello(hello, peer, rail);
        if (peer <= this.identity.rank) throw new ProtocolError(`direct peer rank ${peer} dialled rank ${this.identity.rank}; the higher rank dials`);
        if (this.links.has(linkKey(peer, rail))) throw new ProtocolError(`direct peer rank ${peer} rail ${rail} connected twice`);
        channel.send({ header: this.hello(peer, rail), parts: [] });
        this.attach(peer, rail, channel);
        accepted += 1;
        if (accepted === expected) return;
      } catch (error) {
        // A stray or crossed connection is told why and dropped; the mesh keeps waiting.
        this.refuse(channel, error);
      }
    }
  }

  private hello(peer: number, rail: number) {
    const { uniqueId, rank, worldSize } = this.identity;
    return makeHeader({ uniqueId, opcode: Opcode.PeerHello, sourceRank: rank, destinationRank: peer, worldSize, tag: BigInt(rail) }, 0);
  }

  private checkHello(frame: Frame, peer: number, rail: number): void {
    const h = frame.header;
    const { uniqueId, rank, worldSize, rails } = this.identity;
    if (h.opcode === Opcode.Abort) throw new RemoteAbortError(frameText(frame));
    if (h.opcode !== Opcode.PeerHello) throw new ProtocolError(`direct peer link opened with ${opcodeName(h.opcode)}, expected PeerHello`);
    if (!h.uniqueId.equals(uniqueId)) throw new ProtocolError('direct peer link belongs to another session (unique id mismatch)');
    if (h.worldSize !== worldSize) throw new ProtocolError(`direct peer declares world size ${h.worldSize}, expected ${worldSize}`);
    if (h.sourceRank !== peer || h.destinationRank !== rank) {
      throw new ProtocolError(`direct peer link is rank ${h.sourceRank} -> rank ${h.destinationRank}, expected rank ${peer} -> rank ${rank}`);
    }
    if (h.tag !== BigInt(rail) || rail >= rails) throw new ProtocolError(`direct peer link is for rail ${h.tag}, expected rail ${rail} of ${rails}`);
  }

  private refuse(channel: FrameChannel, error: unknown): void {
    const message = `direct peer connection refused by rank ${this.identity.rank}: ${error instanceof Error ? error.message : String(error)}`;
    const payload = new Uint8Array(Buffer.from(message, 'utf8'));
    try {
      const { uniqueId, worldSize } = this.identity;
      channel.send({
        header: makeHeader({ uniqueId, opcode: Opcode.Abort, elementType: ElementType.U8, worldSize, elementCount: payload.length }, payload.length),
        parts: [payload],
      });
    } catch {
      // Gone already.
    }
    channel.finish(500);
  }

  private attach(peer: number, rail: number, channel: FrameChannel): void {
    const key = linkKey(peer, rail);
    channel.allocatePayload = (header) => this.pool.take(header.payloadBytes);
    this.links.set(key, channel);
    this.buffered.set(key, 0);
    this.read(peer, rail, channel);
  }

  private read(peer: number, rail: number, channel: FrameChannel): void {
    const key = linkKey(peer, rail);
    this.readers.set(
      key,
      channel.frames$.subscribe({
        next: (frame) => this.onLinkFrame(peer, rail, frame),
        error: () => this.onDeparture(peer),
        complete: () => this.onDeparture(peer),
      }),
    );
  }

  private onLinkFrame(peer: number, rail: number, frame: Frame): void {
    const h = frame.header;
    try {
      if (h.opcode === Opcode.Abort) throw new RemoteAbortError(frameText(frame));
      if (h.opcode !== Opcode.Send || h.sourceRank !== peer || h.destinationRank !== this.identity.rank || !h.uniqueId.equals(this.identity.uniqueId)) {
        throw new ProtocolError(`unexpected ${opcodeName(h.opcode)} frame from direct peer rank ${peer} on rail ${rail}`);
      }
      if (!this.onMessage(rail, frame)) return;
      const key = linkKey(peer, rail);
      this.buffered.set(key, this.buffered.get(key)! + frame.payload.length);
      if (this.buffered.get(key)! > LINK_BUFFER_LIMIT) {
        // Stop reading this link until receives drain it; the sender's socket fills up and waits.
        this.readers.get(key)?.unsubscribe();
        this.readers.delete(key);
      }
    } catch (error) {
      this.fail(error);
    }
  }

  /** Hands a message to the oldest matching receive; returns true if it had to wait in the queue. */
  private onMessage(rail: number, frame: Frame): boolean {
    const queue = this.posted[rail]!;
    const index = queue.findIndex((receive) => matches(frame, receive));
    if (index < 0) {
      this.arrived[rail]!.push(frame);
      return true;
    }
    const [receive] = queue.splice(index, 1);
    deliver(frame, receive!);
    return false;
  }

  /** A message left the arrival queue: count it off its link and resume a paused link. */
  private release(rail: number, frame: Frame): void {
    const peer = frame.header.sourceRank;
    if (peer === this.identity.rank) return;
    const key = linkKey(peer, rail);
    const remaining = this.buffered.get(key)! - frame.payload.length;
    this.buffered.set(key, remaining);
    if (remaining <= LINK_BUFFER_LIMIT && !this.readers.has(key) && this.failure === null) this.read(peer, rail, this.links.get(key)!);
  }

  private onDeparture(peer: number): void {
    if (this.departed.has(peer)) return;
    this.departed.add(peer);
    const left = new RemoteAbortError(`direct peer rank ${peer} left`);
    const everyPeerLeft = this.departed.size === this.identity.worldSize - 1;
    for (const queue of this.posted) {
      for (let index = queue.length - 1; index >= 0; index--) {
        const receive = queue[index]!;
        if (receive.source === peer || (receive.source === ANY_RANK && everyPeerLeft)) {
          queue.splice(index, 1);
          receive.reject(left);
        }
      }
    }
  }
}

function matches(frame: Frame, receive: PostedReceive): boolean {
  return (receive.source === ANY_RANK || receive.source === frame.header.sourceRank) && receive.tag === frame.header.tag;
}

function deliver(frame: Frame, receive: PostedReceive): void {
  const h = frame.header;
  if (h.elementType !== receive.elementType || h.elementCount !== receive.count) {
    receive.reject(
      new ConfigurationError(
        `point-to-point tag ${h.tag} contract mismatch: send ${elementTypeName(h.elementType)}/${h.elementCount} ` +
          `receive ${elementTypeName(receive.elementType)}/${receive.count} (rank ${h.sourceRank} -> rank ${h.destinationRank})`,
      ),
    );
    return;
  }
  receive.resolve(frame);
}

function firstHandshakeFrame(channel: FrameChannel): Promise<Frame> {
  return firstValueFrom(channel.frames$.pipe(take(1))).catch((error: unknown) => {
    if (error instanceof Error && error.name === 'EmptyError') throw new ChannelClosedError('direct peer closed during the handshake');
    throw error;
  });
}

async function withTimeout<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([work, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new TimeoutError(what)), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

