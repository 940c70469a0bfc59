import { debugLog, type DebugLog } from '../diagnostics/debug-log.js';
import { ConfigurationError } from '../errors.js';
import { FlightRecorder, prepareRecordDirectory, writeJsonRecord } from '../diagnostics/flight-recorder.js';
import { FAILURE_EVENTS } from '../diagnostics/flight-timeline.js';
import type { SessionEvent } from './events.js';
import type { RankSession } from './rank-session.js';
import { type Environment, type Settings, settingsOf } from '../settings/read-settings.js';

export const DEFAULT_FLIGHT_RECORDER_EVENTS = 1_000;
/** Events a timeline run keeps (`GX1_TIMELINE`): a whole run's, some 30 MB at most. */
export const DEFAULT_TIMELINE_EVENTS = 100_000;

/** What `recordFlight` keeps and where it writes (docs/observability.md, "Flight recorder"). */
export interface FlightRecordingOptions {
  /** Where records are written (created if missing). */
  readonly directory: string;
  /** The setting that named `directory`, for warnings (`GX1_FLIGHT_RECORDER` from the environment). */
  readonly setting?: string;
  /** How many of the last events are kept (default 1000). */
  readonly capacity?: number;
  /** Also write a record when the process gets this signal (default SIGUSR1; null for none). */
  readonly signal?: NodeJS.Signals | null;
  /**
   * Also write a record when the session closes (reason `close`): the whole run's events, for a
   * timeline (`rxccl trace chrome`). What `GX1_TIMELINE` turns on.
   */
  readonly atClose?: boolean;
  /** Where warnings (a directory that cannot be written, a record not written) go; default rxccl's debug log (`GX1_DEBUG`). */
  readonly log?: DebugLog;
}

/** Why a record was written: the session failed (a collective timeout is `timeout`), on request, or at close (`atClose`). */
export type FlightRecordReason = 'failure' | 'timeout' | 'signal' | 'close';

/**
 * Keeps the session's last events (a ring buffer over `session.events$`) and writes them as JSON
 * to `directory` at the first failure of a collective, a send or receive, or the session (`timeout`
 * when it failed on a timeout), before the caller sees the error, and when the
 * process gets SIGUSR1: `rxccl-flight-rank<R>-<pid>-<reason>-<time>.json`, with the rank, the
 * reason, the error and the events, oldest first (each with its wall-clock time in ms, to the
 * microsecond, as `atMs`). Stops when the session closes, writing one more record then with
 * `atClose` (reason `close`: a timeline of the run, said at debug level info). Returns a
 * function that writes a record now (reason `signal`) and returns its path.
 *
 * The directory is created (with its parents) and checked once, here. One that cannot be used
 * (a file in its place, no permission) turns the recorder off with one warning on `log`: the
 * session works as without it, and the signal only warns. A record written on a failure or a
 * signal that cannot be written is a warning too, never an exception (it would kill the rank).
 *
 * @throws the returned function throws a `ConfigurationError` (code `INVALID_CONFIGURATION`,
 * the OS's error as its `cause`) when the recorder is off or the record cannot be written.
 */
