import { debugLog, type DebugLog } from '../diagnostics/debug-log.js';
import { ConfigurationError } from '../errors.js';
import { FlightRecorder, writeJsonRecord } from '../diagnostics/flight-recorder.js';
import type { SessionEvent } from './events.js';
import type { RankSession } from './rank-session.js';

export const DEFAULT_FLIGHT_RECORDER_EVENTS = 1_000;

export interface FlightRecordingOptions {
  /** Where records are written (created if missing). */
  readonly directory: string;
  /** How many of the last events are kept (default 1000). */
  readonly capacity?: number;
  /** Also write a record when the process gets this signal (default SIGUSR1; null for none). */
  readonly signal?: NodeJS.Signals | null;
  readonly log?: DebugLog;
}

/** Why a record was written: the session failed (a collective timeout is `timeout`), or on request. */
export type FlightRecordReason = 'failure' | 'timeout' | 'signal';

/**
 * Keeps the session's last events (a ring buffer over `session.events$`) and writes them as JSON
 * to `directory` when the session fails (`timeout` when it failed on a timeout) and when the
 * process gets SIGUSR1: `rxccl-flight-rank<R>-<pid>-<reason>-<time>.json`, with the rank, the
 * reason, the error and the events, oldest first. Stops when the session closes. Returns a
 * function that writes a record now (reason `signal`) and returns its path.
 */
export function recordFlight(session: RankSession, options: FlightRecordingOptions): () => string {
  const recorder = new FlightRecorder<SessionEvent>(options.capacity ?? DEFAULT_FLIGHT_RECORDER_EVENTS);
  const log = options.log ?? debugLog;
  const write = (reason: FlightRecordReason, error?: unknown): string => {
    const record = {
      rank: session.rank,
      worldSize: session.worldSize,
      transport: session.transport,
      pid: process.pid,
      reason,
      ...(error !== undefined ? { error } : {}),
      writtenAt: new Date().toISOString(),
      eventsRecorded: recorder.recorded,
      events: recorder.entries().map(({ atMs, event }) => ({ at: new Date(atMs).toISOString(), ...event })),
    };
    const path = writeJsonRecord(options.directory, `rxccl-flight-rank${session.rank}-${process.pid}-${reason}-${Date.now()}.json`, record);
    log.warn(`rank ${session.rank}: flight record (${reason}) written to ${path}`);
    return path;
  };
  const signal = options.signal === undefined ? 'SIGUSR1' : options.signal;
  const onSignal = () => write('signal');
  if (signal !== null) process.on(signal, onSignal);
  session.events$.subscribe({
    next: (event) => {
      recorder.record(event);
      if (event.type === 'failed') write(isTimeout(event.error) ? 'timeout' : 'failure', event.error);
    },
    complete: () => {
      if (signal !== null) process.off(signal, onSignal);
    },
  });
  return () => write('signal');
}

/** A timeout here, or the coordinator's collective timeout relayed as its Abort. */
function isTimeout(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { code, message } = error as { code?: unknown; message?: unknown };
  return code === 'TIMEOUT' || (code === 'REMOTE_ABORT' && typeof message === 'string' && / timed out$/.test(message));
}

/**
 * `GX1_FLIGHT_RECORDER=<directory>` turns recording on (off when unset);
 * `GX1_FLIGHT_RECORDER_EVENTS` sets how many events are kept.
 */
export function flightRecordingFromEnvironment(env: Readonly<Record<string, string | undefined>>): FlightRecordingOptions | null {
  const directory = env.GX1_FLIGHT_RECORDER?.trim();
  if (directory === undefined || directory === '') return null;
  const events = env.GX1_FLIGHT_RECORDER_EVENTS?.trim();
  if (events === undefined || events === '') return { directory };
  const capacity = Number(events);
  if (!/^\d+$/.test(events) || !Number.isSafeInteger(capacity) || capacity < 1) {
    throw new ConfigurationError(`GX1_FLIGHT_RECORDER_EVENTS must be a positive integer, got ${JSON.stringify(env.GX1_FLIGHT_RECORDER_EVENTS)}`);
  }
  return { directory, capacity };
}
