import { map, type Observable } from 'rxjs';
import type { CollectiveName, Collectives } from '../collectives/algorithm.js';
import { ConfigurationError } from '../errors.js';
import { validateReduction } from '../kernels/index.js';
import type { ReduceOp } from '../protocol/reduce-op.js';
import { comesTagged, type Tensor, tensorFromBytes, type TensorView, viewTensor } from '../tensor.js';
import { checkCount, checkDivisible, checkRank, checkReduceOp } from './arguments.js';
import type { CollectiveRunner } from './collective-runner.js';

/** Where a reduction (`allReduce`, `reduce`) puts its result: a fresh tensor by default. */
export interface ReductionOptions<T extends Tensor = Tensor> {
  /** Write the result into the input tensor and return it (no new memory). */
  readonly inPlace?: boolean;
  /**
   * Write the result into `output` and return it (no new memory; the input stays as it is): a
   * tensor of the input's type and length that does not overlap it. Not with `inPlace`.
   */
  readonly output?: T;
}

/** Where `broadcast` puts the root's tensor on every rank: a fresh tensor by default. */
export interface BroadcastOptions<T extends Tensor = Tensor> {
  /** Receive the root's tensor into this rank's `data` and return it (no new memory; the root's stays as it is). */
  readonly inPlace?: boolean;
  /**
   * Write the root's tensor into `output` and return it (no new memory; `data` stays as it is): a
   * tensor of `data`'s type and length that does not overlap it. Not with `inPlace`.
   */
  readonly output?: T;
}

/** Where a collective whose result differs in length from its input (`allGather`, `reduceScatter` ...) puts it: a fresh tensor by default. */
export interface OutputOptions<T extends Tensor> {
  /**
   * Write the result into `output` and return it (no new memory): a tensor of the input's type
   * with the result's length (W times the input's for allGather, a W-th of it for reduceScatter).
   * It must not overlap the input, except as NCCL's in-place forms: allGather's input may be this
   * rank's slot of the output, reduceScatter's output this rank's slot of the input.
   */
  readonly output?: T;
}

/**
 * A session's collectives as its users call them: every argument checked before anything is
 * sent, the request each algorithm takes built from the caller's tensors, and the result handed
 * back in the caller's form (its tensor type, its output memory). `runner` queues and runs them.
 */
export class CollectiveRequests {
  constructor(
    private readonly runner: CollectiveRunner,
    private readonly rank: number,
    private readonly worldSize: number,
  ) {}

  barrier(): Observable<void> {
    return this.runner.submit('barrier', () => ({}), 0);
  }

  /** `layout`: a fused bucket's (lib/collectives/fusion/buckets.ts), which the agreement checks with the rest. */
  allReduce<T extends Tensor>(data: T, op: ReduceOp, options: ReductionOptions<T>, layout?: bigint): Observable<T> {
    return this.tensorCollective<'allReduce', T>('allReduce', data, (view, output) => ({ view, op: reducible(view, op), output, layout }), resultMemory(data, options));
  }

  reduce<T extends Tensor>(data: T, op: ReduceOp, root: number): Observable<T | null> {
    return this.tensorCollective<'reduce', T | null>('reduce', data, (view) => ({ view, op: reducible(view, op), root: checkRank(root, this.worldSize, 'root') }));
  }

  broadcast<T extends Tensor>(data: T, root: number, options: BroadcastOptions<T>): Observable<T> {
    return this.tensorCollective<'broadcast', T>('broadcast', data, (view, output) => ({ view, root: checkRank(root, this.worldSize, 'root'), output }), resultMemory(data, options));
  }

  allGather<T extends Tensor>(data: T, options: OutputOptions<T>): Observable<T> {
    return this.tensorCollective<'allGather', T>('allGather', data, (view, output) => ({ view, output }), resultMemory(data, { output: options?.output }), (count) => count * this.worldSize);
  }

  gather<T extends Tensor>(data: T, root: number): Observable<T | null> {
    return this.tensorCollective<'gather', T | null>('gather', data, (view) => ({ view, root: checkRank(root, this.worldSize, 'root') }));
  }

  reduceScatter<T extends Tensor>(data: T, op: ReduceOp, options: OutputOptions<T>): Observable<T> {
    const shard = (count: number) => {
      checkDivisible(count, this.worldSize, 'reduce-scatter');
      return count / this.worldSize;
    };
    return this.tensorCollective<'reduceScatter', T>(
      'reduceScatter',
      data,
      (view, output) => {
        const request = { view, op: reducible(view, op), output };
        shard(view.count);
        return request;
      },
      resultMemory(data, { output: options?.output }),
      shard,
    );
  }

  allToAll<T extends Tensor>(data: T, options: OutputOptions<T>): Observable<T> {
    return this.tensorCollective<'allToAll', T>(
      'allToAll',
      data,
      (view, output) => {
        checkDivisible(view.count, this.worldSize, 'all-to-all');
        return { view, output };
      },
      resultMemory(data, { output: options?.output }),
    );
  }

  scatter<T extends Tensor>(data: T | null, root: number, countPerRank: number): Observable<T> {
    let view: TensorView | null = null;
    return this.runner
      .submit(
        'scatter',
        () => {
          checkRank(root, this.worldSize, 'root');
          checkCount(countPerRank, 'countPerRank');
          view = data === null ? null : viewTensor(data);
          const total = countPerRank * this.worldSize;
          if (this.rank === root && view === null) throw new ConfigurationError(`scatter root rank ${root} must pass data`);
          if (view !== null && view.count !== total) {
            throw new ConfigurationError(`scatter data has ${view.count} elements, expected countPerRank ${countPerRank} x world size ${this.worldSize} = ${total}`);
          }
          return { view, root, countPerRank };
        },
        0,
      )
      .pipe(
        map(({ dtype, bytes }) => {
          // A rank that passed null learnt the type from the wire: f16/bf16 come tagged.
          const tagged = view?.tagged ?? comesTagged(dtype);
          return tensorFromBytes(dtype, bytes, tagged) as T;
        }),
      );
  }

