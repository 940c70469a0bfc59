import type { Observable, Subscription } from 'rxjs';
import type { DebugLog } from '../diagnostics/debug-log.js';
import { logEvents } from '../diagnostics/log-events.js';
import { type CoordinatorEvent, describeCoordinatorEvent } from './coordinator-events.js';

/**
 * Writes the coordinator's events to the debug log. Warnings are what a user of a stuck job must
 * see (ranks not joined, a collective waiting long); joins and departures are `info`; every
 * collective, match and heartbeat `trace`.
 */
export function logCoordinatorEvents(events$: Observable<CoordinatorEvent>, log: DebugLog): Subscription | null {
  return logEvents(
    events$,
    {
      levels: {
        'ranks-not-joined': 'warn',
        'collective-waiting': 'warn',
        'rank-joined': 'info',
        'channel-ready': 'info',
        'rank-left': 'info',
        failed: 'info',
        finished: 'info',
        'collective-started': 'trace',
        'collective-completed': 'trace',
        'p2p-matched': 'trace',
        heartbeat: 'trace',
      },
      describe: describeCoordinatorEvent,
      prefix: 'coordinator: ',
    },
    log,
  );
}
