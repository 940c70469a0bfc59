import type { Socket } from 'node:net';
import { EmptyError, firstValueFrom, from, merge, NEVER, type Observable, type SchedulerLike, type Subscription, throwError, timeout } from 'rxjs';
import { ChannelClosedError, ConfigurationError, failureText, ProtocolError, RemoteAbortError, RxcclError, TimeoutError } from '../errors.js';
import { ANY_RANK } from '../protocol/constants.js';
import { abortFrame, abortReason, peerHelloHeader } from '../protocol/control-frames.js';
import { elementTypeName } from '../protocol/element-type.js';
import { makeHeader, type Frame } from '../protocol/frame.js';
import type { FrameHeader } from '../protocol/header.js';
import { Opcode, opcodeName } from '../protocol/opcode.js';
import { UniqueId } from '../protocol/unique-id.js';
import { BufferPool, DEFAULT_POOLED_BYTES } from './buffer-pool.js';
import type { DataLinkSockets } from './data-plane.js';
import { DirectReads } from './direct-reads.js';
import { FrameChannel, outgoing } from './frame-channel.js';
import type { Admission } from './admission.js';
import { dialAuthenticated } from './dial-authenticated.js';
import { DEFAULT_HANDSHAKE_TIMEOUT_MS, dialHandshake } from './handshake.js';
import { type AcceptedPeer, checkHello, PeerAccepts, refusePeer } from './peer-accepts.js';
import type { JobSecret } from './job-secret.js';
import { dialSocket, type TlsSettings } from './tls-settings.js';
import type { ExpectedShape, MessageShape } from './links/links.js';
import { formatEndpoint, type SocketAddressText } from './peer-endpoint-config.js';
import { type Deadline, LazyDeadlines } from './lazy-deadlines.js';
import { TagMatcher } from './tag-matcher.js';
import { PeerLeftError } from './peer-left-error.js';
import { PairDials } from './pair-dials.js';
import { headerKey, keyFields, keysText, keyText, type MessageKey } from '../protocol/message-key.js';
import { MAX_P2P_RAILS, MAX_TIMER_DELAY_MS } from './transport-kind.js';

/** Who a mesh belongs to. */
export interface MeshIdentity {
  readonly uniqueId: UniqueId;
  readonly rank: number;
  readonly worldSize: number;
  readonly rails: number;
  /**
   * Whether every pair of ranks also opens data links for the native data plane (one per
   * direction on each rail, beside the rails' own links; see `dataLinks`). Every rank of a job
   * must say the same.
   */
  readonly dataLinks?: boolean;
}


/**
 * Where one message's outcome goes: `next` once it is done (a receive's frame; a send's `undefined`
 * once the socket took it), or `error`. Exactly one of them is called, at most once.
 */
export interface MessageOutcome<T> {
  next(value: T): void;
  error(error: unknown): void;
}

/** A receive posted on the mesh, waiting for its message. */
interface PostedReceive {
  readonly source: number;
  readonly shape: ExpectedShape;
  /** Where its payload may be read straight into (a receive from one rank only). */
  readonly into: Uint8Array | null;
  readonly outcome: MessageOutcome<Frame>;
}

/** A probe waiting for a message it matches: it is told the message's header and takes nothing. */
interface PostedProbe {
  readonly source: number;
  readonly key: MessageKey;
  readonly outcome: MessageOutcome<FrameHeader>;
  readonly deadline: Deadline;
}

/** A send waiting for its link to open (links on demand): the header is made, the bytes wait. */
interface WaitingSend {
  readonly header: FrameHeader;
  readonly payload: Uint8Array;
  readonly key: MessageKey;
  readonly timeoutMs: number;
  readonly outcome: MessageOutcome<void>;
  /** Set once it left the queue (sent or pushed back): what withdrawing it does then. */
  forget: Withdraw;
}

/** What a mesh whose links open on demand dials them with (`connect`'s `onDemand`). */
interface OnDemandDialing {
  readonly endpoints: readonly (readonly SocketAddressText[])[];
  readonly secret: JobSecret | null;
  readonly tls: TlsSettings | null;
  readonly timeoutMs: number;
  readonly accepts: PeerAccepts;
  /** Closes the listeners the mesh is dialled on (the mesh holds them open until it closes). */
  readonly closeListeners: () => void;
}

/** Undoes a message that has not ended yet (withdraws a receive, forgets a waiting send). */
export type Withdraw = () => void;

/**
 * Unmatched bytes one peer may park at this rank (per rail) before the mesh calls it a failure,
 * unless `unmatchedBytesLimit` / `GX1_P2P_UNMATCHED_BYTES` say otherwise: 1 GiB, the largest frame.
 */
export const DEFAULT_UNMATCHED_BYTES_LIMIT = 2 ** 30;

/**
 * The rail number a data link's PeerHello carries in its tag ("DATA"), plus the data link's rail:
 * not a rail (rails are 0..63), so a rank without data links refuses it by name (docs/protocol.md
 * 9.9).
 */
export const DATA_LINK = 0x44415441;

/** The rail of the data link a PeerHello's tag names, or null for a tag that names no data link. */
function dataLinkRail(tag: number): number | null {
  return tag >= DATA_LINK && tag < DATA_LINK + MAX_P2P_RAILS ? tag - DATA_LINK : null;
}

function rankText(rank: number): string {
  return rank === ANY_RANK ? 'any rank' : `rank ${rank}`;
}

/**
 * The direct rank-to-rank data plane of `tcp_peer` (the reference design's `DirectPeerMesh`): per
 * ordered pair of ranks and rail, one TCP connection that carries data from the listening rank to
 * the dialling one, set up with a PeerHello handshake in both directions that checks unique id,
 * ranks, world size and rail, so a stray or crossed connection is refused and reported. Each rank
 * dials the links it receives on because only a socket a process opened itself can be read with
 * `onread` (`DirectReads`): payloads land straight in their destination or pooled memory.
 *
 * Receiving is tagged matching per rail (`TagMatcher`): FIFO per (source, tag), ANY source. The
 * mesh reads every link all the time, so a receive posted for a later message never waits behind
 * unmatched data; a peer that parks more than `unmatchedBytesLimit` unmatched bytes fails the
 * session with an error naming it, its tags and the limit. A failure the mesh detects itself (that
 * budget, a corrupt or unexpected frame) is announced before it fails the session (by default an
 * Abort down every link), so the other ranks stop at once instead of timing out. A peer whose
 * inbound link closes (after the last message it carried) wakes every receive waiting on it there
 * at once (`direct peer rank N left`); sends to a peer fail once any of its links closed. `abort`
 * sends an Abort down every link. A probe looks at the messages waiting in the matching, takes
 * none, and may wait for one to arrive (MPI's `MPI_Probe`).
 */
