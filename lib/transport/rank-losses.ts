import { asyncScheduler, Observable, type SchedulerLike, Subject } from 'rxjs';

/** One rank a fault-tolerant job lost, and why. */
export interface RankLoss {
  /** Its rank in the job. */
  readonly rank: number;
  readonly reason: string;
}

/**
 * How long after a rank left (or its links ended) this rank fails the communicators it was in: what
 * was already under way and needs nothing more from it (the reduction of its last message, still
 * running) completes first. A lost rank (the coordinator's notice of a crash, a lease) fails them at once.
 */
export const LEFT_GRACE_MS = 250;

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

  constructor(private readonly scheduler: SchedulerLike = asyncScheduler) {}

  /** This rank's links from `rank` ended (after every message they brought): it is gone here, before the coordinator says so. */
  suspect(rank: number, reason: string): void {
    this.later(rank, reason);
  }

  /** Something of this rank needed `rank`, whose links ended: it is lost here now (no grace). */
  needed(rank: number, reason: string): void {
    this.record(rank, this.noticeReasons.get(rank) ?? reason);
  }

  /**
   * The coordinator says `rank` is gone: `left` (it closed its session) or lost. It counts for the
   * agreement at once; a lost rank fails this rank's communicators at once, one that left after
   * LEFT_GRACE_MS.
   */
  notice(rank: number, reason: string, left = false): void {
    this.noticeReasons.set(rank, reason);
    if (left) this.later(rank, reason);
    else this.record(rank, reason);
    if (this.noticedRanks.has(rank)) return;
    this.noticedRanks.add(rank);
    this.noticedSubject.next(this.noticedRanks.size);
  }

  private readonly graced = new Set<number>();

  private later(rank: number, reason: string): void {
    if (this.losses.has(rank) || this.graced.has(rank)) return;
    this.graced.add(rank);
    this.scheduler.schedule(() => this.record(rank, this.noticeReasons.get(rank) ?? reason), LEFT_GRACE_MS);
  }

  private record(rank: number, reason: string): void {
    if (this.losses.has(rank)) return;
    this.losses.set(rank, reason);
    this.subject.next({ rank, reason });
  }
}
