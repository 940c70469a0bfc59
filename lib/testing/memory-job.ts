/**
 * A job in memory: every rank's `Links` and `CollectiveContext`, with the real agreement and the
 * coordinator's real routing (`routeCollective`), the real matching (`TagMatcher`) and real GX1
 * headers on every message, but no sockets. Algorithms and sessions run on it exactly as on a
 * network, so a world of 8 ranks runs in one process in microseconds per message.
 *
 * Time is the `scheduler`'s (pass a VirtualTimeScheduler and every timeout is exact); message
 * order is `interleave`'s (a fast-check scheduler releases every delivery: per link in order, as
 * the Links contract says, across links in any order it picks). Link faults (drop, delay,
 * corrupt) apply as messages are sent.
 */
import type { Scheduler as InterleaveScheduler } from 'fast-check';
import { asyncScheduler, catchError, Observable, of, type SchedulerLike, type Subscriber, throwError, timer } from 'rxjs';
import { describeTag } from '../collectives/describe-tag.js';
import type { CollectiveContext } from '../collectives/algorithm.js';
import { routeCollective } from '../coordinator/route-collective.js';
import { ConfigurationError, failureText, RemoteAbortError, TimeoutError } from '../errors.js';
import { CollectiveAgreement } from '../protocol/agreement.js';
import { ANY_RANK, FLAG_P2P_CHANNEL, FRAME_HEADER_BYTES } from '../protocol/constants.js';
import { makeHeader, type Frame } from '../protocol/frame.js';
import { decodeHeader, encodeHeader, type FrameHeader } from '../protocol/header.js';
import { headerKey, keyFields } from '../protocol/message-key.js';
import { Opcode } from '../protocol/opcode.js';
import { UniqueId } from '../protocol/unique-id.js';
import { BufferPool } from '../transport/buffer-pool.js';
import { COLLECTIVE_RESPONSE_GRACE_MS, type CollectiveRequest } from '../transport/collective-channel.js';
import { LazyDeadlines } from '../transport/lazy-deadlines.js';
import type { ExpectedShape, MessageShape, SessionLinks } from '../transport/links/links.js';
import { RankLosses } from '../transport/rank-losses.js';
import { SessionFailure } from '../transport/session-failure.js';
import { TagMatcher } from '../transport/tag-matcher.js';
import { MAX_TIMER_DELAY_MS } from '../transport/transport-kind.js';
import { concatBytes } from './bytes.js';
import { describeDataLinkMessage, MEMORY_DATA_LINK_TAG, memoryDataPlane } from './memory-data-plane.js';
import { previewPayload } from './payload-preview.js';
import type { NativePlane } from '../collectives/schedule/native-plane.js';
import { ScheduleCache } from '../collectives/schedule/schedule-cache.js';
import { flipBit } from './arbitraries/corruptions.js';
import type { TopologyGroups } from '../topology/topology-groups.js';
import { type LinkFault, partitionHold } from './faults.js';

/** What a payload given back (`links.release`) is overwritten with in memory jobs. */
export const RELEASED_BYTE = 0xa5;

/** One message on a link: its encoded GX1 header, then its payload. */
interface Message {
  readonly header: Uint8Array;
  readonly payload: Uint8Array;
  readonly rail: number;
  readonly from: number;
  readonly to: number;
  /** With `sendsCompleteOnArrival`: the send waiting for this arrival (see `PendingSend`). */
  readonly sent?: PendingSend;
  /** How a counterexample names its delivery. */
  readonly label: string;
}

/** A send that completes when its message arrives. */
interface PendingSend {
  /** The sender's memory, and what it held when sent. */
  readonly source: Uint8Array;
  readonly bytes: Uint8Array;
  readonly label: string;
  readonly complete: () => void;
  /** Its caller gave up on it (an abort ended it): the memory is the caller's again, nothing is checked. */
  withdrawn: boolean;
}

/** A message that arrived: its header decoded (and so checked), waiting for its receive. */
interface Arrived {
  readonly message: Message;
  readonly header: FrameHeader;
}

interface Posted {
  readonly shape: ExpectedShape;
  readonly subscriber: Subscriber<Uint8Array>;
}

