import type { OperatorFunction } from 'rxjs';
import type { ReduceOp } from '../../protocol/reduce-op.js';
import type { RankSession } from '../rank-session.js';
import type { Tensor } from '../../tensor.js';
import { perValue } from './per-value.js';

/** Reduction delivered at `root`; other ranks get null. One collective per input value, in order. */
export function reduce<T extends Tensor>(session: RankSession, op: ReduceOp, root: number): OperatorFunction<T, T | null> {
  return perValue((value: T) => session.reduce$(value, op, root));
}
