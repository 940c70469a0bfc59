import { concat, defer, EMPTY, type Observable } from 'rxjs';
import { failureText, ProtocolError, TimeoutError } from '../../errors.js';
import { scheduleReduceSpans } from '../../kernels/index.js';
import { type DType, ElementType } from '../../protocol/element-type.js';
import { COLLECTIVE_RESPONSE_GRACE_MS } from '../../transport/collective-channel.js';
import type { Links } from '../../transport/links/links.js';
import { MAX_TIMER_DELAY_MS } from '../../transport/transport-kind.js';
import type { WaitingRanks } from '../waiting-ranks.js';
import { receiveInto } from '../../transport/links/receive-into.js';
import { MAX_PIECES, PIECE_BYTES, pieceTag } from '../peer-data.js';
import { checkHeader, HEADER_SHAPE, headerAlone, headerPeers, headerTag, type LinkAgreement, missingRanksText } from './link-agreement.js';
import { pieceWork, type StartWork } from './piece-work.js';
import { railOfPart } from './rail-stripes.js';
import { type Dependency, producedBytes, type Producers, type Schedule, type ScheduledMessage, type Span, spanOfDependency } from './schedule.js';

/** The caller's memory a schedule's spans are bytes of. */
export interface ScheduleMemory {
  readonly input: Uint8Array;
  readonly output: Uint8Array;
  readonly scratch: Uint8Array;
}

/** What the JS plane needs beyond the schedule: the tags' sequence, the messages' element type, the piece size. */
export interface LinksWiring {
  /** The collective's agreed number: its messages' tags carry it (docs/protocol.md 9.6). */
  readonly sequence: bigint;
  /** The tensor's element type (the messages' shape), and its dtype where the schedule folds. */
  readonly elementType: ElementType;
  readonly dtype: DType | null;
  readonly width: number;
  /** The session's piece size (PIECE_BYTES; tests make it tiny), times the schedule's `pieceScale`. */
  readonly pieceBytes: number;
  /** The rails in the order pieces take them (GX1_RAIL_ORDER); null: 0, 1, ... */
  readonly railOrder: readonly number[] | null;
  /** How long each receive waits for its peer (the collective timeout). */
  readonly waitMs: number;
  /**
   * The agreement the schedule's links carry (./link-agreement.ts), where the session agrees on
   * the mesh; absent where the coordinator agreed already (tcp_host_staged's PEER_DATA request).
   */
  readonly agreement?: LinkAgreement;
  /** Where the schedule says whom it still waits for (the session's waiting warning), if anyone asks. */
  readonly waiting?: WaitingRanks;
}

/**
 * A fold reading up to this many bytes runs on the JS thread: a worker round trip costs more than
 * the fold itself there and takes CPU from the transfers it should overlap with. Larger folds (a
 * tuned-up piece size) still go to a worker.
 */
export const FOLD_IN_PLACE_BYTES = 4 * PIECE_BYTES;

/**
 * Runs `schedule` on the JS plane: over `links`, on the event loop. Every message travels as
 * pieces of about `pieceBytes x pieceScale` (at most 4095 of them; a message of no bytes is one
 * empty piece), each a message of the links tagged with the algorithm's prefix, the sequence, the
 * message's channel and step and the piece's index, on rail (channel + piece) mod rails of the rail
 * order. Piece k of a span waits for piece k of what it depends on (of `Producers`, for every
 * piece of theirs that holds some of its bytes), so every piece runs as its own pipeline: a ring's
 * steps overlap, a chain forwards piece by piece, an owner sends what it has reduced. Sends start
 * piece by piece across the schedule's sends (every link gets its first piece first); receives are
 * posted at once, straight into their spans where the links can, each waiting `waitMs` for its peer.
 *
 * With an `agreement`, the headers go first, and a peer's pieces are received once its header
 * passed; the whole waits `waitMs` for its peers, then names those it still waits for. A mismatch
 * or that timeout, which only this rank has seen, ends the job (`agreement.abort`).
 *
 * Completes once every piece was sent, received and folded; errors with the first failure.
 */