export class PeerMesh {
  // Per link, by `linkIndex` (arrays, not maps keyed by text: every message looks one up).
  /** The links this rank sends on (a peer dialled them). */
  private readonly outbound: (FrameChannel | undefined)[];
  /** The links this rank receives on (it dialled them). */
  private readonly inbound: (FrameChannel | undefined)[];
  private readonly readers: Subscription[] = [];
  /** The sockets of the links in `outbound` and `inbound`, as they opened. */
  private readonly linkSockets: Socket[] = [];
  /** Peers one of whose links ended: they take no more messages. */
  private readonly departed = new Set<number>();
  /** By `linkIndex`: the inbound link ended, after every message it brought. */
  private readonly inboundEnded: boolean[];
  private readonly matchers: TagMatcher<Frame, PostedReceive>[];
  /** Per rail, the probes waiting for a message, oldest first. */
  private readonly probes: PostedProbe[][];
  private readonly unmatchedBytes: number[];
  private readonly sequences: bigint[];
  /** Sends the socket pushed back, waiting for it to drain (failing the mesh ends them). */
  private readonly pushedBack = new Set<MessageOutcome<void>>();
  /**
   * Memory for payloads no receive named a destination for; consumers that are done with one give
   * it back. It keeps what a pipelined collective has in flight: at 4 ranks a ring's predecessor
   * runs up to ~18 pieces of 1 MiB ahead, and each piece beyond what the pool kept was fresh memory
   * (page faults, every call); 64 MiB idle at the most.
   */
  private readonly pool = new BufferPool(DEFAULT_POOLED_BYTES, 64, 64 * 2 ** 20);
  /** Every pending receive's deadline (and a pushed-back send's), on one lazy timer. */
  private readonly deadlines: LazyDeadlines;
  private readonly dataSockets: DataLinkSockets;
  private failure: unknown = null;
  private onFailure: (error: unknown) => void = () => undefined;
  private onDetectedFailure: (error: unknown) => void = (error) => this.abort(failureText(error));
  private onPeerDeparted: (peer: number) => void = () => undefined;
  /** Communicators whose messages are dropped (`forget`): they failed, nothing will receive them. */
  private readonly forgotten = new Set<bigint>();
  /** A fault-tolerant job's mesh (it has a departure handler): a peer it cannot dial is lost, not the job. */
  private losesPeers = false;
  /** Links on demand: how the mesh dials (null: every link was dialled by `connect`). */
  private onDemand: OnDemandDialing | null = null;
  /** Links on demand: this rank's own dial of each pair it opened, by `pairKey` (pair-dials.ts). */
  private readonly pairs = new PairDials<number>((key) => this.dialPair(key));
  /** By `linkIndex`: sends waiting for the link to the peer to open, oldest first. */
  private readonly waitingSends: (WaitingSend[] | undefined)[];
  /** By data link index: who waits for the peer's dial of the data link this rank sends on. */
  private readonly dataArrivals = new Map<number, (() => void)[]>();
  /** Rejects with the mesh's failure (a data link's wait ends with it). */
  private readonly failed$: Promise<never>;
  private rejectFailed: (error: unknown) => void = () => undefined;

  private constructor(
    readonly identity: MeshIdentity,
    private readonly scheduler: SchedulerLike,
    private readonly unmatchedBytesLimit: number,
  ) {
    this.matchers = Array.from({ length: identity.rails }, () => new TagMatcher<Frame, PostedReceive>());
    this.probes = Array.from({ length: identity.rails }, () => []);
    this.deadlines = new LazyDeadlines(scheduler);
    const links = identity.worldSize * identity.rails;
    this.outbound = new Array<FrameChannel | undefined>(links).fill(undefined);
    this.inbound = new Array<FrameChannel | undefined>(links).fill(undefined);
    this.unmatchedBytes = new Array<number>(links).fill(0);
    this.inboundEnded = new Array<boolean>(links).fill(false);
    this.sequences = new Array<bigint>(links).fill(0n);
    this.waitingSends = new Array<WaitingSend[] | undefined>(links).fill(undefined);
    this.failed$ = new Promise<never>((_, reject) => (this.rejectFailed = reject));
    this.failed$.catch(() => undefined);
    this.dataSockets = { rails: identity.rails, send: new Array<Socket | undefined>(links).fill(undefined), receive: new Array<Socket | undefined>(links).fill(undefined) };
  }

