/**
 * A job in memory: every rank's `Links` and `CollectiveContext`, with the real agreement and the
 * coordinator's real routing (`routeCollective`), but no sockets. Algorithms run on it exactly as
 * in a session, so their model tests cover worlds of 1..8 ranks in milliseconds.
 */
import { asyncScheduler, Observable, type SchedulerLike, type Subscriber } from 'rxjs';
import type { CollectiveContext } from '../../lib/collectives/algorithm.js';
import { routeCollective } from '../../lib/coordinator/route-collective.js';
import { ConfigurationError, RemoteAbortError } from '../../lib/errors.js';
import { CollectiveAgreement } from '../../lib/protocol/agreement.js';
import { ANY_RANK } from '../../lib/protocol/constants.js';
import { makeHeader, type Frame } from '../../lib/protocol/frame.js';
import { UniqueId } from '../../lib/protocol/unique-id.js';
import { BufferPool } from '../../lib/transport/buffer-pool.js';
import type { CollectiveRequest } from '../../lib/transport/collective-channel.js';
import type { ExpectedShape, Links, MessageShape } from '../../lib/transport/links/links.js';
import { TagMatcher } from '../../lib/transport/tag-matcher.js';
import { concatBytes } from '../protocol/arbitraries.js';

interface Message {
  readonly bytes: Uint8Array;
  readonly shape: MessageShape;
}

interface Posted {
  readonly shape: ExpectedShape;
  readonly subscriber: Subscriber<Uint8Array>;
}

export interface MemoryRank {
  readonly links: Links;
  readonly context: CollectiveContext;
}

export interface MemoryJobOptions {
  readonly rails?: number;
  readonly ringOrder?: readonly number[];
  readonly ringChannels?: number;
  readonly pieceBytes?: number;
  readonly timeoutMs?: number;
  readonly scheduler?: SchedulerLike;
  readonly agreement?: CollectiveContext['agreement'];
  /** Per-rank changes to the context (say, a rank configured with another ring). */
  readonly contextOf?: (rank: number) => Partial<CollectiveContext>;
}

/** What the links carried, for tests that check which path the data took. */
export interface MemoryTraffic {
  readonly messages: { from: number; to: number; rail: number; tag: bigint; bytes: number }[];
  readonly coordinated: number;
  /** Who called `context.abort`, with what. */
  readonly aborts: { rank: number; reason: string }[];
}

function deliver(message: Message, posted: Posted): void {
  if (message.shape.elementType !== posted.shape.elementType || (posted.shape.count !== null && message.shape.count !== posted.shape.count)) {
    posted.subscriber.error(new ConfigurationError(`memory links: shape mismatch ${JSON.stringify(message.shape)} vs ${JSON.stringify(posted.shape)}`));
    return;
  }
  posted.subscriber.next(message.bytes);
  posted.subscriber.complete();
}

export function memoryJob(worldSize: number, options: MemoryJobOptions = {}): { ranks: MemoryRank[]; traffic: MemoryTraffic } {
  const rails = options.rails ?? 1;
  const uniqueId = UniqueId.random();
  const matchers = Array.from({ length: worldSize }, () => Array.from({ length: rails }, () => new TagMatcher<Message, Posted>()));
  const agreement = new CollectiveAgreement(worldSize);
  const traffic = { messages: [] as MemoryTraffic['messages'], coordinated: 0, aborts: [] as MemoryTraffic['aborts'] };
  let round: { frame: Frame; subscriber: Subscriber<Frame> }[] = [];
  const sequences = new Array<bigint>(worldSize).fill(0n);
  const meshSequences = new Array<bigint>(worldSize).fill(0n);
  const ringOrder = options.ringOrder ?? Array.from({ length: worldSize }, (_, rank) => rank);

  const coordinate = (rank: number, request: CollectiveRequest, parts: readonly Uint8Array[]) =>
    new Observable<Frame>((subscriber) => {
      const payload = concatBytes(parts);
      const frame = { header: makeHeader({ ...request, uniqueId, sourceRank: rank, worldSize, sequence: sequences[rank]! }, payload.length), payload };
      sequences[rank]! += 1n;
      round.push({ frame, subscriber });
      if (round.length < worldSize) return;
      const arrived = round.sort((a, b) => a.frame.header.sourceRank - b.frame.header.sourceRank);
      round = [];
      traffic.coordinated += 1;
      try {
        const responses = routeCollective(agreement, uniqueId, arrived[0]!.frame.header.sequence, arrived.map((entry) => entry.frame));
        responses.forEach((response, destination) => {
          const target = arrived[destination]!.subscriber;
          target.next({ header: response.header, payload: concatBytes(response.parts) });
          target.complete();
        });
      } catch (error) {
        for (const entry of arrived) entry.subscriber.error(error);
      }
    });

  const ranks = Array.from({ length: worldSize }, (_, rank): MemoryRank => {
    const links: Links = {
      rank,
      worldSize,
      rails,
      send: (rail, peer, tag, bytes, shape) =>
        new Observable<void>((subscriber) => {
          traffic.messages.push({ from: rank, to: peer, rail, tag, bytes: bytes.length });
          const message = { bytes: bytes.slice(), shape };
          const posted = matchers[peer]![rail]!.offer(rank, tag, message);
          if (posted !== null) deliver(message, posted);
          subscriber.next();
          subscriber.complete();
        }),
      receive: (rail, peer, tag, shape) =>
        new Observable<Uint8Array>((subscriber) => {
          const posted: Posted = { shape, subscriber };
          const matcher = matchers[rank]![rail]!;
          const message = matcher.post(peer === ANY_RANK ? ANY_RANK : peer, tag, posted);
          if (message === null) return () => matcher.withdraw(posted);
          deliver(message, posted);
          return undefined;
        }),
      release: () => undefined,
    };
    const context: CollectiveContext = {
      rank,
      worldSize,
      coordinate: (request, parts) => coordinate(rank, request, parts),
      scratch: new BufferPool(),
      ringOrder,
      ringChannels: options.ringChannels ?? 1,
      pieceBytes: options.pieceBytes ?? 1 << 20,
      agreement: options.agreement ?? 'coordinator',
      nextMeshSequence: () => meshSequences[rank]!++,
      timeoutMs: () => options.timeoutMs ?? 60_000,
      scheduler: options.scheduler ?? asyncScheduler,
      abort: (reason) => {
        traffic.aborts.push({ rank, reason });
        // Every rank's pending receives end, as an Abort down every link would end them.
        for (const perRank of matchers) for (const matcher of perRank) for (const posted of matcher.takeReceives(() => true)) posted.subscriber.error(new RemoteAbortError(reason));
      },
      ...options.contextOf?.(rank),
    };
    return { links, context };
  });
  return { ranks, traffic };
}
