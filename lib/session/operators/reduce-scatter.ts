import type { OperatorFunction } from 'rxjs';
import type { ReduceOp } from '../../protocol/reduce-op.js';
import type { RankSession } from '../rank-session.js';
import type { Tensor } from '../../tensor.js';
import { perValue } from './per-value.js';

/** Reduces, then rank r keeps the r-th of `worldSize` equal shards. One collective per input value, in order. */
export function reduceScatter<T extends Tensor>(session: RankSession, op: ReduceOp = 'sum'): OperatorFunction<T, T> {
  return perValue((value: T) => session.reduceScatter$(value, op));
}