  /**
   * Builds the mesh: dials every other rank on every rail (the links it receives on) and waits
   * for every other rank to dial in (through `incoming`, fed by the listeners bound before the
   * endpoints were published).
   */
  static async connect(options: {
    identity: MeshIdentity;
    endpoints: readonly (readonly SocketAddressText[])[];
    /**
     * The connections to this rank's listeners: as they come (the mesh handshakes them), or past
     * the accept front the caller runs (`PeerAccepts`, where the endpoint gather shares the listeners).
     */
    incoming: AsyncIterable<{ rail: number | null; socket: Socket }> | PeerAccepts;
    timeoutMs: number;
    scheduler: SchedulerLike;
    unmatchedBytesLimit?: number;
    /** The job's secret: every link authenticates with it before its PeerHello (docs/protocol.md 8.4). */
    secret?: JobSecret | null;
    /** How long one incoming connection may take over its handshake (default 10 s, at most `timeoutMs`). */
    handshakeTimeoutMs?: number;
    /** Where the listeners count incoming connections until they authenticate (bindPeerListeners). */
    admission?: Admission;
    /** TLS for the links this rank dials (its listeners were bound with the same settings). */
    tls?: TlsSettings | null;
    /** Errors when the set-up is to end now (a member of a communicator's mesh was lost): the connect fails with its error. */
    ended?: Observable<never>;
    /**
     * Links on demand (docs/architecture.md): dial nothing now; a pair of ranks opens its links
     * when one of them first sends to or receives from the other (`PairDials`), and the data links
     * of a rail when the native plane first runs a program on them (`openDataLink`). The mesh keeps
     * accepting for as long as it is open, then closes the listeners with `closeListeners`.
     */
    onDemand?: { readonly closeListeners: () => void };
  }): Promise<PeerMesh> {
    const mesh = new PeerMesh(options.identity, options.scheduler, options.unmatchedBytesLimit ?? DEFAULT_UNMATCHED_BYTES_LIMIT);
    const secret = options.secret ?? null;
    const { rank, worldSize, rails } = options.identity;
    const handshakeTimeoutMs = Math.min(options.handshakeTimeoutMs ?? DEFAULT_HANDSHAKE_TIMEOUT_MS, options.timeoutMs);
    const accepts =
      options.incoming instanceof PeerAccepts
        ? options.incoming
        : new PeerAccepts(options.incoming, { rank, worldSize, secret, timeoutMs: handshakeTimeoutMs, admission: options.admission ?? null, scheduler: options.scheduler });
    if (options.onDemand !== undefined) {
      const { endpoints, timeoutMs, tls = null } = options;
      mesh.onDemand = { endpoints, secret, tls, timeoutMs, accepts, closeListeners: options.onDemand.closeListeners };
      void mesh.acceptAll(accepts.accepted, Number.POSITIVE_INFINITY, handshakeTimeoutMs);
      return mesh;
    }
    // Per peer its rails, then, where there are data links, one on each rail (to that rail's endpoint).
    const perPeer = rails * (options.identity.dataLinks === true ? 2 : 1);
    const links = (worldSize - 1) * perPeer;
    const setup = Promise.all([
      ...Array.from({ length: links }, (_, index) => {
        const other = Math.floor(index / perPeer);
        const peer = other < rank ? other : other + 1;
        const slot = index % perPeer;
        const tag = slot < rails ? slot : DATA_LINK + slot - rails;
        return mesh.dial(peer, tag, options.endpoints[peer]![slot % rails]!, { secret, tls: options.tls ?? null, timeoutMs: options.timeoutMs });
      }),
      mesh.acceptAll(accepts.accepted, links, handshakeTimeoutMs),
    ]);
    try {
      await firstValueFrom(
        merge(
          from(setup).pipe(
            timeout({ first: Math.min(options.timeoutMs, MAX_TIMER_DELAY_MS), scheduler: options.scheduler, with: () => throwError(() => new TimeoutError(`rank ${rank} direct peer mesh setup`)) }),
          ),
          options.ended ?? NEVER,
        ),
      );
    } catch (error) {
      mesh.close();
      // The connections of a front it made itself that no link took (a caller's front is the caller's to close).
      if (accepts !== options.incoming) accepts.close();
      // Data links already handed over belong to no engine yet: nothing else would close them.
      for (const socket of [...mesh.dataSockets.send, ...mesh.dataSockets.receive]) socket?.destroy();
      throw error;
    }
    return mesh;
  }

  /** Whether the mesh failed (then every message fails with that failure). */
  get failed(): boolean {
    return this.failure !== null;
  }

  /** Called once with the mesh's first failure (an abort from a peer, a protocol error). */
  set failureHandler(handler: (error: unknown) => void) {
    this.onFailure = handler;
  }

  /** Called once per peer whose links it sends on all ended (a fault-tolerant job loses it then). */
  set departureHandler(handler: (peer: number) => void) {
    this.onPeerDeparted = handler;
    this.losesPeers = true;
  }

  /**
   * Drops every message of `communicator` waiting here and every one that comes later: it failed,
   * and its ranks' collectives stopped mid-way, so no receive will take them.
   */
  forget(communicator: bigint): void {
    this.forgotten.add(communicator);
    this.matchers.forEach((matcher, rail) => {
      for (const frame of matcher.takeMessages((key) => keyFields(key).communicator === communicator)) {
        this.countOff(rail, frame);
        this.pool.give(frame.payload);
      }
    });
  }

  /**
   * A fault-tolerant job lost `peer` (the coordinator said so): its links are closed here as well,
   * so a rank that was only stopped cannot come back into a job that went on without it, and every
   * receive waiting on it fails.
   */
  dropPeer(peer: number): void {
    if (peer === this.identity.rank) return;
    for (let rail = 0; rail < this.identity.rails; rail++) {
      this.link('inbound', peer, rail)?.destroy();
      this.link('outbound', peer, rail)?.destroy();
      this.onDeparture(peer, rail, 'inbound', null);
    }
  }

  /**
   * Called with a failure this mesh found itself (a peer over its unmatched budget, a corrupt or
   * unexpected frame), before the failure handler: the owner tells every rank (MeshLinks aborts
   * on the control channel too). Nobody else knows of such a failure, and a peer still sending or
   * waiting would otherwise run into its timeout.
   */
  set detectedFailureHandler(handler: (error: unknown) => void) {
    this.onDetectedFailure = handler;
  }

  /**
   * Sends one message (MeshLinks makes it an Observable: one layer per message). Throws if the
   * mesh failed or the destination left; else reports to `outcome`, at once unless the socket
   * pushed back (then once it drained, or an error after `timeoutMs` of a peer not reading). The
   * returned function forgets a waiting send.
   */
  write(rail: number, destination: number, key: MessageKey, shape: MessageShape, payload: Uint8Array, timeoutMs: number, outcome: MessageOutcome<void>): Withdraw | undefined {
    if (this.failure !== null) throw this.failure;
    const { uniqueId, rank, worldSize } = this.identity;
    const link = this.linkIndex(destination, rail);
    const sequence = this.sequences[link]!;
    this.sequences[link] = sequence + 1n;
    const header = makeHeader(
      { uniqueId, opcode: Opcode.Send, elementType: shape.elementType, sourceRank: rank, destinationRank: destination, worldSize, sequence, ...keyFields(key), elementCount: shape.count },
      payload.length,
    );
    if (destination === rank) {
      // To itself: no socket, but the same matching as a message from a peer.
      this.onMessage(rail, { header, payload: payload.slice() });
      outcome.next(undefined);
      return undefined;
    }
    if (this.departed.has(destination)) throw peerLeft(destination);
    const channel = this.outbound[link];
    if (channel === undefined || this.waitingSends[link] !== undefined) return this.sendOnceOpen(link, rail, destination, { header, payload, key, timeoutMs, outcome, forget: () => undefined });
    return this.sendOn(channel, rail, destination, header, payload, key, timeoutMs, outcome);
  }

