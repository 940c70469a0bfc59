import type { Socket } from 'node:net';
import { type MonoTypeOperatorFunction, Observable, type Subscriber } from 'rxjs';
import { BusyWindow, type PollClock, REAL_CLOCK } from '../transport/busy-window.js';

/**
 * Whether a session keeps its process alive: only while an operation is pending. An idle
 * session's sockets are unreferenced, so a rank that finishes its work and forgets `close()`
 * exits like a torch rank does instead of hanging on open connections; a pending collective,
 * send or receive references them again, so the process waits for it as for any I/O.
 *
 * The sockets are let go a turn of the event loop after the last operation ended, not at once:
 * operations awaited back to back (the next one starts in the same turn) keep them referenced,
 * instead of referencing and unreferencing every socket twice a call.
 *
 * With a busy-poll window, each operation that starts also keeps the event loop turning for that
 * long (a BusyWindow, while the operation is pending): an answer that comes within it is seen at
 * once. Past the window the loop sleeps as usual, so a long wait costs no CPU.
 */
export class EventLoopHold {
  private pending = 0;
  /** Whether the sockets are referenced now. */
  private referenced = true;
  /** A turn is queued to let them go (`release`). */
  private releasing = false;
  private readonly window: BusyWindow;

  constructor(
    /** Lists of sockets, read at each change: a session whose links open on demand adds them to its mesh's list as they open. */
    private readonly sockets: readonly (readonly Socket[])[],
    busyPollMs = 0,
    private readonly clock: PollClock = REAL_CLOCK,
  ) {
    this.window = new BusyWindow(busyPollMs, null, clock, () => this.pending > 0);
    this.apply(false);
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
    if (this.pending++ === 0 && !this.referenced) this.apply(true);
    if (busyPoll) this.window.open();
    subscriber.add(this.ended);
  }

  private readonly ended = (): void => {
    if (--this.pending > 0 || this.releasing || this.sockets.length === 0) return;
    this.releasing = true;
    this.clock.immediate(this.release);
  };

  /** A turn after the last operation ended: nothing pending, the sockets go. */
  private readonly release = (): void => {
    this.releasing = false;
    if (this.pending === 0 && this.referenced) this.apply(false);
  };

  private apply(referenced: boolean): void {
    this.referenced = referenced;
    for (const list of this.sockets) for (const socket of list) {
      // A destroyed socket (a peer lost before shrink()) holds nothing; and Node's ref()/unref()
      // on a socket without a handle waits for a 'connect' that never comes, one listener per call.
      if (socket.destroyed) continue;
      if (referenced) socket.ref();
      else socket.unref();
    }
  }
}
