import { catchError, concatMap, defer, from, type Observable, type ObservableInput, type OperatorFunction, share, throwError } from 'rxjs';
import { RankLostError } from '../../errors.js';
import type { Communicator } from '../rank-session.js';

export interface RetryOnShrinkOptions {
  /** Told of each shrink: the communicator the pipeline goes on with, and the loss that made it. */
  readonly onShrink?: (communicator: Communicator, lost: RankLostError) => void;
  /** Shrinks allowed before a loss errors the stream (default unlimited). */
  readonly maxShrinks?: number;
}

/**
 * Recovery as an operator: runs `step(communicator, value)` for each value, one at a time and in
 * order, on a communicator that shrinks when a rank is lost. A step that fails with
 * `RankLostError` is run again, from the value that failed, on the communicator `shrink()` returns
 * (every rank left does the same, so they meet on it); any other error errors the stream. The step
 * gets the communicator each time, so it sees the new `worldSize` (divide a sum by it, not by the
 * size the job started with). Needs a fault-tolerant job (`rxccl launch --keep-going`).
 *
 * @example
 * batches$.pipe(
 *   retryOnShrink(world, (communicator, batch) => communicator.allReduce$(gradientsOf(batch), 'avg')),
 * ).subscribe(applyGradients); // keeps training when a rank dies
 */
export function retryOnShrink<T, R>(start: Communicator, step: (communicator: Communicator, value: T) => ObservableInput<R>, options: RetryOnShrinkOptions = {}): OperatorFunction<T, R> {
  return (source) =>
    defer(() => {
      let communicator = start;
      let shrinks = 0;
      const attempt = (value: T): Observable<R> =>
        defer(() => from(step(communicator, value))).pipe(
          catchError((error: unknown) => {
            if (!(error instanceof RankLostError) || shrinks >= (options.maxShrinks ?? Infinity)) return throwError(() => error);
            shrinks += 1;
            return from(communicator.shrink()).pipe(
              concatMap((shrunk) => {
                communicator = shrunk;
                options.onShrink?.(shrunk, error);
                return attempt(value);
              }),
            );
          }),
        );
      return source.pipe(concatMap(attempt));
    }).pipe(share());
}