  /** Writes one message on the link to `destination`; waits for the socket to drain where it pushed back (see `write`). */
  private sendOn(channel: FrameChannel, rail: number, destination: number, header: FrameHeader, payload: Uint8Array, key: MessageKey, timeoutMs: number, outcome: MessageOutcome<void>): Withdraw | undefined {
    if (channel.send({ header, parts: [payload] })) {
      outcome.next(undefined);
      return undefined;
    }
    // Only a send the socket pushed back waits, and only it needs a deadline.
    const forget = () => {
      this.deadlines.remove(deadline);
      this.pushedBack.delete(outcome);
    };
    const deadline = this.deadlines.add(Math.min(timeoutMs, MAX_TIMER_DELAY_MS), () => {
      if (!this.pushedBack.has(outcome)) return;
      forget();
      outcome.error(new TimeoutError(`direct peer send to rank ${destination} with ${keyText(key)} on rail ${rail} (peer not reading)`));
    });
    this.pushedBack.add(outcome);
    void channel.drained().then(() => {
      if (!this.pushedBack.has(outcome)) return;
      forget();
      // A link that closed also ends the wait, with the rest of the message unwritten.
      if (this.departed.has(destination) || channel.closed) outcome.error(peerLeft(destination));
      else outcome.next(undefined);
    });
    return forget;
  }

  /**
   * Links on demand: a send to a peer whose link has not opened (or behind sends still waiting for
   * it) waits for it, in order, and opens the pair; it fails after `timeoutMs` as a send the peer
   * does not read does, or with the mesh (a dial that failed fails the mesh, naming the peer).
   */
  private sendOnceOpen(link: number, rail: number, destination: number, waiting: WaitingSend): Withdraw {
    const queue = (this.waitingSends[link] ??= []);
    queue.push(waiting);
    this.pushedBack.add(waiting.outcome);
    const deadline = this.deadlines.add(Math.min(waiting.timeoutMs, MAX_TIMER_DELAY_MS), () => {
      if (!this.pushedBack.has(waiting.outcome)) return;
      waiting.forget();
      waiting.outcome.error(new TimeoutError(`direct peer send to rank ${destination} with ${keyText(waiting.key)} on rail ${rail} (its link to rank ${destination} did not open)`));
    });
    waiting.forget = () => {
      this.deadlines.remove(deadline);
      this.pushedBack.delete(waiting.outcome);
      const at = queue.indexOf(waiting);
      if (at >= 0) queue.splice(at, 1);
    };
    this.needPair(destination, rail).catch(() => undefined);
    return () => waiting.forget();
  }

  /** The link to `peer` on `rail` opened: the sends waiting for it go, in order, before any later one. */
  private sendWaiting(link: number, rail: number, peer: number, channel: FrameChannel): void {
    const queue = this.waitingSends[link];
    if (queue === undefined) return;
    this.waitingSends[link] = undefined;
    for (const waiting of queue.splice(0)) {
      if (!this.pushedBack.has(waiting.outcome)) continue;
      waiting.forget();
      const pushed = this.sendOn(channel, rail, peer, waiting.header, waiting.payload, waiting.key, waiting.timeoutMs, waiting.outcome);
      if (pushed !== undefined) waiting.forget = pushed;
    }
  }

  /**
   * Posts a receive for the next matching message (see `write`). Throws if the mesh failed or the
   * source left; else reports to `outcome` once the message is there (at once if it waited
   * already), or an error after `timeoutMs`. With `into` (a receive from one rank), a message that
   * has not begun to arrive is read straight into it, and its payload is `into` itself; until the
   * receive ends, `into` may be written. The returned function withdraws a receive still waiting.
   */
  post(rail: number, source: number, key: MessageKey, shape: ExpectedShape, timeoutMs: number, into: Uint8Array | null, outcome: MessageOutcome<Frame>): Withdraw | undefined {
    if (this.failure !== null) throw this.failure;
    this.checkLink(source === ANY_RANK ? null : source, rail);
    const matcher = this.matchers[rail]!;
    if (source !== ANY_RANK && this.inboundEnded[this.linkIndex(source, rail)] && !matcher.holdsFrom(source)) throw peerLeft(source);
    const posted: PostedReceive = { source, shape, into: source === ANY_RANK ? null : into, outcome };
    this.needFrom(source, rail);
    const frame = matcher.post(source, key, posted);
    if (frame !== null) {
      this.countOff(rail, frame);
      deliver(frame, posted);
      return undefined;
    }
    // Not there yet: wait, timed (a message already waiting needs no deadline).
    const deadline = this.deadlines.add(Math.min(timeoutMs, MAX_TIMER_DELAY_MS), () => {
      if (matcher.withdraw(posted)) outcome.error(new TimeoutError(`direct peer receive from ${rankText(source)} with ${keyText(key)} on rail ${rail}`));
    });
    return () => {
      this.deadlines.remove(deadline);
      matcher.withdraw(posted);
    };
  }

  /** The header of the oldest message from `source` (or ANY_RANK) with `key` waiting on `rail` for a receive; null if none waits. */
  waiting(rail: number, source: number, key: MessageKey): FrameHeader | null {
    if (this.failure !== null) throw this.failure;
    this.checkLink(source === ANY_RANK ? null : source, rail);
    return this.matchers[rail]!.find(source, key)?.header ?? null;
  }

  /**
   * Reports to `outcome` the header of the oldest message `waiting` finds, at once if one waits,
   * else of the first such message that arrives and waits (one a posted receive takes at once never
   * waits); a timeout error after `timeoutMs`. Takes nothing. Throws as `post` does (the mesh
   * failed, the source left); the returned function withdraws a probe still waiting.
   */
  probe(rail: number, source: number, key: MessageKey, timeoutMs: number, outcome: MessageOutcome<FrameHeader>): Withdraw | undefined {
    const found = this.waiting(rail, source, key);
    if (found !== null) {
      outcome.next(found);
      return undefined;
    }
    if (source !== ANY_RANK && this.inboundEnded[this.linkIndex(source, rail)]) throw peerLeft(source);
    this.needFrom(source, rail);
    const probes = this.probes[rail]!;
    const deadline = this.deadlines.add(Math.min(timeoutMs, MAX_TIMER_DELAY_MS), () => {
      if (removeProbe(probes, probe)) outcome.error(new TimeoutError(`direct peer probe from ${rankText(source)} with ${keyText(key)} on rail ${rail}`));
    });
    const probe: PostedProbe = { source, key, outcome, deadline };
    probes.push(probe);
    return () => {
      this.deadlines.remove(deadline);
      removeProbe(probes, probe);
    };
  }

  /** Takes back the payload of a received message its consumer no longer needs (see BufferPool). */
  recycle(payload: Uint8Array): void {
    this.pool.give(payload);
  }

