/**
 * Reduction kernels: every reduction (AllReduce, Reduce, ReduceScatter) runs on the ranks with
 * these, the coordinator only routes bytes. A C++ addon (native/) runs them vectorised, off the
 * JS thread and split across cores; lib/kernels/reference.ts is the same in TypeScript, used as
 * the test oracle and when the addon is not built.
 *
 * Semantics (also in lib/kernels/README.md; native and reference agree bit for bit, NaN payloads
 * aside):
 * - Slices are folded left in rank order: op(op(op(s0, s1), s2), ...). accumulate is one such
 *   step, so a ring that accumulates chunk by chunk in rank order gets the same bits.
 * - Integers wrap (two's complement) on sum and prod.
 * - avg is the (wrapped) sum divided by the number of slices; integers truncate toward zero
 *   (-7 / 2 = -3), unsigned types divide unsigned. accumulate with avg sums; finish with divide.
 * - f16 and bf16: every pairwise step widens both operands to f32, computes in f32 and rounds
 *   back to 16 bits to nearest even (so accumulate and reduceSlices round alike). avg divides the
 *   rounded sum in f32 and rounds once more. f32 computes in f32, f64 in f64; no fast-math.
 * - min and max propagate NaN (like torch.minimum/maximum): any NaN operand gives NaN. Exactly,
 *   min(a, b) = `a < b || a is NaN ? a : b` and max(a, b) = `a > b || a is NaN ? a : b`, so
 *   between operands that compare equal (+0 and -0) the second one is returned.
 * - band, bor, bxor are defined on integer dtypes only: validateReduction rejects them on
 *   floats with a ConfigurationError before anything is sent.
 * - Buffers are Uint8Arrays at any byte offset (network buffers are often unaligned); elements
 *   are little-endian, the platform order of every Node.js target.
 * - Kernels in flight run concurrently and finish in any order; chain dependent kernels (for
 *   example with concatMap). A running kernel keeps its buffers alive until it completes; do not
 *   transfer (detach) them meanwhile.
 */
import type { Observable } from 'rxjs';
import { firstValueFrom } from 'rxjs';
import { activeBackend } from './active-backend.js';
import {
  type AccumulateRequest,
  accumulateCall,
  type DivideRequest,
  divideCall,
  type ReduceSlicesRequest,
  reduceSlicesCall,
  type ReduceSpansRequest,
  reduceSpansCall,
} from './calls.js';
import { scheduleKernel } from './schedule.js';

export type { AccumulateRequest, DivideRequest, ReduceSlicesRequest, ReduceSpansRequest } from './calls.js';
export { SYNC_CROSSOVER_BYTES } from './schedule.js';
export { validateReduction } from './validate.js';

/** Reduces `slices` equal slices into one; emits the output (given or allocated) once. */
export function scheduleReduce(request: ReduceSlicesRequest): Observable<Uint8Array> {
  return scheduleKernel(() => reduceSlicesCall(request));
}

/** Reduces `slices` equal slices into one on the kernel threads; resolves with the output (given or allocated). */
export function reduceSlices(request: ReduceSlicesRequest): Promise<Uint8Array> {
  return firstValueFrom(scheduleReduce(request));
}

/**
 * output = op over `sources` folded left in their order (avg divides the sum by `divisor`, default
 * their number); emits the output. Runs in place up to `syncUpToBytes` read, else on a worker.
 */
export function scheduleReduceSpans(request: ReduceSpansRequest, syncUpToBytes?: number): Observable<Uint8Array> {
  return scheduleKernel(() => reduceSpansCall(request), syncUpToBytes);
}

/**
 * accumulator = op(accumulator, source); emits the accumulator. For avg this accumulates a sum.
 * Runs in place up to `syncUpToBytes` read (default `SYNC_CROSSOVER_BYTES`), else on a worker.
 */
export function scheduleAccumulate(request: AccumulateRequest, syncUpToBytes?: number): Observable<Uint8Array> {
  return scheduleKernel(() => accumulateCall(request), syncUpToBytes);
}

/** data = data / divisor (avg's finishing step); emits data. */
export function scheduleDivide(request: DivideRequest): Observable<Uint8Array> {
  return scheduleKernel(() => divideCall(request));
}

/** Which kernels this process runs: 'reference' only when the addon could not be loaded. */
export function kernelBackend(): 'native' | 'reference' {
  return activeBackend().name;
}
