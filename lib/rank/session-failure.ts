import { type Observable, Subject } from 'rxjs';

/**
 * The one failure of a rank session. The first failure wins and is final: `failure$` errors
 * with it (also for late subscribers), every pending operation rejects with it, and every later
 * call is refused with it. A clean close completes `failure$` instead; operations still pending
 * then reject with the close reason.
 */
export class SessionFailure {
  private readonly subject = new Subject<never>();
  private failure: { error: unknown } | null = null;
  private closedBy: Error | null = null;
  readonly failure$: Observable<never> = this.subject.asObservable();

  get error(): unknown {
    return this.failure?.error;
  }

  get failed(): boolean {
    return this.failure !== null;
  }

  fail(error: unknown): void {
    if (this.failure !== null || this.closedBy !== null) return;
    this.failure = { error };
    this.subject.error(error);
  }

  /** Ends the session without failure. */
  close(reason: Error): void {
    if (this.failure !== null || this.closedBy !== null) return;
    this.closedBy = reason;
    this.subject.complete();
  }

  /** Throws the failure (or the close reason) if there is one (call before sending anything). */
  check(): void {
    if (this.failure !== null) throw this.failure.error;
    if (this.closedBy !== null) throw this.closedBy;
  }

  /**
   * Starts `start()` unless the session already ended, and settles with its result or with the
   * session's failure, whichever comes first.
   */
  race<T>(start: () => Promise<T>): Promise<T> {
    if (this.failure !== null) return Promise.reject(this.failure.error);
    if (this.closedBy !== null) return Promise.reject(this.closedBy);
    let work: Promise<T>;
    try {
      work = start();
    } catch (error) {
      return Promise.reject(error);
    }
    return new Promise<T>((resolve, reject) => {
      const subscription = this.failure$.subscribe({ error: reject, complete: () => reject(this.closedBy) });
      work.then(
        (value) => {
          subscription.unsubscribe();
          resolve(value);
        },
        (error: unknown) => {
          subscription.unsubscribe();
          reject(error);
        },
      );
    });
  }
}