  /** Runs `action` after `delayMs` on the mesh's scheduler, unless the function returned is called first. */
  later(delayMs: number, action: () => void): Withdraw {
    const deadline = this.deadlines.add(delayMs, action);
    return () => this.deadlines.remove(deadline);
  }

  /** Sends an Abort with `message` down every link (best effort) so every peer stops at once. */
  abort(message: string): void {
    const frame = outgoing(abortFrame(this.identity, message));
    for (const link of this.allLinks()) {
      try {
        link.send(frame);
      } catch {
        // That peer is gone already.
      }
    }
  }

  /** Fails every pending receive and pushed-back send with `error` and refuses later calls. */
  fail(error: unknown): void {
    if (this.failure !== null) return;
    this.failure = error;
    this.rejectFailed(error);
    for (const matcher of this.matchers) for (const receive of matcher.takeReceives(() => true)) receive.outcome.error(error);
    this.probes.forEach((_, rail) => this.endProbes(rail, () => true, error));
    const pushedBack = [...this.pushedBack];
    this.pushedBack.clear();
    for (const send of pushedBack) send.error(error);
    this.onFailure(error);
  }

  /** The link this rank receives on from `peer` (`inbound`) or sends on to it (`outbound`) on `rail`. */
  link(direction: 'inbound' | 'outbound', peer: number, rail: number): FrameChannel | undefined {
    return (direction === 'inbound' ? this.inbound : this.outbound)[this.linkIndex(peer, rail)];
  }

  /**
   * The data links' sockets (null without them). Nothing reads them in Node: the native data plane
   * takes them over, and closes them (`close` here does not).
   */
  get dataLinks(): DataLinkSockets | null {
    return this.identity.dataLinks === true ? this.dataSockets : null;
  }

  /**
   * The sockets of every link (a session references them only while it has work pending): one
   * array, to which a link opened on demand is added as it opens.
   */
  get sockets(): readonly Socket[] {
    return this.linkSockets;
  }

  close(): void {
    for (const reader of this.readers) reader.unsubscribe();
    for (const link of this.allLinks()) link.finish();
    this.onDemand?.accepts.close();
    this.onDemand?.closeListeners();
    this.deadlines.stop();
    this.fail(new ChannelClosedError(`rank ${this.identity.rank} direct peer mesh closed`));
  }

  /**
   * Links on demand: opens the pair's data links of `rail` with `peer` (this rank dials the one it
   * receives on, the peer the one it sends on), resolving once both are in `dataLinks`; at once
   * where they are. Rejects with the mesh's failure (a dial that failed names the peer and its
   * endpoint), or after `timeoutMs` with the link that did not open (which fails the mesh too).
   */
  openDataLink(peer: number, rail: number, timeoutMs: number): Promise<void> {
    const at = this.linkIndex(peer, rail);
    if (this.dataSockets.send[at] !== undefined && this.dataSockets.receive[at] !== undefined) return Promise.resolve();
    if (this.failure !== null) return Promise.reject(this.failure);
    if (this.onDemand === null || this.identity.dataLinks !== true || peer === this.identity.rank) {
      return Promise.reject(new ConfigurationError(`rank ${this.identity.rank} has no data link of rail ${rail} to rank ${peer}`));
    }
    const arrived =
      this.dataSockets.send[at] !== undefined
        ? Promise.resolve()
        : new Promise<void>((resolve) => {
            const waiting = this.dataArrivals.get(at) ?? [];
            waiting.push(resolve);
            this.dataArrivals.set(at, waiting);
          });
    const endpoint = formatEndpoint(this.onDemand.endpoints[peer]![rail]!);
    return new Promise<void>((resolve, reject) => {
      // A peer answers a dial at once (its accept front runs whatever it is doing): one that has
      // not within the collective's timeout is gone or hung, and the job is told, as for a dial that failed.
      const deadline = this.deadlines.add(Math.min(timeoutMs, MAX_TIMER_DELAY_MS), () => {
        const error = new TimeoutError(`direct peer rank ${peer} did not open its ${this.describeLink(DATA_LINK + rail)} to rank ${this.identity.rank} within ${timeoutMs} ms (rank ${peer} listens at ${endpoint})`);
        reject(error);
        this.failDetected(error);
      });
      Promise.race([Promise.all([this.needPair(peer, DATA_LINK + rail), arrived]), this.failed$]).then(
        () => {
          this.deadlines.remove(deadline);
          resolve();
        },
        (error: unknown) => {
          this.deadlines.remove(deadline);
          reject(error);
        },
      );
    });
  }

  /** Links on demand: a receive or probe from `source` on `rail` opens the pair (ANY_RANK opens none: its sender's first send does). */
  private needFrom(source: number, rail: number): void {
    if (this.onDemand === null || source === ANY_RANK || source === this.identity.rank) return;
    this.needPair(source, rail).catch(() => undefined);
  }

  /** A pair's key in `pairs`: per peer, its rails, then its rails' data links. */
  private pairKey(peer: number, tag: number): number {
    const rails = this.identity.rails;
    const dataRail = dataLinkRail(tag);
    return peer * 2 * rails + (dataRail === null ? tag : rails + dataRail);
  }

  /**
   * This rank needs the pair's links of `tag` with `peer` (a message, a schedule): its own dial,
   * once (`pairs`). A dial that fails while something still waits for the pair fails the mesh,
   * announced to every rank, with the reason naming the peer and its endpoint: the peer is
   * unreachable, and what needs it cannot end otherwise. In a fault-tolerant job the peer is lost
   * instead (as if its links had closed: `direct peer rank N left`), and the job goes on without it.
   *
   * A dial that fails when nothing waits for the pair any more is nobody's failure, like one no
   * need made (answering the peer's, `acceptedPair`): the peer may have finished and closed
   * meanwhile. A send's own need is met by the peer's dial, not this rank's, so a peer that took
   * the message and ended its session while this rank's dial was under way reset a dial nothing
   * needed (a healthy job failed so: spec/transport/links-on-demand.spec.ts). `pairs` keeps the
   * failure, so the pair's next need meets it.
   */
  private needPair(peer: number, tag: number): Promise<void> {
    return this.pairs.need(this.pairKey(peer, tag)).catch((error: unknown) => {
      if (this.failure === null && !this.awaitsPair(peer, tag)) throw error;
      if (!this.losesPeers || this.failure !== null) {
        this.failDetected(error);
        throw error;
      }
      this.unreachable(peer);
      throw peerLeft(peer);
    });
  }