/** One rank of a `memoryJob`: what a session's collectives run on. */
export interface MemoryRank {
  /** The rank's links to every other rank (messages delivered in memory). */
  readonly links: SessionLinks;
  /** What a collective of this rank runs with (its links, agreement, timeouts, planes). */
  readonly context: CollectiveContext;
  /** The model of the native data plane (`dataPlane: 'native'`), else null. */
  readonly nativePlane: NativePlane | null;
  /** This rank's one failure: an abort from any rank, a timeout, a link error. */
  readonly failure: SessionFailure;
  /** With `faultTolerant`: the ranks this rank heard were lost (`kill`), else null. */
  readonly losses: RankLosses | null;
}

/** How a `memoryJob` is set up: rails, orders, planes, faults and its clock. */
export interface MemoryJobOptions {
  readonly rails?: number;
  readonly ringOrder?: readonly number[];
  readonly ringChannels?: number;
  /** The topology groups hierarchical algorithms follow (default none). */
  readonly topologyGroups?: TopologyGroups;
  /** The rails in the order the JS plane's pieces take them (GX1_RAIL_ORDER; default 0, 1, ...). */
  readonly railOrder?: readonly number[];
  readonly pieceBytes?: number;
  /** The session timeout: collectives at the coordinator and receives on the links (default 60 s). */
  readonly timeoutMs?: number;
  /** The clock of every timeout (default asyncScheduler; a VirtualTimeScheduler makes them exact). */
  readonly scheduler?: SchedulerLike;
  readonly agreement?: CollectiveContext['agreement'];
  /**
   * `native`: every rank has a model of the native data plane (`memoryDataPlane`) over the links,
   * as a tcp_peer job on one host has by default; default `js`, none.
   */
  readonly dataPlane?: 'native' | 'js';
  /** Per-rank changes to the context (say, a rank configured with another ring). */
  readonly contextOf?: (rank: number) => Partial<CollectiveContext>;
  /** Drops, delays and corruptions of messages between ranks. */
  readonly faults?: readonly LinkFault[];
  /** Chooses the order of every delivery (fast-check's `fc.scheduler()`); default: at once, in send order. */
  readonly interleave?: InterleaveScheduler;
  /**
   * Sends complete when their message arrives, not when it is sent (as a send the socket pushed
   * back completes once it drained), and each arrival checks that the sender left the memory it
   * sent from untouched until then, as `Links.send` requires: a send whose memory changed is
   * recorded in `traffic.overwrittenSends`. With `interleave`, a test sees every algorithm's sends
   * outstanding for as long as the interleaving likes.
   */
  readonly sendsCompleteOnArrival?: boolean;
  /**
   * A fault-tolerant job: `kill` does not end it; every other rank hears the rank was lost (as the
   * coordinator's notice says), and the in-memory coordinator serves the world no more.
   */
  readonly faultTolerant?: boolean;
  /** Put before every delivery's label (a restarted job's `gen 1 `), so a counterexample tells the runs of a job apart. */
  readonly labelPrefix?: string;
}

/** What the links carried, for tests that check which path the data took. */
/** What a memory job carried; `JSON.stringify` writes it with each tag as a decimal string. */
export interface MemoryTraffic {
  /**
   * Every message between ranks in send order: `index` counts the messages of its link (`from` to
   * `to`, any rail) from 0, as link faults do; `preview` shows its first elements.
   */
  readonly messages: { from: number; to: number; rail: number; tag: bigint; bytes: number; index: number; preview: string }[];
  readonly coordinated: number;
  /** Who ended the job, with what (`rank` null: the coordinator). */
  readonly aborts: { rank: number | null; reason: string }[];
  /** With `interleave`: every delivery, in the order it was chosen. */
  readonly deliveries: string[];
  /** With `sendsCompleteOnArrival`: the sends whose memory was written before they completed. */
  readonly overwrittenSends: string[];
}

/** A job of ranks in one process, linked in memory: `memoryJob`'s result. */
export interface MemoryJob {
  /** The ranks, by rank. */
  readonly ranks: MemoryRank[];
  /** Every message, agreement, abort and delivery so far. */
  readonly traffic: MemoryTraffic;
  /** Ends the job on every rank with `reason`, as an Abort from `rank` (null: the coordinator) would. */
  abort(reason: string, rank: number | null): void;
  /**
   * Rank `rank` is gone: nothing reaches it any more, and the coordinator ends the job naming it
   * (with `faultTolerant`: tells every other rank it was lost, and the job goes on).
   */
  kill(rank: number): void;
  /**
   * Every rank is gone at once, silently (a worker group stopped to restart): no abort, nothing
   * delivered or recorded any more, every receive left waiting.
   */
  stop(): void;
}

