import { catchError, concatMap, defer, from, map, type Observable, type ObservableInput, type OperatorFunction, share, throwError } from 'rxjs';
import { ProtocolError, RankLostError } from '../../errors.js';
import type { Communicator } from '../rank-session.js';

/** What `retryOnShrink` reports of each shrink and how many it allows. */
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
 * A step must be safe to run again: a failed collective may have written part of its output (an
 * in-place all-reduce, part of its input), so keep what it reads until it succeeded. A collective
 * can also complete on some ranks and fail on others (the loss came between their last pieces):
 * the ranks left then stand at different values, which the operator checks after each shrink and
 * reports as a `ProtocolError` rather than mixing two steps.
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
      /** After a loss: the shrunk communicator, once every rank left stands at `index` (a loss meanwhile: shrinks again). */
      const recover = (error: unknown, index: number): Observable<Communicator> => {
        if (!(error instanceof RankLostError) || shrinks >= (options.maxShrinks ?? Infinity)) return throwError(() => error);
        shrinks += 1;
        return from(communicator.shrink()).pipe(
          concatMap((shrunk) => {
            communicator = shrunk;
            options.onShrink?.(shrunk, error);
            return sameValueEverywhere(shrunk, index, error);
          }),
          catchError((again: unknown) => recover(again, index)),
        );
      };
      const attempt = (value: T, index: number): Observable<R> =>
        defer(() => from(step(communicator, value))).pipe(catchError((error: unknown) => recover(error, index).pipe(concatMap(() => attempt(value, index)))));
      return source.pipe(concatMap(attempt));
    }).pipe(share());
}

/** Checks on `shrunk` that every rank left redoes the same value (`index`); emits `shrunk`. */
function sameValueEverywhere(shrunk: Communicator, index: number, lost: RankLostError): Observable<Communicator> {
  return shrunk.allGather$(Float64Array.of(index)).pipe(
    map((indices) => {
      if (indices.every((each) => each === index)) return shrunk;
      throw new ProtocolError(
        `retryOnShrink: after rank ${lost.rank} was lost, the ranks left stand at different values ([${[...indices].join(',')}] by rank of the shrunk communicator): ` +
          'a step completed on some ranks and failed on others, and cannot be run again on the ranks left alone',
      );
    }),
  );
}
