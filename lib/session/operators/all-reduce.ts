import type { OperatorFunction } from 'rxjs';
import type { ReduceOp } from '../../protocol/reduce-op.js';
import type { RankSession } from '../rank-session.js';
import type { Tensor } from '../../tensor.js';
import { perValue } from './per-value.js';

/** Element-wise reduction of every rank's tensor; every rank gets the result. One collective per input value, in order. */
export function allReduce<T extends Tensor>(session: RankSession, op: ReduceOp = 'sum'): OperatorFunction<T, T> {
  return perValue((value: T) => session.allReduce$(value, op));
}