  allToAllV<T extends Tensor>(data: T, sendCounts: readonly number[]): Observable<{ data: T; counts: number[] }> {
    let view: TensorView | null = null;
    return this.runner
      .submit(
        'allToAllV',
        () => {
          view = viewTensor(data);
          if (!Array.isArray(sendCounts) || sendCounts.length !== this.worldSize) {
            throw new ConfigurationError(`all-to-all-v needs ${this.worldSize} send counts, got ${Array.isArray(sendCounts) ? sendCounts.length : typeof sendCounts}`);
          }
          sendCounts.forEach((count, rank) => checkCount(count, `sendCounts[${rank}]`));
          const total = sendCounts.reduce((sum, count) => sum + count, 0);
          if (total !== view.count) throw new ConfigurationError(`all-to-all-v send counts sum to ${total}, data has ${view.count} elements`);
          return { view, sendCounts };
        },
        0,
      )
      .pipe(map(({ bytes, counts }) => ({ data: tensorFromBytes(view!.dtype, bytes, view!.tagged) as T, counts })));
  }

  /**
   * A tensor collective whose result has the input's dtype and form. With `memory` (the caller's
   * tensor of the result's length, `resultCount` of the input's: the input itself for in-place
   * calls), the algorithm writes the result there (or this copies it there) and that tensor itself
   * is the result.
   */
  private tensorCollective<N extends CollectiveName, Out>(
    collective: N,
    data: Tensor,
    request: (view: TensorView, output: Uint8Array | undefined) => Collectives[N][0],
    memory?: ResultMemory<Tensor>,
    resultCount: (count: number) => number = (count) => count,
  ): Observable<Out> {
    let view: TensorView | null = null;
    let into: Uint8Array | undefined;
    return this.runner.submit(
      collective,
      () => {
        if (memory?.conflict === true) throw new ConfigurationError(`${collective} takes inPlace or an output, not both`);
        view = viewTensor(data);
        into = memory === undefined ? undefined : checkOutput(collective, view, viewTensor(memory.tensor), resultCount(view.count), memory.inPlace, this.rank);
        return request(view, into);
      },
      () => view!.bytes.length,
      // In the queue's hand-off rather than a `map` after it: one Observable layer less per call.
      (result) => {
        if (into === undefined) return (result === null ? null : tensorFromBytes(view!.dtype, result as Uint8Array, view!.tagged)) as Out;
        if (result !== into) into.set(result as Uint8Array);
        return memory!.tensor as Out;
      },
    );
  }
}

function reducible(view: TensorView, op: ReduceOp): ReduceOp {
  validateReduction(view.dtype, checkReduceOp(op));
  return op;
}

/** The bytes of a caller's output tensor, checked against the result it must hold. */
function checkOutput(collective: CollectiveName, input: TensorView, output: TensorView, expected: number, inPlace: boolean, rank: number): Uint8Array {
  if (output.dtype !== input.dtype || output.count !== expected) {
    throw new ConfigurationError(`${collective} output is ${output.dtype} x ${output.count}, its result is ${input.dtype} x ${expected}`);
  }
  // In place, the algorithm gets the input's own view: it recognises it and writes no copy.
  if (inPlace) return input.bytes;
  // Results are written while the input is still being read. Besides in place, only the slots of
  // NCCL's in-place forms may be shared: allGather's input as this rank's slot of the output,
  // reduceScatter's output as this rank's slot of the input.
  if (overlaps(input.bytes, output.bytes) && !sharesOwnSlot(collective, input.bytes, output.bytes, rank)) {
    const hint = collective === 'allReduce' || collective === 'broadcast' ? ' (to write the result over the input, use { inPlace: true })' : '';
    throw new ConfigurationError(`${collective} output overlaps its input${hint}`);
  }
  return output.bytes;
}

function overlaps(a: Uint8Array, b: Uint8Array): boolean {
  return a.buffer === b.buffer && a.length > 0 && b.length > 0 && a.byteOffset < b.byteOffset + b.length && b.byteOffset < a.byteOffset + a.length;
}

/** Whether `output` and `input` share exactly this rank's slot (see `checkOutput`). */
function sharesOwnSlot(collective: CollectiveName, input: Uint8Array, output: Uint8Array, rank: number): boolean {
  const [whole, slot] = collective === 'allGather' ? [output, input] : collective === 'reduceScatter' ? [input, output] : [null, null];
  return whole !== null && slot !== null && slot.byteOffset === whole.byteOffset + rank * slot.length;
}

/** Where an all-reduce's or a broadcast's result goes: the input itself (`inPlace`), the caller's `output`, else fresh memory (undefined). */
function resultMemory<T extends Tensor>(data: T, options: { readonly inPlace?: boolean; readonly output?: T } | undefined): ResultMemory<T> | undefined {
  if (options?.inPlace === true) return { tensor: data, inPlace: true, conflict: options.output !== undefined };
  return options?.output === undefined ? undefined : { tensor: options.output, inPlace: false, conflict: false };
}

/** A result's memory chosen by the caller. */
interface ResultMemory<T extends Tensor> {
  readonly tensor: T;
  /** The input's own memory. */
  readonly inPlace: boolean;
  /** Both `inPlace` and an `output` were given. */
  readonly conflict: boolean;
}