  /**
   * Whether something here waits for the pair's links of `tag` with `peer`: a receive or probe
   * from it, a send to it whose link has not opened, or (a data link) the collective that opens it.
   */
  private awaitsPair(peer: number, tag: number): boolean {
    if (dataLinkRail(tag) !== null) return true;
    const waitingSends = this.waitingSends[this.linkIndex(peer, tag)]?.length ?? 0;
    return waitingSends > 0 || this.matchers[tag]!.awaits(peer) || this.probes[tag]!.some((probe) => probe.source === peer);
  }

  /** Dials this rank's own link of a pair (`pairs` calls it once per pair, by its key). */
  private async dialPair(key: number): Promise<void> {
    const dialling = this.onDemand!;
    const rails = this.identity.rails;
    const peer = Math.floor(key / (2 * rails));
    const slot = key % (2 * rails);
    const tag = slot < rails ? slot : DATA_LINK + slot - rails;
    await this.dial(peer, tag, dialling.endpoints[peer]![slot % rails]!, dialling);
  }

  /** A fault-tolerant job's peer this rank cannot dial: gone here, as if its links had closed; sends waiting for it fail. */
  private unreachable(peer: number): void {
    for (let rail = 0; rail < this.identity.rails; rail++) {
      this.onDeparture(peer, rail, 'inbound', null);
      const link = this.linkIndex(peer, rail);
      const waiting = this.waitingSends[link] ?? [];
      this.waitingSends[link] = undefined;
      for (const send of waiting.splice(0)) {
        if (!this.pushedBack.has(send.outcome)) continue;
        send.forget();
        send.outcome.error(peerLeft(peer));
      }
    }
  }

  /** Links on demand: `peer`'s link of a pair came in, so this rank opens its own of the pair too. */
  private acceptedPair(peer: number, tag: number): void {
    if (this.onDemand !== null) this.pairs.accepted(this.pairKey(peer, tag));
  }

  /** Dials `peer`'s link `tag` names: a rail (0..63), or the data link of rail r (DATA_LINK + r). */
  private async dial(
    peer: number,
    tag: number,
    endpoint: SocketAddressText,
    { secret, tls, timeoutMs }: { readonly secret: JobSecret | null; readonly tls: TlsSettings | null; readonly timeoutMs: number },
  ): Promise<void> {
    const dataRail = dataLinkRail(tag);
    const reach = `direct peer rank ${peer} ${this.describeLink(tag)} at ${formatEndpoint(endpoint)}`;
    const { rank, worldSize } = this.identity;
    // A socket's own error once connected (the peer reset the link: it was killed while this rank
    // opened it, a link on demand dialled after it died) says the peer is gone, and names it.
    const gone = (error: unknown) =>
      error instanceof RxcclError || typeof (error as NodeJS.ErrnoException | null)?.code !== 'string'
        ? error
        : new PeerLeftError(peer, `its ${this.describeLink(tag)} failed while rank ${rank} opened it: ${(error as Error).message}`, { cause: error });
    const channel = await dialAuthenticated({
      listener: `direct peer rank ${peer}`,
      rank,
      deadline: Date.now() + timeoutMs,
      connect: async (left) => {
        const reads = new DirectReads();
        const socket = await dialSocket(endpoint.host, endpoint.port, tls, left, () => new TimeoutError(`reaching ${reach}`), reads.onread).catch((error: unknown) => {
          if (error instanceof TimeoutError) throw error;
          throw new ConfigurationError(`cannot reach ${reach}: ${(error as Error).message}`, { cause: error });
        });
        return new FrameChannel(socket, reads);
      },
      authenticate: (opened, left) => dialHandshake(opened, { secret, claim: { rank, worldSize, peer, rail: tag }, timeoutMs: left, scheduler: this.scheduler, acceptor: `direct peer rank ${peer}` }),
    }).catch((error: unknown) => {
      throw gone(error);
    });
    try {
      channel.send({ header: peerHelloHeader(this.identity, peer, tag), parts: [] });
      const reply = await firstHandshakeFrame(channel);
      this.checkHello(reply, peer, tag);
      // A link that completes after the set-up failed belongs to no mesh: it is closed (below).
      if (this.failure !== null) throw this.failure;
      if (dataRail !== null) {
        // Ready: the peer sends data only after this, so nothing of it was read here.
        channel.send({ header: peerHelloHeader(this.identity, peer, tag), parts: [] });
        this.dataSockets.receive[peer * this.identity.rails + dataRail] = channel.handOver();
        return;
      }
    } catch (error) {
      channel.destroy();
      throw gone(error);
    }
    this.attach(peer, tag, channel, 'inbound');
  }

  /** A link as errors name it: `rail 1`, or `data link` (of rail 1, where there are several). */
  private describeLink(tag: number): string {
    const dataRail = dataLinkRail(tag);
    if (dataRail === null) return `rail ${tag}`;
    return this.identity.rails === 1 ? 'data link' : `data link of rail ${dataRail}`;
  }

