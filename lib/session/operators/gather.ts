import type { OperatorFunction } from 'rxjs';
import type { RankSession } from '../rank-session.js';
import type { Tensor } from '../../tensor.js';
import { perValue } from './per-value.js';

/** `root` gets all ranks' tensors concatenated in rank order; others get null. One collective per input value, in order. */
export function gather<T extends Tensor>(session: RankSession, root: number): OperatorFunction<T, T | null> {
  return perValue((value: T) => session.gather$(value, root));
}
