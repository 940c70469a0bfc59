import { concatMap, defer, from, lastValueFrom, Observable, type ObservableInput, type OperatorFunction, share, toArray } from 'rxjs';
import { ProtocolError, RankLostError } from '../../errors.js';
import type { Communicator } from '../rank-session.js';

/** A snapshot of the user's state and the index of the first value it has not seen. */
interface Commit<S> {
  readonly index: number;
  readonly state: S;
}

/** What changed the communicator `elastic` goes on with. */
export type ElasticChange = { readonly kind: 'shrink'; readonly lost: RankLostError } | { readonly kind: 'grow'; readonly newcomers: readonly number[] };

/** The user's state as `elastic` keeps it (Horovod elastic's commit/restore), and how often. */
export interface ElasticOptions<S> {
  /**
   * A snapshot of the state after a step (a copy: later steps must not change it). Taken every
   * `commitEvery` values, and where the communicator is grown, sent from rank 0 to the newcomers.
   */
  readonly commit: () => S | Promise<S>;
  /** Puts a snapshot back: after a loss, the last one every rank left has; on a newcomer, rank 0's. */
  readonly restore: (state: S) => void | Promise<void>;
  /** Values between commits, and so between checks for processes waiting to join (default 1). */
  readonly commitEvery?: number;
  /** Told of each shrink and growth: the communicator the pipeline goes on with, and why. */
  readonly onResize?: (communicator: Communicator, change: ElasticChange) => void;
  /** Shrinks allowed before a loss errors the stream (default unlimited). */
  readonly maxShrinks?: number;
}

/**
 * Elastic training as an operator (Horovod elastic's `run` with commit/restore): runs
 * `step(communicator, value)` for each value, one at a time and in order, on a communicator that
 * shrinks when a rank is lost and grows when processes wait to join (`grow()`; started with
 * `GX1_JOIN=1`, `rxccl launch --replace`).
 *
 * - Every `commitEvery` values it takes a snapshot (`commit`) and admits the processes waiting, if
 *   any: the grown world's rank 0 sends its last snapshot and the index it stands at to the
 *   newcomers, which `restore` it and skip the values before that index (a newcomer runs the same
 *   pipeline, on the same source, from its start: `elastic` on the session `openSession` gave it).
 * - A step that fails with `RankLostError` shrinks the communicator; the ranks left agree on the
 *   last snapshot they all have (a step may have completed on some ranks only: each keeps its
 *   last two), `restore` it, and run again the values from there. A value's results are emitted
 *   once, the first time it completes on this rank.
 *
 * The step gets the communicator each time: divide a sum by its `worldSize`, not the one the job
 * started with. Any other error errors the stream.
 *
 * @example
 * batches$.pipe(
 *   elastic(world, (communicator, batch) => trainStep(communicator, batch), {
 *     commit: () => model.getWeights().map((weight) => weight.dataSync().slice()),
 *     restore: (weights) => model.setWeights(weights.map((values, index) => tf.tensor(values, shapes[index]))),
 *   }),
 * ).subscribe(); // goes on when a rank dies, and grows back when a replacement joins
 */
export function elastic<T, R, S>(start: Communicator, step: (communicator: Communicator, value: T) => ObservableInput<R>, options: ElasticOptions<S>): OperatorFunction<T, R> {
  const commitEvery = options.commitEvery ?? 1;
  if (!Number.isSafeInteger(commitEvery) || commitEvery < 1) throw new ProtocolError(`elastic: commitEvery must be a positive integer, got ${commitEvery}`);
  return (source) =>
    defer(() => {
      let communicator = start;
      let shrinks = 0;
      /** Values from `base` on, by index (those a rewind may run again, and those not run yet). */
      const values: T[] = [];
      let base = 0;
      /** Values the source gave so far. */
      let arrived = 0;
      let next = 0;
      /** Values below this one emitted their results here. */
      let emitted = 0;
      let latest: Commit<S> | null = null;
      let previous: Commit<S> | null = null;
      let started = false;

      /** The grown world's rank 0 sends its last snapshot; newcomers restore it and skip to its index. */
      const sync = async (world: Communicator): Promise<void> => {
        const commit = await world.broadcastObject<Commit<S>>(world.rank === 0 ? latest : null, 0);
        if (!world.newcomers.includes(world.rank)) return;
        await options.restore(commit.state);
        latest = commit;
        previous = null;
        // The values before its index are the others' past: dropped as they come.
        values.splice(0, values.length, ...values.slice(commit.index - base));
        base = next = emitted = commit.index;
      };

      const begin = async (): Promise<void> => {
        started = true;
        latest = { index: 0, state: await options.commit() };
        if (communicator.newcomers.includes(communicator.rank)) await sync(communicator);
      };

      /** After each `commitEvery` values: a snapshot, then the processes waiting, if any, admitted. */
      const commitAndGrow = async (index: number): Promise<void> => {
        previous = latest;
        latest = { index, state: await options.commit() };
        values.splice(0, previous!.index - base);
        base = previous!.index;
        const grown = await communicator.grow();
        if (grown === communicator) return;
        communicator = grown;
        await sync(grown);
        options.onResize?.(grown, { kind: 'grow', newcomers: grown.newcomers });
      };

      /** After a loss: the shrunk communicator, at the last snapshot every rank left has. */
      const shrinkAndRewind = async (lost: RankLostError): Promise<void> => {
        for (let loss = lost; ; ) {
          if (shrinks >= (options.maxShrinks ?? Infinity)) throw loss;
          shrinks += 1;
          try {
            const shrunk = await communicator.shrink();
            communicator = shrunk;
            const indices = await shrunk.allGather(Float64Array.of(latest!.index));
            const agreed = Math.min(...indices);
            const snapshot = [latest, previous].find((commit): commit is Commit<S> => commit !== null && commit.index === agreed);
            if (snapshot === undefined) {
              throw new ProtocolError(
                `elastic: after rank ${loss.rank} was lost, the ranks left stand at snapshots [${[...indices].join(',')}] (by rank of the shrunk communicator) and this rank has none at value ${agreed}`,
              );
            }
            await options.restore(snapshot.state);
            latest = snapshot;
            if (snapshot !== previous) previous = null;
            next = agreed;
            options.onResize?.(shrunk, { kind: 'shrink', lost: loss });
            return;
          } catch (error) {
            if (!(error instanceof RankLostError)) throw error;
            loss = error;
          }
        }
      };

      /** Runs every value not run yet (and those a rewind asks again), emitting each value's results once. */
      const advance = (value: T) =>
        new Observable<R>((subscriber) => {
          if (arrived++ >= base) values.push(value);
          const run = async () => {
            if (!started) await begin();
            while (next < base + values.length) {
              const index = next;
              try {
                const results = await lastValueFrom(from(step(communicator, values[index - base]!)).pipe(toArray()));
                next = index + 1;
                if (index >= emitted) {
                  emitted = index + 1;
                  for (const result of results) subscriber.next(result);
                }
                if (next % commitEvery === 0) await commitAndGrow(next);
              } catch (error) {
                if (!(error instanceof RankLostError)) throw error;
                await shrinkAndRewind(error);
              }
            }
          };
          run().then(
            () => subscriber.complete(),
            (error: unknown) => subscriber.error(error),
          );
        });

      return source.pipe(concatMap(advance));
    }).pipe(share());
}
