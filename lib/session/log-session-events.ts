import type { Observable, Subscription } from 'rxjs';
import type { DebugLog } from '../diagnostics/debug-log.js';
import { logEvents } from '../diagnostics/log-events.js';
import { describeSessionEvent, type SessionEvent } from './events.js';

/**
 * Writes a session's events to the debug log: its failure at `info`, every collective and message
 * at `trace`. At the default `warn` nothing is subscribed (events are built only when observed).
 */
export function logSessionEvents(events$: Observable<SessionEvent>, rank: number, log: DebugLog): Subscription | null {
  return logEvents(
    events$,
    {
      levels: {
        failed: 'info',
        'collective-started': 'trace',
        'collective-finished': 'trace',
        'collective-failed': 'trace',
        'p2p-sent': 'trace',
        'p2p-received': 'trace',
        'p2p-failed': 'info',
        heartbeat: 'trace',
      },
      describe: describeSessionEvent,
      prefix: `rank ${rank}: `,
    },
    log,
  );
}
