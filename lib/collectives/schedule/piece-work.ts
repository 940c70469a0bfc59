import { Observable, type Subscription } from 'rxjs';

/**
 * Starts one send, receive or kernel of a collective: `then` runs once `source` completes, with
 * the last value it emitted (a receive's payload), and may start what follows (it counts before
 * `source` is counted done).
 */
export type StartWork = <T>(source: Observable<T>, then?: (last: T) => void) => void;

/** Fails the whole group at once with `error` (a failure `launch` found itself, not one of its work's). */
export type FailWork = (error: unknown) => void;

/**
 * The pieces of a scheduled collective on the JS plane (./links-executor.ts), run by hand: `launch`
 * starts the first sends and receives with `start`, each one's `then` starts what depends on it,
 * and the whole completes once every started one has completed, errors with the first error, and
 * tears down whatever still runs when it ends or is unsubscribed (then `launch`'s own teardown);
 * `fail` ends it with an error of `launch`'s own (a deadline), delivered before `fail` returns.
 *
 * Hand-written rather than merge/concat/mergeMap per piece (as `runExchange` is): those operators
 * cost CPU per piece that the transfers need.
 */
export function pieceWork(launch: (start: StartWork, fail: FailWork) => (() => void) | void): Observable<never> {
  return new Observable<never>((subscriber) => {
    const running = new Set<Subscription>();
    // One for `launch` itself, so work that completes while it runs cannot end the whole early.
    let open = 1;
    const finished = () => {
      if (--open === 0) subscriber.complete();
    };
    const fail = (error: unknown) => subscriber.error(error);
    const start: StartWork = <T>(source: Observable<T>, then?: (last: T) => void) => {
      if (subscriber.closed) return;
      open += 1;
      let subscription: Subscription | null = null;
      let last: T | undefined;
      subscription = source.subscribe({
        next: (value) => (last = value),
        error: fail,
        complete: () => {
          if (subscription !== null) running.delete(subscription);
          // What a continuation throws fails the group (as an operator's project would), never the process.
          try {
            then?.(last as T);
          } catch (error) {
            fail(error);
            return;
          }
          finished();
        },
      });
      if (!subscription.closed) running.add(subscription);
    };
    const teardown = launch(start, fail);
    finished();
    return () => {
      for (const subscription of running) subscription.unsubscribe();
      teardown?.();
    };
  });
}
