import type { Socket } from 'node:net';
import { type MonoTypeOperatorFunction, Observable, type Subscriber } from 'rxjs';

/** What an EventLoopHold polls with (tests pass a fake one). */
export interface PollClock {
  now(): number;
  immediate(turn: () => void): void;
}

const REAL_CLOCK: PollClock = { now: () => performance.now(), immediate: (turn) => void setImmediate(turn) };

/**
 * Whether a session keeps its process alive: only while an operation is pending. An idle
 * session's sockets are unreferenced, so a rank that finishes its work and forgets `close()`
 * exits like a torch rank does instead of hanging on open connections; a pending collective,
 * send or receive references them again, so the process waits for it as for any I/O.
 *
 * With a busy-poll window, each operation that starts also keeps the event loop turning (one
 * `setImmediate` after another, so libuv polls its sockets without blocking) for that long: an
 * answer that comes within it is seen at once, instead of after the wake-up of a sleeping thread
 * on a halted core (~35-100 us a hop on the VMs measured, docs/architecture.md). Past the window
 * the loop sleeps as usual, so a long wait costs no CPU.
 */
export class EventLoopHold {
  private pending = 0;
  private pollUntil = 0;
  private polling = false;

  constructor(
    private readonly sockets: readonly Socket[],
    private readonly busyPollMs = 0,
    private readonly clock: PollClock = REAL_CLOCK,
  ) {
    this.apply();
  }

  /** Holds the event loop from subscription until the operation ends, however it ends. */
  during<T>(): MonoTypeOperatorFunction<T> {
    // Hand-written rather than defer + finalize: every collective and message passes here.
    return (source: Observable<T>) =>
      new Observable<T>((subscriber) => {
        this.hold(subscriber);
        subscriber.add(source.subscribe(subscriber));
      });
  }

  /**
   * Holds the event loop until `subscriber` is finalized (for operators that do their own
   * subscribing); `busyPoll` false holds it without polling (the operation waits elsewhere).
   */
  hold(subscriber: Subscriber<unknown>, busyPoll = true): void {
    if (this.pending++ === 0) this.apply();
    if (busyPoll && this.busyPollMs > 0) this.poll();
    subscriber.add(this.ended);
  }

  private readonly ended = (): void => {
    if (--this.pending === 0) this.apply();
  };

  private apply(): void {
    for (const socket of this.sockets) {
      if (this.pending > 0) socket.ref();
      else socket.unref();
    }
  }

  private poll(): void {
    this.pollUntil = this.clock.now() + this.busyPollMs;
    if (this.polling) return;
    this.polling = true;
    this.clock.immediate(this.turn);
  }

  private readonly turn = (): void => {
    if (this.pending > 0 && this.clock.now() < this.pollUntil) this.clock.immediate(this.turn);
    else this.polling = false;
  };
}
