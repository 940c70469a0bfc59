import type { DebugLog } from '../diagnostics/debug-log.js';
import { type EventLogger, eventLogger } from '../diagnostics/log-events.js';
import { type CoordinatorEvent, describeCoordinatorEvent } from './coordinator-events.js';

/**
 * Writes the coordinator's events to the debug log. Warnings are what a user of a stuck job must
 * see (ranks not joined, a collective waiting long); joins and departures are `info`; every
 * collective, match and heartbeat `trace`. Null when the log is off.
 */
export function coordinatorEventLogger(log: DebugLog): EventLogger<CoordinatorEvent> | null {
  return eventLogger(
    {
      levels: {
        'ranks-not-joined': 'warn',
        'rendezvous-timed-out': 'warn',
        'collective-waiting': 'warn',
        'rank-joined': 'info',
        'channel-ready': 'info',
        'rank-left': 'info',
        'rank-lost': 'warn',
        'joiners-waiting': 'info',
        grown: 'info',
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
