import { AsyncSubject, catchError, concatMap, EMPTY, type Observable, Subject, type Subscription, tap } from 'rxjs';

/**
 * The session's ordered collective channel, as a stream: collectives run one at a time, in the
 * order they were submitted, on every rank alike (that order is what the coordinator's sequence
 * numbers check). Each submission runs exactly once, whether or not anyone still listens: the
 * other ranks count on it.
 */
export class CollectiveQueue {
  private readonly jobs = new Subject<Observable<unknown>>();
  private readonly running: Subscription;

  constructor() {
    // A failed collective fails its submitter (and, through the session, every later one); the
    // queue itself goes on to the next.
    this.running = this.jobs.pipe(concatMap((job) => job.pipe(catchError(() => EMPTY)))).subscribe();
  }

  /** Queues `work` (cold, subscribed once when its turn comes); the result replays its last value. */
  submit<T>(work: Observable<T>): Observable<T> {
    const result = new AsyncSubject<T>();
    // Not `tap(result)`: tap would also call the subject's own `subscribe()` (a TapObserver hook).
    this.jobs.next(work.pipe(tap({ next: (value) => result.next(value), error: (error: unknown) => result.error(error), complete: () => result.complete() })));
    return result.asObservable();
  }

  close(): void {
    this.running.unsubscribe();
  }
}
