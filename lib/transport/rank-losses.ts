import { Observable, Subject } from 'rxjs';

/** One rank a fault-tolerant job lost, and why. */
export interface RankLoss {
  /** Its rank in the job. */
  readonly rank: number;
  readonly reason: string;
}

/**
 * The ranks a fault-tolerant job lost, as this rank learnt of them, in order: from the
 * coordinator's notices (the authority: every rank gets them in the same order, so each rank's
 * list is a prefix of the same list) and, sooner, from its own links closing. `noticed` counts the
 * coordinator's notices alone, which is what ranks compare when they agree on who is left.
 */
export class RankLosses {
  private readonly losses = new Map<number, string>();
  private readonly noticedRanks = new Set<number>();
  private readonly noticeReasons = new Map<number, string>();
  private readonly subject = new Subject<RankLoss>();
  private readonly noticedSubject = new Subject<number>();

  /** Every loss so far, then each new one. */
  readonly lost$: Observable<RankLoss> = new Observable<RankLoss>((subscriber) => {
    for (const [rank, reason] of this.losses) subscriber.next({ rank, reason });
    return this.subject.subscribe(subscriber);
  });

  /** Emits the count of the coordinator's notices each time one comes. */
  readonly noticed$: Observable<number> = this.noticedSubject.asObservable();

  /** Whether `rank` was lost (as far as this rank knows). */
  has(rank: number): boolean {
    return this.losses.has(rank);
  }

  /** The coordinator's notices so far, in the order they came. */
  get noticed(): readonly number[] {
    return [...this.noticedRanks];
  }

  /** This rank's links from `rank` ended (after every message they brought): it is lost here, before the coordinator says so. */
  suspect(rank: number, reason: string): void {
    this.record(rank, this.noticeReasons.get(rank) ?? reason);
  }

  /**
   * The coordinator says `rank` is gone. `now` false (a rank that left, on tcp_peer): it counts
   * for the agreement at once, but fails this rank's communicators only once its links ended
   * (`suspect`), so that what it sent before it left is still delivered.
   */
  notice(rank: number, reason: string, now = true): void {
    this.noticeReasons.set(rank, reason);
    if (now) this.record(rank, reason);
    if (this.noticedRanks.has(rank)) return;
    this.noticedRanks.add(rank);
    this.noticedSubject.next(this.noticedRanks.size);
  }

  private record(rank: number, reason: string): void {
    if (this.losses.has(rank)) return;
    this.losses.set(rank, reason);
    this.subject.next({ rank, reason });
  }
}
