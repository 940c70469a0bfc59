import { asyncScheduler, type SchedulerLike, type Subscription } from 'rxjs';

/**
 * The longest the scheduled action sleeps at once. A removed deadline's action still holds the
 * event loop until it runs: this bounds how long it keeps an otherwise idle process (a rank that
 * never closed its session) from exiting.
 */
export const LAZY_DEADLINE_NAP_MS = 250;

/** One deadline of a `LazyDeadlines`: when it is due (scheduler time) and what it does then. */
export interface Deadline {
  readonly due: number;
  readonly expire: () => void;
}

/**
 * Deadlines that are set and removed once per message or collective but rarely reached: every
 * receive on the mesh, every collective's wait for its peers. Adding one reads the clock and
 * schedules nothing while the one scheduled action already wakes no later than it is due; that
 * action expires what is due and schedules itself again for the earliest of the rest. So a
 * deadline expires exactly when it is due (on a virtual clock too), and a stream of operations
 * that each end in time costs no timer each (an RxJS `timer` is a setInterval and a clearInterval,
 * and on a 2-core machine running 4 ranks those were a tenth of a small collective's CPU).
 *
 * The action sleeps at most `LAZY_DEADLINE_NAP_MS` at a time and outlives the last `remove` until
 * it next runs (or `stop()`). Each wake looks at every deadline still set: there are as many as
 * operations in flight, and wakes are rare. (A set, not an array that a wake compacts: removed
 * deadlines must die young, or each garbage collection copies thousands of them.)
 *
 * On the real clock (`asyncScheduler`) time is `performance.now()`, monotonic as the timers it
 * replaces were: a wall clock stepped by NTP must not expire every pending message at once.
 */
export class LazyDeadlines {
  private readonly deadlines = new Set<Deadline>();
  private action: Subscription | null = null;
  /** When the scheduled action runs. */
  private wakeAt = 0;

  private readonly now: () => number;

  constructor(private readonly scheduler: SchedulerLike) {
    this.now = scheduler === asyncScheduler ? () => performance.now() : () => scheduler.now();
  }

  /** Calls `expire` `delayMs` from now, unless the deadline is removed first. */
  add(delayMs: number, expire: () => void): Deadline {
    const deadline: Deadline = { due: this.now() + delayMs, expire };
    this.deadlines.add(deadline);
    if (this.action === null || this.wakeAt > deadline.due) this.scheduleWake(deadline.due);
    return deadline;
  }

  /** The deadline will not expire (nothing happens if it already did). */
  remove(deadline: Deadline): void {
    this.deadlines.delete(deadline);
  }

  /** Removes every deadline and cancels the scheduled action. */
  stop(): void {
    this.deadlines.clear();
    this.action?.unsubscribe();
    this.action = null;
  }

  /** Wakes at `due`, or after a nap when that is sooner. */
  private scheduleWake(due: number): void {
    this.action?.unsubscribe();
    const now = this.now();
    const delay = Math.max(0, Math.min(due - now, LAZY_DEADLINE_NAP_MS));
    this.wakeAt = now + delay;
    this.action = this.scheduler.schedule(() => this.wake(), delay);
  }

  private wake(): void {
    this.action = null;
    const now = this.now();
    const expired: Deadline[] = [];
    let next = Infinity;
    for (const deadline of this.deadlines) {
      if (deadline.due <= now) expired.push(deadline);
      else next = Math.min(next, deadline.due);
    }
    if (next !== Infinity) this.scheduleWake(next);
    // After the bookkeeping: an expiry may add or remove deadlines (even one due with it). One
    // that throws does not keep the others from expiring.
    let thrown: { error: unknown } | null = null;
    for (const deadline of expired) {
      if (!this.deadlines.delete(deadline)) continue;
      try {
        deadline.expire();
      } catch (error) {
        thrown ??= { error };
      }
    }
    if (thrown !== null) throw thrown.error;
  }
}

/** One deadline of a `LazyDeadlines` that is moved again and again (a collective's, set per sequence). */
export class LazyDeadline {
  private current: Deadline | null = null;

  constructor(
    private readonly deadlines: LazyDeadlines,
    private readonly expire: () => void,
  ) {}

  /** Due `delayMs` from now (moved there if it was set). */
  set(delayMs: number): void {
    this.clear();
    this.current = this.deadlines.add(delayMs, this.fire);
  }

  clear(): void {
    if (this.current !== null) this.deadlines.remove(this.current);
    this.current = null;
  }

  private readonly fire = (): void => {
    this.current = null;
    this.expire();
  };
}
