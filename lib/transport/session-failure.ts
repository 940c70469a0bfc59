import { type MonoTypeOperatorFunction, Observable, Subject, type Subscriber, type Subscription } from 'rxjs';

/**
 * The one failure of a rank session. The first failure wins and is final: `failure$` errors
 * with it (also for late subscribers), every pending operation ends with it, and every later
 * call is refused with it. A clean close completes `failure$` instead; operations still pending
 * then end with the close reason.
 */
export class SessionFailure {
  private readonly subject = new Subject<never>();
  private failure: { error: unknown } | null = null;
  private closedBy: Error | null = null;
  /** Operations under `untilEnded()` now: a set, not subscriptions to `ended$`, as every operation adds one. */
  private readonly pending = new Set<Subscriber<unknown>>();
  private readonly afterFailure: ((error: unknown) => void)[] = [];
  readonly failure$: Observable<never> = this.subject.asObservable();
  /**
   * Errors with the failure, or with the close reason on a clean close: what every pending
   * operation ends with. Late subscribers get it at once.
   */
  readonly ended$: Observable<never> = new Observable<never>((subscriber) =>
    this.failure$.subscribe({ error: (error: unknown) => subscriber.error(error), complete: () => subscriber.error(this.closedBy) }),
  );

  /**
   * A failure of its own that also fails with `parent`'s failure (not with its close): a
   * communicator's, which can fail alone (a lost member) but never outlives the job's.
   */
  static following(parent: SessionFailure): SessionFailure {
    const failure = new SessionFailure();
    // Dropped once this one ends: a job makes communicators for as long as it runs.
    failure.ending = parent.failure$.subscribe({ error: (error: unknown) => failure.fail(error) });
    return failure;
  }

  /**
   * A failure of its own that fails with `parent`'s failure and with its close: work on the
   * parent's links that cannot go on once the parent ended either way (a communicator's set-up,
   * a shrink's agreement), so it ends then rather than at its timeout.
   */
  static endingWith(parent: SessionFailure): SessionFailure {
    const failure = new SessionFailure();
    failure.ending = parent.ended$.subscribe({ error: (error: unknown) => failure.fail(error) });
    return failure;
  }

  /** What ends with this failure or close (`following`'s or `endingWith`'s subscription to its parent). */
  private ending: Subscription | null = null;

  get error(): unknown {
    return this.failure?.error;
  }

  get failed(): boolean {
    return this.failure !== null;
  }

  fail(error: unknown): void {
    if (this.failure !== null || this.closedBy !== null) return;
    this.failure = { error };
    this.ending?.unsubscribe();
    this.subject.error(error);
    this.endPending(error);
    for (const handler of this.afterFailure) handler(error);
  }

  /**
   * Calls `handler` with the failure once `failure$` has errored and every pending operation has
   * ended with it: for what ends the rest (the mesh fails the messages no operation holds), so an
   * operation still ends with the session's failure as one, not with what its messages saw.
   */
  onceFailed(handler: (error: unknown) => void): void {
    this.afterFailure.push(handler);
  }

  /** Ends the session without failure. */
  close(reason: Error): void {
    if (this.failure !== null || this.closedBy !== null) return;
    this.closedBy = reason;
    this.ending?.unsubscribe();
    this.subject.complete();
    this.endPending(reason);
  }

  /** Throws the failure (or the close reason) if there is one (call before sending anything). */
  check(): void {
    if (this.failure !== null) throw this.failure.error;
    if (this.closedBy !== null) throw this.closedBy;
  }

  /**
   * The operator every operation of the session goes through: mirrors `source` until the session
   * ends, then errors with the failure. A session that already ended refuses to start `source`.
   */
  untilEnded<T>(): MonoTypeOperatorFunction<T> {
    return (source) =>
      new Observable<T>((subscriber) => {
        this.enroll(subscriber);
        subscriber.add(source.subscribe(subscriber));
      });
  }

  /**
   * What `untilEnded` does to its subscriber, for operators that do their own subscribing: throws
   * if the session ended, else `subscriber` errors with the failure when it comes (until it is
   * finalized).
   */
  enroll(subscriber: Subscriber<unknown>): void {
    this.check();
    this.pending.add(subscriber);
    subscriber.add(() => this.pending.delete(subscriber));
  }

  private endPending(error: unknown): void {
    const pending = [...this.pending];
    this.pending.clear();
    for (const subscriber of pending) subscriber.error(error);
  }
}