export function runOnLinks(links: Links, schedule: Schedule, memory: ScheduleMemory, wiring: LinksWiring): Observable<never> {
  const { width } = wiring;
  const perPiece = Math.max(1, Math.floor((wiring.pieceBytes * schedule.pieceScale) / width));
  const cut = (bytes: number) => {
    const elements = bytes / width;
    const size = Math.max(perPiece, Math.ceil(elements / MAX_PIECES));
    return { size, count: Math.max(1, Math.ceil(elements / size)) };
  };
  const view = (of: Span, piece: number) => {
    const { size } = cut(of.bytes);
    const start = Math.min(of.bytes, piece * size * width);
    return memory[of.memory].subarray(of.offset + start, of.offset + Math.min(of.bytes, start + size * width));
  };
  const tagOf = (message: ScheduledMessage, piece: number) => pieceTag(schedule.tagPrefix, wiring.sequence, message.channel, message.step, piece);
  const railOf = (message: ScheduledMessage, piece: number) => railOfPart(message.channel, piece, links.rails, wiring.railOrder);
  const shapeOf = (bytes: Uint8Array) => ({ elementType: wiring.elementType, count: bytes.length / width });
  const piecesOf = (bytes: number) => cut(bytes).count;
  const sizeOf = (dependency: Dependency) => spanOfDependency(schedule, dependency).bytes;
  /**
   * Piece `piece` of a send or fold of `bytes` waits for that piece of a producer of its size; of
   * `Producers`, for every piece of theirs holding its bytes.
   */
  const waitsOf = (after: Dependency | Producers | null, bytes: number, piece: number): PieceOf[] => {
    if (after === null) return [];
    if (!('parts' in after)) return [{ dependency: after, piece }];
    const from = Math.min(bytes, piece * cut(bytes).size * width);
    const to = Math.min(bytes, from + cut(bytes).size * width);
    return producedBytes(after, sizeOf, from, to).flatMap(({ dependency, start, end }) => {
      const pieceBytes = cut(sizeOf(dependency)).size * width;
      const last = end === start ? 0 : Math.ceil(end / pieceBytes) - 1;
      return Array.from({ length: last - Math.floor(start / pieceBytes) + 1 }, (_, k) => ({ dependency, piece: Math.floor(start / pieceBytes) + k }));
    });
  };

  const expected = schedule.sends.reduce((sum, send) => sum + piecesOf(send.span.bytes), 0) + schedule.folds.reduce((sum, fold) => sum + piecesOf(fold.target.bytes), 0);
  let finished = 0;
  const { agreement } = wiring;
  const receiveWaitMs = agreement === undefined ? wiring.waitMs : Math.min(wiring.waitMs + COLLECTIVE_RESPONSE_GRACE_MS, MAX_TIMER_DELAY_MS);
  const work = pieceWork((start, fail) => {
    // Receive pieces not in yet (headers too), by peer: whom the schedule waits for.
    const unreceived = new Array<number>(links.worldSize).fill(0);
    const agreed = agreement === undefined ? null : agreeOnLinks(links, agreement, schedule, wiring.waitMs, unreceived, start, fail);
    const progress = new DependencyProgress(schedule, piecesOf);
    schedule.folds.forEach((fold, index) => {
      for (let piece = 0; piece < piecesOf(fold.target.bytes); piece++) {
        const after = fold.after.flatMap((dependency) => waitsOf(dependency, fold.target.bytes, piece));
        progress.whenAll(after, () =>
          runFold(start, wiring.dtype, fold.op, fold.divisor, view(fold.target, piece), fold.sources.map((source) => view(source, piece)), () => {
            finished += 1;
            progress.done({ fold: index }, piece);
          }),
        );
      }
    });
    // Piece by piece across the sends: every link gets its first piece before any gets a second.
    const mostPieces = Math.max(0, ...schedule.sends.map((send) => piecesOf(send.span.bytes)));
    for (let piece = 0; piece < mostPieces; piece++) {
      schedule.sends.forEach((send, index) => {
        if (piece >= piecesOf(send.span.bytes)) return;
        const bytes = view(send.span, piece);
        progress.whenAll(waitsOf(send.after, send.span.bytes, piece), () =>
          start(links.send(railOf(send, piece), send.peer, tagOf(send, piece), bytes, shapeOf(bytes)), () => {
            finished += 1;
            progress.done({ send: index }, piece);
          }),
        );
      });
    }
    schedule.receives.forEach((receive, index) => {
      for (let piece = 0; piece < piecesOf(receive.span.bytes); piece++) {
        const bytes = view(receive.span, piece);
        unreceived[receive.peer]! += 1;
        const post = () =>
          start(receiveInto(links, railOf(receive, piece), receive.peer, tagOf(receive, piece), shapeOf(bytes), bytes, receiveWaitMs), () => {
            unreceived[receive.peer]! -= 1;
            progress.done({ receive: index }, piece);
          });
        if (agreed === null) post();
        else agreed.afterHeader(receive.peer, post);
      }
    });
    const stopWaiting = wiring.waiting?.add(() => agreed?.silent() ?? waitedFor(unreceived));
    return () => {
      stopWaiting?.();
      agreed?.stop();
    };
  });
  // Everything a schedule starts hangs off its receives and its unconditional sends and folds: a
  // piece left waiting when all of that is over is a schedule that waits on itself.
  const check = defer(() => {
    if (finished === expected) return EMPTY;
    throw new ProtocolError(`rank ${links.rank} ${schedule.algorithm} schedule ended with ${expected - finished} of its ${expected} sends and folds never started: it waits on itself`);
  });
  return concat(work, check);
}

/** The peers `unreceived` still counts pieces from. */
function waitedFor(unreceived: readonly number[]): number[] {
  return unreceived.flatMap((pieces, peer) => (pieces > 0 ? [peer] : []));
}

/**
 * Starts a schedule's agreement (./link-agreement.ts): sends its headers, receives its peers', and
 * times the whole; `afterHeader` runs what receives a peer's pieces once that peer's header passed.
 * Whom it waits for (`silent`): the peers whose header has not come, since a header waits for
 * nothing (a rank blocked behind a silent one has sent its own); else those whose pieces it waits for.
 */
