import { exhaustMap, type Observable, timer, type SchedulerLike, asyncScheduler } from 'rxjs';
import type { RankSession } from '../rank-session.js';

/**
 * A heartbeat every `periodMs`: emits each round trip (ms) and errors when one is not answered
 * within `timeoutMs` or the session fails (the lease is lost). A beat still in flight when the
 * next is due is not doubled (exhaustMap).
 */
export function heartbeat$(session: RankSession, periodMs: number, timeoutMs: number, scheduler: SchedulerLike = asyncScheduler): Observable<number> {
  return timer(0, periodMs, scheduler).pipe(exhaustMap(() => session.heartbeat(timeoutMs)));
}
