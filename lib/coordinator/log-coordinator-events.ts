import { filter, type Observable, type Subscription } from 'rxjs';
import type { DebugLevel, DebugLog } from '../diagnostics/debug-log.js';
import { type CoordinatorEvent, describeCoordinatorEvent } from './coordinator-events.js';

/** How loud each coordinator event is: warnings are what a user of a stuck job must see. */
const LEVEL: Record<CoordinatorEvent['type'], Exclude<DebugLevel, 'off'>> = {
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
};

/** Writes the coordinator's events to the debug log at their level (nothing is subscribed when the log is off). */
export function logCoordinatorEvents(events$: Observable<CoordinatorEvent>, log: DebugLog): Subscription | null {
  if (!log.enabled('warn')) return null;
  return events$
    .pipe(filter((event) => log.enabled(LEVEL[event.type])))
    .subscribe((event) => log[LEVEL[event.type]](`coordinator: ${describeCoordinatorEvent(event)}`));
}
