import type { SchedulerLike, Subscription } from 'rxjs';

/**
 * The longest the scheduled action sleeps at once. A cleared deadline's action still holds the
 * event loop until it runs: this bounds how long it keeps an otherwise idle process (a rank that
 * hosts the coordinator and never closed its session) from exiting.
 */
export const LAZY_DEADLINE_NAP_MS = 250;

/**
 * A deadline that is set and cleared once per collective but rarely reached. Setting it reads the
 * clock and schedules nothing while the one scheduled action fires no later than the deadline;
 * that action, when it finds the deadline moved on, schedules itself again for the rest. So a
 * deadline fires exactly when it is due (on a virtual clock too), and a run of collectives that
 * each finish in time costs no timer each (an RxJS `timer` is a setInterval and a clearInterval).
 * The action sleeps at most `LAZY_DEADLINE_NAP_MS` at a time and outlives `clear()` until it next
 * runs (or `stop()`).
 */
export class LazyDeadline {
  /** When it is due (scheduler time), or null when cleared. */
  private due: number | null = null;
  private action: Subscription | null = null;
  /** When the scheduled action runs. */
  private wakeAt = 0;

  constructor(
    private readonly scheduler: SchedulerLike,
    private readonly expire: () => void,
  ) {}

  /** Due `delayMs` from now. */
  set(delayMs: number): void {
    const due = this.scheduler.now() + delayMs;
    this.due = due;
    if (this.action === null || this.wakeAt > due) this.scheduleWake();
  }

  clear(): void {
    this.due = null;
  }

  /** Clears it and cancels the scheduled action. */
  stop(): void {
    this.due = null;
    this.action?.unsubscribe();
    this.action = null;
  }

  /** Wakes when due, or after a nap when that is sooner. */
  private scheduleWake(): void {
    this.action?.unsubscribe();
    const now = this.scheduler.now();
    const delay = Math.max(0, Math.min(this.due! - now, LAZY_DEADLINE_NAP_MS));
    this.wakeAt = now + delay;
    this.action = this.scheduler.schedule(() => this.wake(), delay);
  }

  private wake(): void {
    this.action = null;
    const due = this.due;
    if (due === null) return;
    if (this.scheduler.now() < due) {
      this.scheduleWake();
      return;
    }
    this.due = null;
    this.expire();
  }
}