function agreeOnLinks(
  links: Links,
  agreement: LinkAgreement,
  schedule: Schedule,
  waitMs: number,
  unreceived: number[],
  start: StartWork,
  fail: (error: unknown) => void,
): { afterHeader(peer: number, post: () => void): void; silent(): number[]; stop(): void } {
  const { rank, worldSize } = links;
  // This rank's own error first: an abort can come straight back and would end the work with it.
  const refuse = (error: unknown) => {
    fail(error);
    agreement.abort(failureText(error));
  };
  const held = new Map<number, (() => void)[]>();
  const { to, from } = headerPeers(schedule, rank, worldSize);
  const tag = headerTag(agreement.number);
  const header = headerAlone(agreement);
  const shape = { elementType: ElementType.U8, count: header.length };
  for (const peer of to) start(links.send(0, peer, tag, header, shape));
  for (const peer of from) {
    unreceived[peer]! += 1;
    held.set(peer, []);
    start(links.receive(0, peer, tag, HEADER_SHAPE, undefined, Math.min(waitMs + COLLECTIVE_RESPONSE_GRACE_MS, MAX_TIMER_DELAY_MS)), (theirs) => {
      try {
        checkHeader(theirs, peer, rank, agreement);
      } catch (mismatch) {
        refuse(mismatch);
        return;
      } finally {
        links.release(theirs);
      }
      unreceived[peer]! -= 1;
      const waiting = held.get(peer)!;
      held.delete(peer);
      for (const post of waiting) post();
    });
  }
  const silent = () => (held.size > 0 ? [...held.keys()].sort((a, b) => a - b) : waitedFor(unreceived));
  const due = agreement.deadlines.add(Math.min(waitMs, MAX_TIMER_DELAY_MS), () => refuse(new TimeoutError(missingRanksText(rank, agreement, silent()))));
  return {
    afterHeader: (peer, post) => {
      const waiting = held.get(peer);
      if (waiting === undefined) post();
      else waiting.push(post);
    },
    silent,
    stop: () => agreement.deadlines.remove(due),
  };
}

/** One piece of a receive, fold or send. */
interface PieceOf {
  readonly dependency: Dependency;
  readonly piece: number;
}

/** Which pieces of each receive, fold and send are done, and who waits for the rest. */
class DependencyProgress {
  private readonly receives: PieceWaiters[];
  private readonly folds: PieceWaiters[];
  private readonly sends: PieceWaiters[];

  constructor(schedule: Schedule, piecesOf: (bytes: number) => number) {
    this.receives = schedule.receives.map((receive) => new PieceWaiters(piecesOf(receive.span.bytes)));
    this.folds = schedule.folds.map((fold) => new PieceWaiters(piecesOf(fold.target.bytes)));
    this.sends = schedule.sends.map((send) => new PieceWaiters(piecesOf(send.span.bytes)));
  }

  /** Runs `then` once every piece in `after` is done (at once if none). */
  whenAll(after: readonly PieceOf[], then: () => void): void {
    let waiting = after.length;
    if (waiting === 0) return then();
    for (const { dependency, piece } of after) {
      this.of(dependency).when(piece, () => {
        if (--waiting === 0) then();
      });
    }
  }

  done(dependency: Dependency, piece: number): void {
    this.of(dependency).done(piece);
  }

  private of(dependency: Dependency): PieceWaiters {
    if ('receive' in dependency) return this.receives[dependency.receive]!;
    return 'fold' in dependency ? this.folds[dependency.fold]! : this.sends[dependency.send]!;
  }
}

class PieceWaiters {
  private readonly finished: Uint8Array;
  private readonly waiting: ((() => void)[] | undefined)[];

  constructor(pieces: number) {
    this.finished = new Uint8Array(pieces);
    this.waiting = new Array(pieces);
  }

  when(piece: number, then: () => void): void {
    if (this.finished[piece] === 1) return then();
    (this.waiting[piece] ??= []).push(then);
  }

  done(piece: number): void {
    this.finished[piece] = 1;
    const waiting = this.waiting[piece];
    this.waiting[piece] = undefined;
    if (waiting !== undefined) for (const then of waiting) then();
  }
}

/** One piece of a fold: a copy in place, else the reduction kernel (on a worker when large). */
function runFold(start: StartWork, dtype: DType | null, op: Schedule['folds'][number]['op'], divisor: number, target: Uint8Array, sources: Uint8Array[], then: () => void): void {
  if (sources.length === 1 && op !== 'avg') {
    const source = sources[0]!;
    if (source.buffer !== target.buffer || source.byteOffset !== target.byteOffset) target.set(source);
    then();
    return;
  }
  if (dtype === null) throw new ProtocolError('a schedule folds a collective that has no element type');
  start(scheduleReduceSpans({ dtype, op, sources, output: target, divisor }, FOLD_IN_PLACE_BYTES), then);
}
