import { filter, type Observable, type Subscription } from 'rxjs';
import type { DebugLog } from '../diagnostics/debug-log.js';
import { type EventLogger, eventLogger, logEvents } from '../diagnostics/log-events.js';
import { describeSessionEvent, type SessionEvent } from './events.js';

type WaitingEvent = Extract<SessionEvent, { type: 'collective-waiting' }>;
type OperationEvent = Exclude<SessionEvent, WaitingEvent>;

/**
 * Writes a session's events to the debug log: its failure at `info`, every collective and message
 * at `trace`. At the default `warn` nothing is subscribed (events are built only when observed).
 * Its waiting warnings are not among them: their producer writes them (`sessionWarningLogger`),
 * since they must show at `warn`, where nobody subscribes.
 */
export function logSessionEvents(events$: Observable<SessionEvent>, rank: number, log: DebugLog): Subscription | null {
  return logEvents(
    events$.pipe(filter((event): event is OperationEvent => event.type !== 'collective-waiting')),
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

/**
 * Where a session writes its waiting warnings (`warn`, as the coordinator's: a user of a stuck job
 * must see them); null when the log is off.
 */
export function sessionWarningLogger(rank: number, log: DebugLog): EventLogger<WaitingEvent> | null {
  return eventLogger<WaitingEvent>({ levels: { 'collective-waiting': 'warn' }, describe: describeSessionEvent, prefix: `rank ${rank}: ` }, log);
}