/** `traffic` with a `toJSON`: JSON.stringify cannot write a bigint, so the tags go out as decimal strings. */
function jsonSafe<Traffic extends MemoryTraffic>(traffic: Traffic): Traffic {
  return Object.defineProperty(traffic, 'toJSON', { value: () => ({ ...traffic, messages: traffic.messages.map((message) => ({ ...message, tag: message.tag.toString() })) }) });
}

/** A copy of `traffic` as it stands now (a stopped generation's, which later deliveries must not change). */
export function snapshotTraffic(traffic: MemoryTraffic): MemoryTraffic {
  return jsonSafe({
    messages: traffic.messages.map((message) => ({ ...message })),
    coordinated: traffic.coordinated,
    aborts: traffic.aborts.map((abort) => ({ ...abort })),
    deliveries: [...traffic.deliveries],
    overwrittenSends: [...traffic.overwrittenSends],
  });
}

/**
 * A job of `worldSize` ranks in one process, their links in memory and a coordinator's agreement
 * modelled, on `options.scheduler`'s clock: collectives run on it exactly as on sockets, and its
 * traffic is recorded. What `simulateJob` runs on; also for tests of one collective.
 */
export function memoryJob(worldSize: number, options: MemoryJobOptions = {}): MemoryJob {
  const rails = options.rails ?? 1;
  const clock = options.scheduler ?? asyncScheduler;
  const timeoutMs = options.timeoutMs ?? 60_000;
  const faults = options.faults ?? [];
  const uniqueId = UniqueId.random();
  const matchers = Array.from({ length: worldSize }, () => Array.from({ length: rails }, () => new TagMatcher<Arrived, Posted>()));
  const failures = Array.from({ length: worldSize }, () => new SessionFailure());
  const losses = Array.from({ length: worldSize }, () => (options.faultTolerant === true ? new RankLosses() : null));
  const dead = new Array<boolean>(worldSize).fill(false);
  /**
   * Links (sender, receiver, rail) that carried a corrupt frame: a real link's decoder stops there
   * and the connection ends, so nothing later on it arrives (delivered, a later message would be
   * taken for the lost one by a receiver that counts on the link's order, as the data plane does).
   */
  const broken = new Set<string>();
  const agreement = new CollectiveAgreement(worldSize);
  const traffic = jsonSafe<{ -readonly [Key in keyof MemoryTraffic]: MemoryTraffic[Key] }>({ messages: [], coordinated: 0, aborts: [], deliveries: [], overwrittenSends: [] });
  /** Messages sent on each link (by `from * worldSize + to`), in order, not yet delivered. */
  const inFlight = new Map<number, Message[]>();
  /** Per link: messages whose delay has passed and that are not released yet; links with a release pending. */
  const ready = new Map<number, number>();
  const releasing = new Set<number>();
  /**
   * Releases the oldest ready message of `link`, one at a time: the next is offered to the
   * interleaving only once this one arrived, so each delivery's label names the message it
   * delivers (links are FIFO whatever the interleaving).
   */
  const pump = (link: number) => {
    if (releasing.has(link) || (ready.get(link) ?? 0) === 0) return;
    const queue = inFlight.get(link)!;
    releasing.add(link);
    ready.set(link, ready.get(link)! - 1);
    release(queue[0]!.label, () => {
      releasing.delete(link);
      arrive(queue.shift()!);
      pump(link);
    });
  };
  const sentOn = new Array<number>(worldSize * worldSize).fill(0);
  const ringOrder = options.ringOrder ?? Array.from({ length: worldSize }, (_, rank) => rank);

  /** Runs `delivery` now (or `later`, on the clock), or when the interleaving scheduler picks it. */
  let stopped = false;
  const release = (name: string, delivery: () => void, later = false) => {
    if (stopped) return;
    if (options.interleave !== undefined) {
      const label = `${options.labelPrefix ?? ''}${name}`;
      void options.interleave.schedule(Promise.resolve(label), label).then(() => {
        if (stopped) return;
        traffic.deliveries.push(label);
        delivery();
      });
    } else if (later) clock.schedule(() => stopped || delivery());
    else delivery();
  };

  // An Abort is a message too: the other ranks learn of it a moment later (and may meanwhile
  // find the same failure themselves). A rank's Abort reaches them as the coordinator words it.
  const abort = (reason: string, rank: number | null) => {
    if (stopped) return;
    traffic.aborts.push({ rank, reason });
    const text = rank === null ? reason : `rank ${rank} aborted: ${reason}`;
    release(`abort from ${rank === null ? 'coordinator' : `rank ${rank}`}`, () => {
      for (const failure of failures) failure.fail(new RemoteAbortError(text));
    }, true);
  };

  const coordinator = coordinatorInMemory(worldSize, {
    uniqueId,
    agreement,
    clock,
    timeoutMs,
    release,
    onRound: () => (traffic.coordinated += 1),
    abort: (reason) => abort(reason, null),
  });

  const arrive = (message: Message) => {
    const sent = message.sent;
    if (sent !== undefined && !sent.withdrawn) {
      if (!sameBytes(sent.source, sent.bytes)) traffic.overwrittenSends.push(sent.label);
      sent.complete();
    }
    const link = `${message.from}>${message.to}@${message.rail}`;
    if (dead[message.to] || broken.has(link)) return;
    let header: FrameHeader;
    try {
      header = decodeHeader(message.header);
    } catch (error) {
      // What a mesh does with a corrupt frame: the receiver ends the job, naming the sender, and the link.
      broken.add(link);
      abort(`rank ${message.to} rail ${message.rail}: corrupt frame from rank ${message.from}: ${failureText(error)}`, message.to);
      return;
    }
    const arrived = { message, header };
    const posted = matchers[message.to]![message.rail]!.offer(message.from, headerKey(header), arrived);
    if (posted !== null) deliver(arrived, posted);
  };

  /**
   * Sends one message; `complete` is called once the send is done: once it is queued (so a send
   * started by its completion goes behind it), or on arrival with `sendsCompleteOnArrival`.
   * Returns what withdraws a send its caller gave up on.
   */
  const send = (rank: number, rail: number, peer: number, tag: bigint, bytes: Uint8Array, shape: MessageShape, complete: () => void): (() => void) => {
    // A stopped job's processes are gone: what they would still send never leaves.
    if (stopped) return () => undefined;
    const link = rank * worldSize + peer;
    const index = sentOn[link]!++;
    // What a counterexample shows of this message: its link, tag, index on the link and payload.
    const dataLink = tag === MEMORY_DATA_LINK_TAG;
    const preview = dataLink ? describeDataLinkMessage(bytes) : previewPayload(shape.elementType, bytes);
    traffic.messages.push({ from: rank, to: peer, rail, tag, bytes: bytes.length, index, preview });
    const label = `${rank}>${peer} rail ${rail} ${dataLink ? '' : `${describeTag(tag)} `}#${index} ${preview}`;
    const fault = faults.find(
      (candidate) => candidate.kind !== 'partition' && candidate.from === rank && candidate.to === peer && (candidate.kind === 'delay' || candidate.message === undefined || candidate.message === index),
    );
    const held = partitionHold(faults, rank, peer, clock.now());
    if (fault?.kind === 'drop' || held === Infinity || dead[rank]) {
      complete();
      return () => undefined;
    }
    const onArrival = options.sendsCompleteOnArrival === true;
    const header = encodeHeader(
      makeHeader(
        { uniqueId, opcode: Opcode.Send, worldSize, sourceRank: rank, destinationRank: peer, ...keyFields(tag), elementType: shape.elementType, elementCount: shape.count, flags: FLAG_P2P_CHANNEL },
        bytes.length,
      ),
    );
    const payload = bytes.slice();
    const sent: PendingSend | undefined = onArrival ? { source: bytes, bytes: payload, label, complete, withdrawn: false } : undefined;
    let message: Message = { header, payload, rail, from: rank, to: peer, label, ...(sent ? { sent } : {}) };
    if (fault?.kind === 'corrupt') {
      const corrupted = flipBit(concatBytes([header, message.payload]), fault.bit % ((FRAME_HEADER_BYTES + bytes.length) * 8));
      message = { ...message, header: corrupted.subarray(0, FRAME_HEADER_BYTES), payload: corrupted.subarray(FRAME_HEADER_BYTES) };
    }
    const queue = inFlight.get(link) ?? [];
    inFlight.set(link, queue);
    queue.push(message);
    const next = () => {
      ready.set(link, (ready.get(link) ?? 0) + 1);
      pump(link);
    };
    const delayMs = Math.max(fault?.kind === 'delay' ? fault.ms : 0, held);
    if (delayMs > 0) timer(delayMs, clock).subscribe(next);
    else next();
    if (!onArrival) complete();
    return () => {
      if (sent !== undefined) sent.withdrawn = true;
    };
  };

  const ranks = Array.from({ length: worldSize }, (_, rank): MemoryRank => {
    const failure = failures[rank]!;
    // One lazy timer per rank, for its receives and its collectives (a session has one in its
    // mesh and one in its context).
    const deadlines = new LazyDeadlines(clock);
    const links: SessionLinks = {
      rank,
      worldSize,
      rails,
      send: (rail, peer, tag, bytes, shape) =>
        new Observable<void>((subscriber) =>
          send(rank, rail, peer, tag, bytes, shape, () => {
            subscriber.next();
            subscriber.complete();
          }),
        ).pipe(failure.untilEnded()),
      receive: (rail, peer, tag, shape, _into, waitMs) =>
        new Observable<Uint8Array>((subscriber) => {
          const posted: Posted = { shape, subscriber };
          const matcher = matchers[rank]![rail]!;
          const arrived = matcher.post(peer === ANY_RANK ? ANY_RANK : peer, tag, posted);
          if (arrived !== null) {
            deliver(arrived, posted);
            return undefined;
          }
          // Past the session timeout plus a grace unless the caller says how long, so that a
          // collective's own timeout, which names the missing ranks, speaks first.
          const deadline = deadlines.add(Math.min(waitMs ?? timeoutMs + COLLECTIVE_RESPONSE_GRACE_MS, MAX_TIMER_DELAY_MS), () =>
            subscriber.error(new TimeoutError(`rank ${rank} rail ${rail} receive from rank ${peer === ANY_RANK ? 'any' : peer} ${describeTag(tag)}`)),
          );
          return () => {
            deadlines.remove(deadline);
            matcher.withdraw(posted);
          };
        }).pipe(
          // As the real links: a failed receive takes the whole job down with its reason.
          catchError((error: unknown) => {
            abort(failureText(error), rank);
            return throwError(() => error);
          }),
          failure.untilEnded(),
        ),
      // A received payload here is this message's own copy: poisoned when given back, so an
      // algorithm that still reads (or keeps a view of) what it released gets wrong results.
      release: (bytes) => bytes.fill(RELEASED_BYTE),
      heartbeat: () => of(undefined).pipe(failure.untilEnded()),
      abort: (message) => {
        abort(message, rank);
        return 1;
      },
      close: () => undefined,
    };
    const meshSequence = { next: 0n };
    const nativePlane = options.dataPlane === 'native' ? memoryDataPlane(links, deadlines) : null;
    const context: CollectiveContext = {
      rank,
      worldSize,
      coordinate: (request, parts) => coordinator.exchange(rank, request, parts).pipe(failure.untilEnded()),
      scratch: new BufferPool(),
      ringOrder,
      ringChannels: options.ringChannels ?? 1,
      topologyGroups: options.topologyGroups ?? null,
      topology: null,
      railOrder: options.railOrder ?? null,
      profile: null,
      pieceBytes: options.pieceBytes ?? 1 << 20,
      agreement: options.agreement ?? 'coordinator',
      nextMeshSequence: () => meshSequence.next++,
      timeoutMs: () => timeoutMs,
      deadlines,
      abort: (reason) => abort(reason, rank),
      // As a session's: a fault-tolerant job loses a peer whose links ended.
      peerLost: losses[rank] === null ? null : (peer, reason) => losses[rank]!.needed(peer, reason),
      nativePlane,
      schedules: new ScheduleCache(),
      ...options.contextOf?.(rank),
    };
    return { links, context, failure, nativePlane, losses: losses[rank]! };
  });

  return {
    ranks,
    traffic,
    abort,
    kill: (rank) => {
      if (dead[rank]) return;
      dead[rank] = true;
      for (const matcher of matchers[rank]!) matcher.takeReceives(() => true);
      if (options.faultTolerant !== true) {
        abort(`rank ${rank} disconnected before collective sequence ${agreement.nextSequence()}`, null);
        return;
      }
      coordinator.loseWorld();
      // One notice per rank, each its own delivery: an interleaving may order them any way.
      losses.forEach((heard, told) => {
        if (heard !== null && told !== rank) release(`coordinator>${told} notice: rank ${rank} lost`, () => heard.notice(rank, 'killed'), true);
      });
    },
    stop: () => {
      stopped = true;
      dead.fill(true);
    },
  };
}

