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

/** Writes events to the debug log, for a producer that calls it directly. */
export interface EventLogger<E extends { readonly type: string }> {
  /** Whether events of `type` are written at the log's level: a producer builds them only then. */
  logs(type: E['type']): boolean;
  /** Writes `event` if its type is logged. */
  write(event: E): void;
}

/** The logger of `format` on `log`, or null when the log is quieter than every level the format uses. */
export function eventLogger<E extends { readonly type: string }>(format: EventLogFormat<E>, log: DebugLog): EventLogger<E> | null {
  const levels = Object.values(format.levels) as LoggedLevel[];
  if (!levels.some((level) => log.enabled(level))) return null;
  const levelOf = (type: E['type']) => format.levels[type];
  const logs = (type: E['type']) => log.enabled(levelOf(type));
  return {
    logs,
    write: (event) => {
      if (logs(event.type)) log[levelOf(event.type)](format.prefix + format.describe(event));
    },
  };
}

/**
 * Writes each event of a stream at its level. Nothing is subscribed when the log is quieter than
 * every level the format uses: events are built only when someone listens, and this should not be
 * that someone for nothing.
 */
export function logEvents<E extends { readonly type: string }>(events$: Observable<E>, format: EventLogFormat<E>, log: DebugLog): Subscription | null {
  const logger = eventLogger(format, log);
  if (logger === null) return null;
  return events$.pipe(filter((event) => logger.logs(event.type))).subscribe((event) => logger.write(event));
}
