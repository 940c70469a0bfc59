import { ConfigurationError } from '../errors.js';
import { MAX_U64 } from '../protocol/constants.js';
import { type DType, DTYPES } from '../protocol/element-type.js';
import { REDUCE_OPS, type ReduceOp } from '../protocol/reduce-op.js';

/** Argument checks every session method runs before anything goes on the wire. */

export function checkRank(rank: number, worldSize: number, name: string): number {
  if (!Number.isInteger(rank) || rank < 0 || rank >= worldSize) {
    throw new ConfigurationError(`${name} rank ${String(rank)} is outside world size ${worldSize}`);
  }
  return rank;
}

export function checkTag(tag: number | bigint): bigint {
  const value = typeof tag === 'bigint' ? tag : Number.isSafeInteger(tag) ? BigInt(tag) : -1n;
  if (value < 0n || value > MAX_U64) throw new ConfigurationError(`tag ${String(tag)} must be an integer in 0..2^64-1`);
  return value;
}

export function checkRail(rail: number, rails: number): number {
  if (!Number.isInteger(rail) || rail < 0 || rail >= rails) {
    throw new ConfigurationError(`point-to-point rail ${String(rail)} is outside 0..${rails}`);
  }
  return rail;
}

export function checkCount(count: number, name: string): number {
  if (!Number.isSafeInteger(count) || count < 0) throw new ConfigurationError(`${name} must be a non-negative integer, got ${String(count)}`);
  return count;
}

export function checkReduceOp(op: unknown): ReduceOp {
  if (!REDUCE_OPS.includes(op as ReduceOp)) {
    throw new ConfigurationError(`reduce op ${JSON.stringify(op)} is not one of ${REDUCE_OPS.join(' ')}`);
  }
  return op as ReduceOp;
}

export function checkDivisible(count: number, worldSize: number, what: string): number {
  if (count % worldSize !== 0) throw new ConfigurationError(`${what} count ${count} is not divisible by world size ${worldSize}`);
  return count / worldSize;
}

/** A receive's expected shape: a known dtype and a count (caller input, so a configuration error). */
export function checkShape(like: unknown): { dtype: DType; count: number } {
  const shape = like as { dtype?: unknown; count?: unknown } | null | undefined;
  if (typeof shape !== 'object' || shape === null) throw new ConfigurationError(`receive shape must be { dtype, count }, got ${String(like)}`);
  if (!DTYPES.includes(shape.dtype as DType)) {
    throw new ConfigurationError(`receive dtype ${JSON.stringify(shape.dtype)} is not one of ${DTYPES.join(' ')}`);
  }
  return { dtype: shape.dtype as DType, count: checkCount(shape.count as number, 'receive count') };
}
