import { catchError, concat, concatMap, defer, EMPTY, filter, first, from, ignoreElements, lastValueFrom, map, merge, type Observable, of, race, type SchedulerLike, throwError, timeout, toArray } from 'rxjs';
import { TimeoutError } from '../errors.js';
import { ElementType } from '../protocol/element-type.js';
import type { Links } from '../transport/links/links.js';
import { PeerLeftError } from '../transport/peer-mesh.js';
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

/** What one agreement ends with: the ranks left (by rank in the communicator that shrinks), and the next free round. */
export interface Survivors {
  readonly ranks: readonly number[];
  readonly nextRound: number;
}

/**
 * The survivors' agreement on who is left (docs/protocol.md 13.7). The coordinator's notices of
 * lost ranks reach every rank in the same order, so each rank's list of them is a prefix of one
 * list, and agreeing on who is left is agreeing on its length. Each round a rank sends the length
 * it has to every rank it believes alive and hears theirs (or learns they were lost); it waits
 * until it has as many notices as anyone said, and ends when nobody said another length and no
 * notice came during the round. Otherwise it goes on to the next round with what it has now.
 *
 * A rank may end a round that a rank lost during it makes another rank repeat: the caller makes
 * the survivors' communicator and meets on it, and where that fails with a lost rank, agrees
 * again from `nextRound`, where the others wait.
 */
export function agreeOnSurvivors(parts: ShrinkParts, round: number): Observable<Survivors> {
  const { links, jobRanks, losses, name } = parts;
  const me = links.rank;
  const noticedIn = (count: number) => new Set(losses.noticed.slice(0, count));
  /** Emits once `rank` of this communicator is among the coordinator's notices. */
  const noticeOf = (rank: number) =>
    defer(() => (losses.noticed.includes(jobRanks[rank]!) ? of(true) : losses.noticed$.pipe(filter(() => losses.noticed.includes(jobRanks[rank]!)), first(), map(() => true))));
  const lengthBytes = (length: number) => {
    const bytes = new Uint8Array(4);
    new DataView(bytes.buffer).setUint32(0, length, true);
    return bytes;
  };
  const shape = { elementType: ElementType.U8, count: 4 };

  const oneRound = (current: number): Observable<Survivors> =>
    defer(() => {
      const length = losses.noticed.length;
      const lost = noticedIn(length);
      const alive = jobRanks.flatMap((jobRank, rank) => (lost.has(jobRank) ? [] : [rank]));
      const others = alive.filter((rank) => rank !== me);
      const tag = shrinkTag(current);
      // A send to a rank that left fails; its notice decides (each send on its own: the others still go).
      const sends = merge(...others.map((rank) => links.send(0, rank, tag, lengthBytes(length), shape).pipe(catchError(() => EMPTY)))).pipe(ignoreElements());
      // Each other rank's length, or null once the coordinator says it was lost.
      const heard = from(others).pipe(
        concatMap((rank) =>
          race(
            links.receive(0, rank, tag, shape).pipe(
              map((bytes) => new DataView(bytes.buffer, bytes.byteOffset, 4).getUint32(0, true) as number | null),
              catchError((error: unknown) => (error instanceof PeerLeftError ? noticeOf(rank).pipe(map(() => null)) : throwError(() => error))),
            ),
            noticeOf(rank).pipe(map(() => null)),
          ),
        ),
        toArray(),
      );
      return concat(sends, heard).pipe(
        concatMap(async (lengths) => {
          const most = Math.max(length, ...lengths.map((said) => said ?? 0));
          if (losses.noticed.length < most) await lastValueFrom(losses.noticed$.pipe(filter((count) => count >= most), first()));
          const settled = losses.noticed.length === length && lengths.every((said) => said === length);
          return settled ? { ranks: alive, nextRound: current + 1 } : null;
        }),
        concatMap((survivors) => (survivors === null ? oneRound(current + 1) : of(survivors))),
      );
    });

  return oneRound(round).pipe(
    timeout({
      first: Math.min(parts.timeoutMs, MAX_TIMER_DELAY_MS),
      scheduler: parts.scheduler,
      with: () => throwError(() => new TimeoutError(`rank ${me} shrinking ${name}: the ranks left did not agree on who is left (from round ${round})`)),
    }),
  );
}
