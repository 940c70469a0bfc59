import type { Socket } from 'node:net';
import { type MonoTypeOperatorFunction, Observable } from 'rxjs';

/**
 * Whether a session keeps its process alive: only while an operation is pending. An idle
 * session's sockets are unreferenced, so a rank that finishes its work and forgets `close()`
 * exits like a torch rank does instead of hanging on open connections; a pending collective,
 * send or receive references them again, so the process waits for it as for any I/O.
 */
export class EventLoopHold {
  private pending = 0;

  constructor(private readonly sockets: readonly Socket[]) {
    this.apply();
  }

  /** Holds the event loop from subscription until the operation ends, however it ends. */
  during<T>(): MonoTypeOperatorFunction<T> {
    // Hand-written rather than defer + finalize: every collective and message passes here.
    return (source: Observable<T>) =>
      new Observable<T>((subscriber) => {
        if (this.pending++ === 0) this.apply();
        subscriber.add(() => {
          if (--this.pending === 0) this.apply();
        });
        subscriber.add(source.subscribe(subscriber));
      });
  }

  private apply(): void {
    for (const socket of this.sockets) {
      if (this.pending > 0) socket.ref();
      else socket.unref();
    }
  }
}
