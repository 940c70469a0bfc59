import { catchError, concat, concatMap, defer, EMPTY, first, from, ignoreElements, map, merge, type Observable, of, race, type SchedulerLike, throwError, timeout, toArray } from 'rxjs';
import { TimeoutError } from '../errors.js';
import { ElementType } from '../protocol/element-type.js';
import type { Links } from '../transport/links/links.js';
import { PeerLeftError } from '../transport/peer-left-error.js';
import type { RankLosses } from '../transport/rank-losses.js';
import { MAX_TIMER_DELAY_MS } from '../transport/transport-kind.js';

/** The top 16 bits of a shrink round's tag ("SK"); the round number is the rest. */
export const SHRINK_TAG_PREFIX = 0x534b;

/** The tag of round `round` of a shrink. */
export function shrinkTag(round: number): bigint {
  return (BigInt(SHRINK_TAG_PREFIX) << 48n) | BigInt(round);
}

export interface ShrinkParts {
  /** Every rank of the communicator that shrinks (lost ones too), under keys this shrink alone uses. */
  readonly links: Links;
  /** The job rank of each of its ranks. */
  readonly jobRanks: readonly number[];
  readonly losses: RankLosses;
  readonly timeoutMs: number;
  readonly scheduler: SchedulerLike;
  /** `communicator 0x...`: how errors name what shrinks. */
  readonly name: string;
}

/** What one agreement ends with: the ranks left (by rank in the communicator that shrinks), from how many notices, in which round. */
export interface Survivors {
  readonly ranks: readonly number[];
  /** The count of the members' notices the ranks left were decided from. */
  readonly count: number;
  readonly round: number;
}

/** The high bit of a round's count: the sender has decided (it answers a later round with its decision). */
const DECIDED = 0x8000_0000;

const SHAPE = { elementType: ElementType.U8, count: 4 };

function countBytes(count: number): Uint8Array {
  const bytes = new Uint8Array(4);
  new DataView(bytes.buffer).setUint32(0, count, true);
  return bytes;
}

/**
 * The survivors' agreement on who is left (docs/protocol.md 13.7). The coordinator's notices of
 * lost ranks reach every rank in the same order, so each rank's list of the notices of this
 * communicator's members is a prefix of one list, and agreeing on who is left is agreeing on its
 * length. Each round a rank sends the length it has to every member it believes alive and hears
 * theirs (or learns they were lost). Where every length it heard is its own, it decides: the
 * members outside that many notices. Where one it heard is a decision, it adopts it. Else it waits
 * until it has as many notices as anyone said and goes on to the next round. A rank that decided
 * answers that next round with its decision (`answerDecision`), so no rank waits there for it.
 * Members this rank saw go itself are waited for among the notices first.
 */
export function agreeOnSurvivors(parts: ShrinkParts, round: number): Observable<Survivors> {
  const { links, jobRanks, losses, name } = parts;
  const me = links.rank;
  const notices = () => losses.noticed.filter((rank) => jobRanks.includes(rank));
  /** Resolves once this rank has `count` notices of members. */
  const noticesReach = (count: number) => (notices().length >= count ? of(true) : losses.noticed$.pipe(first(() => notices().length >= count), map(() => true)));
  /** Emits once `rank` of this communicator is among the coordinator's notices. */
  const noticeOf = (rank: number) => defer(() => (losses.noticed.includes(jobRanks[rank]!) ? of(true) : losses.noticed$.pipe(first(() => losses.noticed.includes(jobRanks[rank]!)), map(() => true))));
  const survivorsOf = (count: number) => {
    const lost = new Set(notices().slice(0, count));
    return jobRanks.flatMap((jobRank, rank) => (lost.has(jobRank) ? [] : [rank]));
  };

  const oneRound = (current: number): Observable<Survivors> =>
    defer(() => {
      const length = notices().length;
      const others = survivorsOf(length).filter((rank) => rank !== me);
      const tag = shrinkTag(current);
      // A send to a rank that left fails; its notice decides (each send on its own: the others still go).
      const sends = merge(...others.map((rank) => links.send(0, rank, tag, countBytes(length), SHAPE).pipe(catchError(() => EMPTY)))).pipe(ignoreElements());
      // Each other rank's word, or null once the coordinator says it was lost.
      const heard = from(others).pipe(
        concatMap((rank) =>
          race(
            links.receive(0, rank, tag, SHAPE).pipe(
              map((bytes) => new DataView(bytes.buffer, bytes.byteOffset, 4).getUint32(0, true) as number | null),
              catchError((error: unknown) => (error instanceof PeerLeftError ? noticeOf(rank).pipe(map(() => null)) : throwError(() => error))),
            ),
            noticeOf(rank).pipe(map(() => null)),
          ),
        ),
        toArray(),
      );
      return concat(sends, heard).pipe(
        concatMap((words) => {
          const decision = words.find((word) => word !== null && (word & DECIDED) !== 0);
          if (decision != null) {
            const count = decision & ~DECIDED;
            return noticesReach(count).pipe(map((): Survivors => ({ ranks: survivorsOf(count), count, round: current })));
          }
          if (words.every((word) => word === null || word === length)) return of<Survivors>({ ranks: survivorsOf(length), count: length, round: current });
          const most = Math.max(length, ...words.map((word) => word ?? 0));
          return noticesReach(most).pipe(concatMap(() => oneRound(current + 1)));
        }),
      );
    });

  // A member this rank saw go (its links ended) is among the notices soon: start from them, so
  // that ranks which saw it go and ranks which heard of it start alike.
  const seenGone = jobRanks.flatMap((jobRank, rank) => (losses.has(jobRank) ? [rank] : []));
  const confirmed: Observable<never> = merge(...seenGone.map((rank) => noticeOf(rank))).pipe(ignoreElements());
  return concat(confirmed, oneRound(round)).pipe(
    timeout({
      first: Math.min(parts.timeoutMs, MAX_TIMER_DELAY_MS),
      scheduler: parts.scheduler,
      with: () => throwError(() => new TimeoutError(`rank ${me} shrinking ${name}: the ranks left did not agree on who is left (from round ${round})`)),
    }),
  );
}

/**
 * What a rank that decided in round `decided.round` does while its shrink goes on: answers every
 * member that comes to the next round with its decision (DECIDED | count), so that a member that
 * could not decide in that round adopts it instead of waiting. Emits nothing; ends when unsubscribed.
 */
export function answerDecision(parts: ShrinkParts, decided: Survivors): Observable<never> {
  const { links, jobRanks } = parts;
  const tag = shrinkTag(decided.round + 1);
  const answer = countBytes(DECIDED | decided.count);
  const members = jobRanks.flatMap((_, rank) => (rank === links.rank ? [] : [rank]));
  return merge(
    ...members.map((rank) =>
      // Waits as long as the shrink goes on (a member that decided too never comes).
      links.receive(0, rank, tag, SHAPE, undefined, MAX_TIMER_DELAY_MS).pipe(
        concatMap(() => links.send(0, rank, tag, answer, SHAPE)),
        catchError(() => EMPTY),
      ),
    ),
  ).pipe(ignoreElements());
}