export function recordFlight(session: RankSession, options: FlightRecordingOptions): () => string {
  const log = options.log ?? debugLog;
  // How warnings name the directory: `GX1_FLIGHT_RECORDER directory "/x"`.
  const where = `${options.setting === undefined ? '' : `${options.setting} `}directory ${JSON.stringify(options.directory)}`;
  const off = unusable(options.directory, where);
  if (off !== null) log.warn(`rank ${session.rank}: ${off.message}`);
  // Microseconds of the wall clock (Date.now() has whole ms): a timeline places 20 us collectives.
  const recorder = new FlightRecorder<SessionEvent>(options.capacity ?? DEFAULT_FLIGHT_RECORDER_EVENTS, () => performance.timeOrigin + performance.now());
  const write = (reason: FlightRecordReason, error?: unknown): string => {
    if (off !== null) throw off;
    const record = {
      rank: session.rank,
      worldSize: session.worldSize,
      transport: session.transport,
      pid: process.pid,
      reason,
      ...(error !== undefined ? { error } : {}),
      writtenAt: new Date().toISOString(),
      eventsRecorded: recorder.recorded,
      events: recorder.entries().map(({ atMs, event }) => ({ at: new Date(atMs).toISOString(), atMs, ...event })),
    };
    let path: string;
    try {
      path = writeJsonRecord(options.directory, `rxccl-flight-rank${session.rank}-${process.pid}-${reason}-${Date.now()}.json`, record);
    } catch (cause) {
      throw new ConfigurationError(`${where} cannot be written: ${errorText(cause)}`, { cause });
    }
    // A record at close is what a timeline run asks for on every rank, not news.
    (reason === 'close' ? log.info : log.warn).call(log, `rank ${session.rank}: flight record (${reason}) written to ${path}`);
    return path;
  };
  // For the signal listener and the events$ subscriber: an exception would end the process there
  // (uncaught from a listener; RxJS rethrows a subscriber's on a timer).
  const writeOrWarn = (reason: FlightRecordReason, error?: unknown): void => {
    try {
      write(reason, error);
    } catch (failure) {
      log.warn(`rank ${session.rank}: flight record (${reason}) not written: ${errorText(failure)}`);
    }
  };
  let failureWritten = false;
  const signal = options.signal === undefined ? 'SIGUSR1' : options.signal;
  // Kept while off too: without a listener, SIGUSR1 would open Node's inspector instead.
  const onSignal = () => writeOrWarn('signal');
  if (signal !== null) process.on(signal, onSignal);
  session.events$.subscribe({
    next: (event) => {
      // Off, nothing is kept and a failure writes nothing: the one warning was at the start.
      if (off !== null) return;
      recorder.record(event);
      // The first failure of an operation or of the session, as it happens: an operation's is
      // reported before its caller sees the error, so a rank that exits on it still writes one.
      if (FAILURE_EVENTS.has(event.type) && !failureWritten && 'error' in event) {
        failureWritten = true;
        writeOrWarn(isTimeout(event.error) ? 'timeout' : 'failure', event.error);
      }
    },
    complete: () => {
      if (signal !== null) process.off(signal, onSignal);
      if (options.atClose === true && off === null) writeOrWarn('close');
    },
  });
  return () => write('signal');
}

/** Why records cannot be written in `path` (made if missing), as the writer throws it; null when they can. */
function unusable(path: string, where: string): ConfigurationError | null {
  try {
    prepareRecordDirectory(path);
    return null;
  } catch (cause) {
    return new ConfigurationError(`flight recorder off: ${where} cannot be used: ${errorText(cause)}`, { cause });
  }
}

const errorText = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/** A timeout here, or the coordinator's collective timeout relayed as its Abort. */
function isTimeout(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { code, message } = error as { code?: unknown; message?: unknown };
  return code === 'TIMEOUT' || (code === 'REMOTE_ABORT' && typeof message === 'string' && / timed out$/.test(message));
}

/**
 * `GX1_FLIGHT_RECORDER=<directory>` turns recording on (off when unset). `GX1_TIMELINE=<directory>`
 * does too and also writes each rank's events when its session closes (a timeline of the run,
 * `rxccl trace chrome`), keeping `DEFAULT_TIMELINE_EVENTS` of them; both may name one directory.
 * `GX1_FLIGHT_RECORDER_EVENTS` sets how many events are kept.
 */
export function flightRecordingFromEnvironment(env: Settings | Environment): FlightRecordingOptions | null {
  const settings = settingsOf(env);
  const recorder = settings.GX1_FLIGHT_RECORDER.value;
  const timeline = settings.GX1_TIMELINE.value;
  if (recorder !== undefined && timeline !== undefined && recorder !== timeline) {
    throw new ConfigurationError(`GX1_FLIGHT_RECORDER ${JSON.stringify(recorder)} and GX1_TIMELINE ${JSON.stringify(timeline)} name different directories; one rank writes its records to one`);
  }
  const directory = timeline ?? recorder;
  if (directory === undefined) return null;
  const setting = timeline !== undefined ? 'GX1_TIMELINE' : 'GX1_FLIGHT_RECORDER';
  const atClose = timeline !== undefined;
  const capacity = settings.GX1_FLIGHT_RECORDER_EVENTS.value ?? (atClose ? DEFAULT_TIMELINE_EVENTS : DEFAULT_FLIGHT_RECORDER_EVENTS);
  return { directory, setting, atClose, capacity };
}
