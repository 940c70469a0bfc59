import type { OperatorFunction } from 'rxjs';
import type { RankSession } from '../rank-session.js';
import type { Tensor } from '../../tensor.js';
import { perValue } from './per-value.js';

/** Every rank gets `root`'s tensor (each rank passes a same-length tensor). One collective per input value, in order. */
export function broadcast<T extends Tensor>(session: RankSession, root: number): OperatorFunction<T, T> {
  return perValue((value: T) => session.broadcast$(value, root));
}