function deliver({ message, header }: Arrived, posted: Posted): void {
  const { elementType, elementCount: count } = header;
  if (elementType !== posted.shape.elementType || (posted.shape.count !== null && count !== posted.shape.count)) {
    posted.subscriber.error(
      new ConfigurationError(`rank ${message.to} rail ${message.rail}: message from rank ${message.from} has shape ${JSON.stringify({ elementType, count })}, expected ${JSON.stringify(posted.shape)}`),
    );
    return;
  }
  posted.subscriber.next(message.payload);
  posted.subscriber.complete();
}

interface CoordinatorParts {
  readonly uniqueId: UniqueId;
  readonly agreement: CollectiveAgreement;
  readonly clock: SchedulerLike;
  readonly timeoutMs: number;
  readonly release: (label: string, delivery: () => void) => void;
  readonly onRound: () => void;
  readonly abort: (reason: string) => void;
}

/**
 * The coordinator's collective loop in memory: per sequence one request from every rank, routed by
 * `routeCollective`; the timeout starts at the first request and names the ranks still missing.
 */
function coordinatorInMemory(worldSize: number, parts: CoordinatorParts) {
  const { uniqueId, agreement, clock } = parts;
  const sequences = new Array<bigint>(worldSize).fill(0n);
  let round: ({ frame: Frame; subscriber: Subscriber<Frame> } | undefined)[] = new Array(worldSize).fill(undefined);
  let arrived = 0;
  let deadline: { unsubscribe(): void } | null = null;
  let timeoutMs = parts.timeoutMs;
  // A fault-tolerant job that lost a rank: the world's rounds are over (no answer, no timeout).
  let worldLost = false;

  const exchange = (rank: number, request: CollectiveRequest, payloadParts: readonly Uint8Array[]) =>
    new Observable<Frame>((subscriber) => {
      if (worldLost) return;
      const payload = concatBytes(payloadParts);
      const frame = { header: makeHeader({ ...request, uniqueId, sourceRank: rank, worldSize, sequence: sequences[rank]! }, payload.length), payload };
      sequences[rank]! += 1n;
      round[rank] = { frame, subscriber };
      arrived += 1;
      if (arrived === 1) {
        const sequence = agreement.nextSequence();
        deadline = timer(Math.min(timeoutMs, MAX_TIMER_DELAY_MS), clock).subscribe(() => {
          const missing = round.flatMap((entry, missingRank) => (entry === undefined ? [missingRank] : []));
          parts.abort(failureText(new TimeoutError(`collective sequence ${sequence}; missing ranks [${missing.join(',')}]`)));
        });
      }
      if (arrived < worldSize) return;
      deadline?.unsubscribe();
      const entries = round as { frame: Frame; subscriber: Subscriber<Frame> }[];
      round = new Array(worldSize).fill(undefined);
      arrived = 0;
      parts.onRound();
      try {
        const sequence = entries[0]!.frame.header.sequence;
        const responses = routeCollective(agreement, uniqueId, sequence, entries.map((entry) => entry.frame));
        if (entries[0]!.frame.header.opcode === Opcode.SetTimeout) timeoutMs = Number(entries[0]!.frame.header.tag);
        responses.forEach((response, destination) =>
          parts.release(`coordinator>${destination} sequence ${sequence}`, () => {
            const target = entries[destination]!.subscriber;
            target.next({ header: response.header, payload: concatBytes(response.parts) });
            target.complete();
          }),
        );
      } catch (error) {
        // The coordinator's loop fails, and its Abort carries the reason to every rank.
        for (const entry of entries) entry.subscriber.error(error);
        parts.abort(failureText(error));
      }
    });
  const loseWorld = () => {
    worldLost = true;
    deadline?.unsubscribe();
  };
  return { exchange, loseWorld };
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((byte, index) => byte === b[index]);
}
