import { filter, type Observable, type Subscription } from 'rxjs';
import type { DebugLevel, DebugLog } from './debug-log.js';

export type LoggedLevel = Exclude<DebugLevel, 'off'>;

/** How a stream of typed events goes to the debug log: each type's level and its line. */
export interface EventLogFormat<E extends { readonly type: string }> {
  readonly levels: Record<E['type'], LoggedLevel>;
  readonly describe: (event: E) => string;
  /** Written before each line, e.g. `coordinator: `. */
  readonly prefix: string;
}

/**
 * Writes each event at its level. Nothing is subscribed when the log is quieter than every level
 * the format uses: events are built only when someone listens, and this should not be that
 * someone for nothing.
 */
export function logEvents<E extends { readonly type: string }>(events$: Observable<E>, format: EventLogFormat<E>, log: DebugLog): Subscription | null {
  const levels = Object.values(format.levels) as LoggedLevel[];
  if (!levels.some((level) => log.enabled(level))) return null;
  const levelOf = (event: E) => format.levels[event.type as E['type']];
  return events$.pipe(filter((event) => log.enabled(levelOf(event)))).subscribe((event) => log[levelOf(event)](format.prefix + format.describe(event)));
}
