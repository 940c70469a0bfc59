/**
 * The properties a simulated job is judged by: "every rank gets the reference result, or every
 * rank fails naming the faulty rank". Each check returns null when it holds, else a sentence saying
 * what broke, ready for an assertion message.
 */
import { bf16ToNumber, halfToNumber } from '../kernels/half.js';
import type { DType } from '../protocol/element-type.js';
import { tensorFromBytes } from '../tensor.js';
import { hex } from './bytes.js';
import { isFloat, type Outcome } from './collective-case.js';
import type { SimulationResult } from './simulate-job.js';

/** Does `message` name rank `rank` ("rank 3", or in a list: "missing ranks [1,3]")? */
export function namesRank(message: string, rank: number): boolean {
  return new RegExp(`\\brank ${rank}\\b|\\branks \\[[^\\]]*\\b${rank}\\b`).test(message);
}

/** The values of `bytes` as numbers (f16/bf16 decoded). */
export function numbersOf(dtype: DType, bytes: Uint8Array): number[] {
  const array = tensorFromBytes(dtype, bytes.slice(), false);
  const decode = dtype === 'f16' ? halfToNumber : dtype === 'bf16' ? bf16ToNumber : Number;
  return Array.from(array as ArrayLike<number>, (value) => decode(value));
}

/**
 * null when `actual` is `expected`: the same bytes, or for floats given a `tolerance`, every element
 * within `tolerance` relative (algorithms that fold in ring order round differently, and may end
 * on the other zero: -0 and +0 are equal then).
 */
export function outcomeDifference(actual: Outcome, expected: Outcome, tolerance?: number): string | null {
  if (actual.bytes === null || expected.bytes === null) return actual.bytes === expected.bytes ? null : `got ${actual.bytes && hex(actual.bytes)}, expected ${expected.bytes && hex(expected.bytes)}`;
  if (actual.dtype !== expected.dtype || actual.tagged !== expected.tagged || actual.className !== expected.className) {
    return `got ${actual.dtype} ${actual.className} (tagged ${actual.tagged}), expected ${expected.dtype} ${expected.className} (tagged ${expected.tagged})`;
  }
  if (JSON.stringify(actual.counts) !== JSON.stringify(expected.counts)) return `got counts ${JSON.stringify(actual.counts)}, expected ${JSON.stringify(expected.counts)}`;
  if (hex(actual.bytes) === hex(expected.bytes)) return null;
  const dtype = expected.dtype!;
  if (tolerance !== undefined && isFloat(dtype) && actual.bytes.length === expected.bytes.length) {
    const got = numbersOf(dtype, actual.bytes);
    const far = numbersOf(dtype, expected.bytes).findIndex((value, index) => !(Math.abs(got[index]! - value) <= tolerance * Math.max(1, Math.abs(value))));
    if (far < 0) return null;
  }
  return `got ${hex(actual.bytes)}, expected ${hex(expected.bytes)}`;
}

/** null when every rank returned the outcomes the oracle expects of it (`expected[rank][step]`). */
export function oracleDifference(result: SimulationResult<readonly Outcome[]>, expected: readonly (readonly Outcome[])[], tolerance?: number): string | null {
  for (const outcome of result.ranks) {
    if (outcome.status !== 'returned') {
      return `rank ${outcome.rank} ${outcome.status}${outcome.status === 'threw' ? `: ${outcome.error.code} ${outcome.error.message}` : ''} at step ${outcome.steps}`;
    }
    for (const [step, want] of expected[outcome.rank]!.entries()) {
      const difference = outcomeDifference(outcome.value[step]!, want, tolerance);
      if (difference !== null) return `rank ${outcome.rank} step ${step}: ${difference}`;
    }
  }
  return null;
}

/** null when every rank that was not killed failed with an error that names rank `faulty`. */
export function failureNotNaming(result: SimulationResult<unknown>, faulty: number): string | null {
  for (const outcome of result.ranks) {
    if (outcome.status === 'killed') continue;
    if (outcome.status !== 'threw') return `rank ${outcome.rank} ${outcome.status}, expected it to fail naming rank ${faulty}`;
    if (!namesRank(outcome.error.message, faulty)) return `rank ${outcome.rank} failed without naming rank ${faulty}: ${outcome.error.code} ${outcome.error.message}`;
  }
  return null;
}

/**
 * The property of a job with a fault at `faulty`, rank by rank: each rank returned the reference
 * result, or failed with an error naming `faulty` (or was the rank killed). A rank may finish its
 * program before the fault's effects reach it; it must then have the right values.
 */
export function referenceOrNamedFailure(
  result: SimulationResult<readonly Outcome[]>,
  expected: readonly (readonly Outcome[])[],
  faulty: number,
  tolerance?: number,
): string | null {
  for (const outcome of result.ranks) {
    const own = { ...result, ranks: [outcome] };
    const difference = outcome.status === 'returned' ? oracleDifference(own, expected, tolerance) : null;
    const failure = outcome.status === 'returned' ? null : failureNotNaming(own, faulty);
    if (difference !== null) return `rank ${outcome.rank} returned a result other than the reference: ${difference}`;
    if (failure !== null) return failure;
  }
  return null;
}
