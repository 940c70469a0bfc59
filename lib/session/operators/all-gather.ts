import type { OperatorFunction } from 'rxjs';
import type { RankSession } from '../rank-session.js';
import type { Tensor } from '../../tensor.js';
import { perValue } from './per-value.js';

/** Every rank gets all ranks' tensors concatenated in rank order. One collective per input value, in order. */
export function allGather<T extends Tensor>(session: RankSession): OperatorFunction<T, T> {
  return perValue((value: T) => session.allGather$(value));
}
