import type { OperatorFunction } from 'rxjs';
import type { RankSession } from '../rank-session.js';
import type { Tensor } from '../../tensor.js';
import { perValue } from './per-value.js';

/** Shard d of every rank goes to rank d, in rank order. One collective per input value, in order. */
export function allToAll<T extends Tensor>(session: RankSession): OperatorFunction<T, T> {
  return perValue((value: T) => session.allToAll$(value));
}