  /**
   * Links every handshaken connection (`PeerAccepts` handshakes them in parallel, each within its
   * own timeout, so a silent or slow stranger never holds up the peers behind it).
   */
  private acceptAll(incoming: AsyncIterable<AcceptedPeer>, expected: number, timeoutMs: number): Promise<void> {
    if (expected === 0) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      let accepted = 0;
      const take = async () => {
        for await (const peer of incoming) {
          void this.acceptOne(peer, timeoutMs).then((linked) => {
            accepted += linked ? 1 : 0;
            if (accepted === expected) resolve();
          });
        }
      };
      take().catch(reject);
    });
  }

  /** One handshaken connection: check its hello, link it; a stranger is refused. */
  private async acceptOne({ listenerRail, channel, hello }: AcceptedPeer, timeoutMs: number): Promise<boolean> {
    try {
      const peer = hello.header.sourceRank;
      const rail = Number(hello.header.tag);
      // A data link comes to its rail's endpoint.
      const dataRail = dataLinkRail(rail);
      if (listenerRail !== null && listenerRail !== (dataRail ?? rail)) {
        throw new ProtocolError(`direct peer rank ${peer} dialled the rail ${listenerRail} listener for ${this.describeLink(rail)}`);
      }
      this.checkHello(hello, peer, rail);
      if (dataRail !== null) return await this.acceptDataLink(peer, dataRail, channel, timeoutMs);
      if (this.outbound[this.linkIndex(peer, rail)] !== undefined) throw new ProtocolError(`direct peer rank ${peer} rail ${rail} connected twice`);
      if (this.failure !== null) throw this.failure;
      channel.send({ header: peerHelloHeader(this.identity, peer, rail), parts: [] });
      this.attach(peer, rail, channel, 'outbound');
      this.sendWaiting(this.linkIndex(peer, rail), rail, peer, channel);
      this.acceptedPair(peer, rail);
      return true;
    } catch (error) {
      // A stray or crossed connection is told why and dropped; the mesh keeps waiting.
      refusePeer(channel, this.identity, error);
      return false;
    }
  }

  /**
   * The data link of `rail` that `peer` dialled: answer its hello, wait for its ready (a second
   * PeerHello, after which it sends nothing), and keep the quiet socket for the native data plane.
   */
  private async acceptDataLink(peer: number, rail: number, channel: FrameChannel, timeoutMs: number): Promise<boolean> {
    const tag = DATA_LINK + rail;
    const link = `direct peer rank ${peer} ${this.describeLink(tag)}`;
    const at = peer * this.identity.rails + rail;
    if (this.dataSockets.send[at] !== undefined) throw new ProtocolError(`${link} connected twice`);
    if (this.failure !== null) throw this.failure;
    channel.send({ header: peerHelloHeader(this.identity, peer, tag), parts: [] });
    const ready = await firstValueFrom(
      channel.frames$.pipe(timeout({ first: timeoutMs, scheduler: this.scheduler, with: () => throwError(() => new TimeoutError(`${link} ready (${timeoutMs} ms)`)) })),
    ).catch((error: unknown) => {
      if (error instanceof EmptyError) throw new ChannelClosedError('direct peer closed during the data link handshake');
      throw error;
    });
    this.checkHello(ready, peer, tag);
    if (this.failure !== null) throw this.failure;
    this.dataSockets.send[at] = channel.handOver();
    for (const arrived of this.dataArrivals.get(at) ?? []) arrived();
    this.dataArrivals.delete(at);
    this.acceptedPair(peer, tag);
    return true;
  }

  private checkHello(frame: Frame, peer: number, rail: number): void {
    checkHello(frame, this.identity, peer, rail);
    const { rank, rails } = this.identity;
    const dataRail = dataLinkRail(rail);
    if (dataRail !== null) {
      if (this.identity.dataLinks !== true) {
        throw new ProtocolError(`direct peer rank ${peer} opened a native data link, but rank ${rank} does not use the native data plane (GX1_DATA_PLANE must be the same on every rank)`);
      }
      if (dataRail >= rails) throw new ProtocolError(`direct peer rank ${peer} opened the data link of rail ${dataRail}, but this job has ${rails} rail${rails === 1 ? '' : 's'} (0..${rails - 1})`);
      return;
    }
    if (rail >= rails) throw new ProtocolError(`direct peer link is for rail ${rail}, but this job has ${rails} rail${rails === 1 ? '' : 's'} (0..${rails - 1})`);
  }

  /**
   * An inbound link brings `peer`'s messages; an outbound one carries this rank's to `peer` and
   * brings nothing but an Abort (or the link's end).
   */
  private attach(peer: number, rail: number, channel: FrameChannel, direction: 'inbound' | 'outbound'): void {
    const inbound = direction === 'inbound';
    if (inbound) channel.allocatePayload = (header) => this.destinationOf(peer, rail, header) ?? this.pool.take(header.payloadBytes);
    (inbound ? this.inbound : this.outbound)[this.linkIndex(peer, rail)] = channel;
    // Unreferenced from the start: a session references its links only while it has work pending
    // (EventLoopHold reads this list at each change), and a link a peer opens on demand while this
    // rank is idle must not keep a process that never closes its session alive.
    channel.socket.unref();
    this.linkSockets.push(channel.socket);
    this.readers.push(
      channel.frames$.subscribe({
        next: (frame) => (inbound ? this.onLinkFrame(peer, rail, frame) : this.onReverseFrame(peer, rail, frame)),
        error: (error: unknown) => this.onDeparture(peer, rail, direction, error),
        complete: () => this.onDeparture(peer, rail, direction, null),
      }),
    );
  }

  private allLinks(): FrameChannel[] {
    return [...this.outbound, ...this.inbound].filter((link) => link !== undefined);
  }

  /** Where a link's entries are in the per-link arrays. */
  private linkIndex(peer: number, rail: number): number {
    this.checkLink(peer, rail);
    return peer * this.identity.rails + rail;
  }

  /** Refuses a peer (null: any) or rail out of range: it would index another link's entries. */
  private checkLink(peer: number | null, rail: number): void {
    const { worldSize, rails } = this.identity;
    const peerInRange = peer === null || (Number.isInteger(peer) && peer >= 0 && peer < worldSize);
    if (!peerInRange || !(Number.isInteger(rail) && rail >= 0 && rail < rails)) {
      throw new ConfigurationError(`rank ${peer ?? 'any'} rail ${rail} is not a link of this mesh (${worldSize} ranks, ${rails} rail${rails === 1 ? '' : 's'})`);
    }
  }

  /** The memory a posted receive named for a message `peer` is starting to send, if it fits. */
  private destinationOf(peer: number, rail: number, header: FrameHeader): Uint8Array | null {
    if (header.opcode !== Opcode.Send || header.sourceRank !== peer) return null;
    const into = this.matchers[rail]!.peek(peer, headerKey(header))?.into ?? null;
    return into !== null && into.length === header.payloadBytes ? into : null;
  }

  /** What comes back on a link this rank sends on: only an Abort is allowed. */
  private onReverseFrame(peer: number, rail: number, frame: Frame): void {
    if (frame.header.opcode === Opcode.Abort) {
      this.onLinkFrame(peer, rail, frame);
      return;
    }
    this.failDetected(new ProtocolError(`direct peer rank ${peer} sent ${opcodeName(frame.header.opcode)} on the rail ${rail} link it dialled, which carries data only from rank ${this.identity.rank} to rank ${peer}`));
  }

  private onLinkFrame(peer: number, rail: number, frame: Frame): void {
    // A failed mesh still drains its links (no peer blocks on it) but keeps nothing more.
    if (this.failure !== null) return;
    const h = frame.header;
    try {
      if (h.opcode === Opcode.Abort) {
        const reason = abortReason(frame);
        throw new RemoteAbortError(reason, `direct peer rank ${peer} aborted: ${reason}`);
      }
      if (h.opcode !== Opcode.Send || h.sourceRank !== peer || h.destinationRank !== this.identity.rank || !h.uniqueId.equals(this.identity.uniqueId)) {
        throw new ProtocolError(`unexpected ${opcodeName(h.opcode)} frame from direct peer rank ${peer} on rail ${rail}`);
      }
      if (!this.onMessage(rail, frame)) return;
      const link = this.linkIndex(peer, rail);
      const parked = this.unmatchedBytes[link]! + frame.payload.length;
      this.unmatchedBytes[link] = parked;
      if (parked > this.unmatchedBytesLimit) throw this.overBudget(peer, rail, parked);
    } catch (error) {
      if (error instanceof RemoteAbortError) this.fail(error);
      else this.failDetected(error);
    }
  }

  /** A failure found here: announce it (once, while the mesh has not failed yet), then fail. */
  private failDetected(error: unknown): void {
    if (this.failure !== null) return;
    try {
      this.onDetectedFailure(error);
    } finally {
      this.fail(error);
    }
  }

  private overBudget(peer: number, rail: number, parked: number): ConfigurationError {
    const tags = [...new Set(this.matchers[rail]!.waitingMessages().filter((frame) => frame.header.sourceRank === peer).map((frame) => headerKey(frame.header)))];
    return new ConfigurationError(
      `rank ${peer} parked ${parked} unmatched bytes at rank ${this.identity.rank} on rail ${rail} (${keysText(tags)}), ` +
        `over the limit of ${this.unmatchedBytesLimit} bytes: post receives for them, or raise the limit (unmatchedBytesLimit, GX1_P2P_UNMATCHED_BYTES)`,
    );
  }

  /** Hands a message to the oldest matching receive; returns true if it had to wait instead. */
  private onMessage(rail: number, frame: Frame): boolean {
    if (this.forgotten.size > 0 && this.forgotten.has(frame.header.communicator)) {
      this.pool.give(frame.payload);
      return false;
    }
    const receive = this.matchers[rail]!.offer(frame.header.sourceRank, headerKey(frame.header), frame);
    if (receive === null) {
      this.answerProbes(rail, frame.header);
      return true;
    }
    deliver(frame, receive);
    return false;
  }

  /** A waiting message was taken by a receive: it no longer counts against its sender. */
  private countOff(rail: number, frame: Frame): void {
    const peer = frame.header.sourceRank;
    if (peer === this.identity.rank) return;
    this.unmatchedBytes[this.linkIndex(peer, rail)]! -= frame.payload.length;
  }

  /**
   * A link of `peer` ended: it takes no more messages. Receives from it on `rail` fail only once
   * the inbound link ended, since TCP orders nothing across two sockets: a peer that finished its
   * last collective and left may end the link this rank sends on before its last messages on the
   * other one arrived (a broadcast's root, say), and those must still be delivered.
   */
  private onDeparture(peer: number, rail: number, direction: 'inbound' | 'outbound', error: unknown): void {
    if (error instanceof ProtocolError) {
      // A corrupt link is a failure of the job, not a departure: keep the cause.
      this.failDetected(new ProtocolError(`direct peer rank ${peer} sent a corrupt frame: ${error.message}`));
      return;
    }
    this.departed.add(peer);
    const link = this.linkIndex(peer, rail);
    if (direction === 'outbound' || this.inboundEnded[link]) return;
    this.inboundEnded[link] = true;
    // Gone, once every link it sends on ended: nothing it sent is still on its way.
    let allEnded = true;
    for (let each = 0; each < this.identity.rails; each++) if (!this.inboundEnded[this.linkIndex(peer, each)]) allEnded = false;
    if (allEnded) this.onPeerDeparted(peer);
    const left = peerLeft(peer);
    const { rank, worldSize } = this.identity;
    let everyPeerLeft = true;
    for (let other = 0; other < worldSize; other++) if (other !== rank && !this.inboundEnded[this.linkIndex(other, rail)]) everyPeerLeft = false;
    const waitsOnIt = (source: number) => source === peer || (source === ANY_RANK && everyPeerLeft);
    for (const receive of this.matchers[rail]!.takeReceives(waitsOnIt)) receive.outcome.error(left);
    this.endProbes(rail, waitsOnIt, left);
  }

  /** A message now waits on `rail`: every probe it matches is told, and ends. */
  private answerProbes(rail: number, header: FrameHeader): void {
    if (this.probes[rail]!.length === 0) return;
    const key = headerKey(header);
    for (const probe of this.takeProbes(rail, (each) => (each.source === ANY_RANK || each.source === header.sourceRank) && each.key === key)) probe.outcome.next(header);
  }

  /** Fails, with `error`, every probe on `rail` waiting on a source `select` picks. */
  private endProbes(rail: number, select: (source: number) => boolean, error: unknown): void {
    for (const probe of this.takeProbes(rail, (each) => select(each.source))) probe.outcome.error(error);
  }

  /** Removes the probes on `rail` that `picked` picks, with their deadlines, and returns them in order. */
  private takeProbes(rail: number, picked: (probe: PostedProbe) => boolean): PostedProbe[] {
    // In place: a waiting probe's timeout and withdrawal hold this array.
    const probes = this.probes[rail]!;
    const taken = probes.filter(picked);
    for (const probe of taken) {
      removeProbe(probes, probe);
      this.deadlines.remove(probe.deadline);
    }
    return taken;
  }
}

