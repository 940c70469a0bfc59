import { AsyncSubject, type Observable, type Subscription } from 'rxjs';

/**
 * The session's ordered collective channel, as a stream: collectives run one at a time, in the
 * order they were submitted, on every rank alike (that order is what the sequence numbers check).
 * Each submission runs exactly once, whether or not anyone still listens: the other ranks count on
 * it. A failed collective fails its submitter (and, through the session, every later one); the
 * queue itself goes on to the next.
 *
 * A plain queue rather than `Subject` + `concatMap`: every collective passes here, and the
 * operator chain cost a few allocations and microseconds each.
 */
export class CollectiveQueue {
  private readonly waiting: (() => void)[] = [];
  private running: Subscription | null = null;
  private busy = false;
  private draining = false;

  /**
   * Queues `work` (cold, subscribed once when its turn comes); the result replays its last value,
   * as `finish` makes it (once: where it throws, the result fails with that).
   */
  submit<T, R = T>(work: Observable<T>, finish?: (value: T) => R): Observable<R> {
    const result = new AsyncSubject<R>();
    const done = () => {
      this.busy = false;
      this.running = null;
      this.drain();
    };
    this.waiting.push(() => {
      this.running = work.subscribe({
        next: (value) => {
          if (finish === undefined) return result.next(value as unknown as R);
          try {
            result.next(finish(value));
          } catch (error) {
            result.error(error);
          }
        },
        error: (error: unknown) => {
          result.error(error);
          done();
        },
        complete: () => {
          result.complete();
          done();
        },
      });
      // Ended synchronously: `done` already ran (and maybe started the next), keep its subscription.
      if (!this.busy) this.running = null;
    });
    this.drain();
    return result;
  }

  /** Drops what waits and stops what runs (the session fails them with its close reason). */
  close(): void {
    this.waiting.length = 0;
    this.running?.unsubscribe();
    this.running = null;
  }

  /** Starts the next job while none runs; a loop, not recursion, so synchronous jobs do not deepen the stack. */
  private drain(): void {
    if (this.draining) return;
    this.draining = true;
    while (!this.busy && this.waiting.length > 0) {
      this.busy = true;
      this.waiting.shift()!();
    }
    this.draining = false;
  }
}
