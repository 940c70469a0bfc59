import { asyncScheduler, concatAll, Observable, type OperatorFunction, type SchedulerLike, share, Subject, type Subscription } from 'rxjs';
import { checkBucketBytes, DEFAULT_BUCKET_BYTES, firstBucket, type FusedItem } from '../../collectives/fusion/buckets.js';
import { ConfigurationError } from '../../errors.js';
import { validateReduction } from '../../kernels/index.js';
import type { ReduceOp } from '../../protocol/reduce-op.js';
import { type Tensor, viewTensor } from '../../tensor.js';
import { checkReduceOp } from '../arguments.js';
import type { RankSession } from '../rank-session.js';

/** How the `allReduceFused` operator packs a stream of tensors into buckets, when a bucket goes, where results go. */
export interface FusedStreamOptions {
  /** The most bytes a bucket holds (a larger tensor goes alone); default 64 MiB, Horovod's. */
  readonly bucketBytes?: number;
  /**
   * Sends a bucket that is not full once its oldest tensor has waited this many milliseconds
   * (Horovod's cycle time). Default none: a bucket goes when full, what is left when the stream
   * completes. With a window, the ranks agree on how many tensors each bucket takes (one 4-byte
   * all-reduce more per bucket), since their clocks fire at different points of the stream.
   */
  readonly windowMs?: number | null;
  /**
   * Write each result into its own tensor and emit the tensor itself (the session's recycled
   * memory packs the bucket: no fresh memory at all, as torch DDP's buckets). Default: fresh
   * tensors, views into their bucket's result.
   */
  readonly inPlace?: boolean;
  /** Whose clock the window is on (tests pass a virtual one); default `asyncScheduler`. */
  readonly scheduler?: SchedulerLike;
}

/** A tensor of the stream not sent yet, and when it came. */
interface Waiting<T> {
  readonly tensor: T;
  readonly item: FusedItem;
  readonly at: number;
}

/**
 * Fusion for a stream of tensors (docs/architecture.md, "Fusion"): tensors are packed, in order,
 * into buckets of at most `bucketBytes` (lib/collectives/fusion/buckets.ts), each bucket one
 * all-reduce (`session.allReduceMany`), and every tensor's result is emitted in the stream's order.
 * A bucket goes once it is full (the next tensor would not fit, or differs in type), once the
 * stream completes, or, with `windowMs`, once its oldest tensor has waited that long. Every rank's
 * stream must carry tensors of the same types and lengths in the same order, and while tensors are
 * waiting nothing else may be submitted on the session unless every rank does it at the same point
 * of the stream (give the stream a communicator of its own, `session.split`, otherwise). Results are
 * fresh tensors (views into their bucket's result), or with `inPlace` the stream's own tensors;
 * shared by every subscriber, as every operator.
 * @example
 * gradients$.pipe(allReduceFused(session, 'avg', { bucketBytes: 4 << 20 })).subscribe(apply);
 */
export function allReduceFused<T extends Tensor>(session: RankSession, op: ReduceOp = 'sum', options: FusedStreamOptions = {}): OperatorFunction<T, T> {
  const bucketBytes = checkBucketBytes(options.bucketBytes ?? DEFAULT_BUCKET_BYTES);
  const windowMs = options.windowMs ?? null;
  if (windowMs !== null && !(Number.isFinite(windowMs) && windowMs >= 0)) {
    throw new ConfigurationError(`windowMs must be a finite number of milliseconds >= 0, or null, got ${String(windowMs)}`);
  }
  checkReduceOp(op);
  const scheduler = options.scheduler ?? asyncScheduler;
  const inPlace = options.inPlace === true;
  return (source) =>
    new Observable<T>((subscriber) => {
      const waiting: Waiting<T>[] = [];
      // Buckets' results, in the order their all-reduces were submitted.
      const results = new Subject<Observable<T[]>>();
      let ended = false;
      // A window's agreement on how many tensors go: the next bucket is cut once it is known (it
      // may be known before the subscription returns: small collectives can end on this thread).
      let agreeing = false;
      let agreement: Subscription | null = null;
      let timer: Subscription | null = null;

      const send = (count: number) => {
        const taken = waiting.splice(0, count);
        results.next(session.allReduceMany$(taken.map((entry) => entry.tensor), op, { bucketBytes, inPlace }));
      };
      // Sends every bucket due now; arms the window for the one left.
      const decide = (): void => {
        if (agreeing || subscriber.closed) return;
        timer?.unsubscribe();
        timer = null;
        for (;;) {
          if (waiting.length === 0) {
            if (ended) results.complete();
            return;
          }
          const { count, closed } = firstBucket(waiting.map((entry) => entry.item), bucketBytes);
          const waited = scheduler.now() - waiting[0]!.at;
          if (!(closed || ended || (windowMs !== null && waited >= windowMs))) {
            if (windowMs !== null) timer = scheduler.schedule(decide, windowMs - waited);
            return;
          }
          if (windowMs === null) {
            // Full buckets and the stream's end fall at the same tensors on every rank.
            send(count);
            continue;
          }
          // Each rank's clock fires at its own point of the stream: the bucket takes the tensors
          // every rank has (a tensor count's minimum), cut as usual from those.
          agreeing = true;
          agreement = session.allReduce$(Uint32Array.of(waiting.length), 'min').subscribe({
            next: ([ready]) => {
              agreeing = false;
              send(firstBucket(waiting.slice(0, ready).map((entry) => entry.item), bucketBytes).count);
              decide();
            },
            error: (error: unknown) => subscriber.error(error),
          });
          return;
        }
      };

      const emitting = results.pipe(concatAll()).subscribe({
        next: (tensors) => {
          for (const tensor of tensors) subscriber.next(tensor);
        },
        error: (error: unknown) => subscriber.error(error),
        complete: () => subscriber.complete(),
      });
      const input = source.subscribe({
        next: (tensor) => {
          try {
            const view = viewTensor(tensor, 'allReduceFused tensor');
            validateReduction(view.dtype, op);
            waiting.push({ tensor, item: { dtype: view.dtype, count: view.count, bytes: view.bytes.length }, at: scheduler.now() });
          } catch (error) {
            subscriber.error(error);
            return;
          }
          decide();
        },
        error: (error: unknown) => subscriber.error(error),
        complete: () => {
          ended = true;
          decide();
        },
      });
      return () => {
        input.unsubscribe();
        emitting.unsubscribe();
        agreement?.unsubscribe();
        timer?.unsubscribe();
      };
    }).pipe(share());
}