function peerLeft(peer: number): PeerLeftError {
  return new PeerLeftError(peer);
}

/** Takes `probe` out of `probes`; false if it was no longer there. */
function removeProbe(probes: PostedProbe[], probe: PostedProbe): boolean {
  const index = probes.indexOf(probe);
  if (index >= 0) probes.splice(index, 1);
  return index >= 0;
}

function deliver(frame: Frame, receive: PostedReceive): void {
  const h = frame.header;
  if (h.elementType !== receive.shape.elementType || (receive.shape.count !== null && h.elementCount !== receive.shape.count)) {
    receive.outcome.error(
      new ConfigurationError(
        `point-to-point ${keyText(headerKey(h))} contract mismatch: send ${elementTypeName(h.elementType)}/${h.elementCount} ` +
          `receive ${elementTypeName(receive.shape.elementType)}/${receive.shape.count ?? 'any'} (rank ${h.sourceRank} -> rank ${h.destinationRank})`,
      ),
    );
    return;
  }
  receive.outcome.next(frame);
}


function firstHandshakeFrame(channel: FrameChannel): Promise<Frame> {
  return firstValueFrom(channel.frames$).catch((error: unknown) => {
    if (error instanceof EmptyError) throw new ChannelClosedError('direct peer closed during the handshake');
    throw error;
  });
}
