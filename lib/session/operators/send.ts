import type { OperatorFunction } from 'rxjs';
import type { RailOption } from '../point-to-point.js';
import type { RankSession } from '../rank-session.js';
import type { Tensor } from '../../tensor.js';
import { perValue } from './per-value.js';

/**
 * Sends each tensor of the stream to `destination` under `tag`, in order, one send in flight at a
 * time (the next waits until the transport took the one before: back-pressure reaches the
 * source's pace), and emits each tensor once it is sent. `session.receive$` is the other end, so a
 * pipeline goes from peer to peer without a loop of awaits.
 * @example
 * session.receive$(0, 5, { dtype: 'f32', count: 1024 }).pipe(map(normalize), send(session, 2, 5)).subscribe();
 */
export function send<T extends Tensor>(session: RankSession, destination: number, tag: number | bigint, options: RailOption = {}): OperatorFunction<T, T> {
  return perValue((tensor: T) => session.send(destination, tag, tensor, options).then(() => tensor));
}
