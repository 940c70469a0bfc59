import { Observable } from 'rxjs';
import { debugLog } from '../diagnostics/debug-log.js';
import { sessionOptionsFromEnvironment } from './environment.js';
import { keepHostedCoordinator, overrideOptions } from './hosted-coordinator.js';
import { warnUnknownVariables } from './known-variables.js';
import { reportUncaughtRxcclErrors } from './uncaught-rxccl-error.js';
import { flightRecordingFromEnvironment, recordFlight } from '../session/flight-recording.js';
import { RankSession, type SessionHolds } from '../session/rank-session.js';
import type { GrownJob } from '../protocol/grown-job.js';
import { awaitAdmission } from '../transport/connect-channel.js';
import { resolveJoin } from '../transport/fault-tolerance.js';
import { hostPort } from './job-environment.js';
import { parseHostPort, resolveSessionOptions, type SessionOptions } from '../session/session-options.js';
import { optionOrSetting } from '../settings/option-or-setting.js';
import { processSettings } from '../settings/read-settings.js';

/** The options that say which job a rank belongs to; the environment supplies any left out. */
const JOB_OPTIONS = ['coordinator', 'uniqueId', 'rank', 'worldSize'] as const;

/**
 * Joins a job. The rank reads its environment (the `GX1_*` variables the launcher sets, or those
 * of torchrun, Slurm, Open MPI; see lib/launch) unless the options name the job themselves
 * (`coordinator`, `uniqueId`, `rank` and `worldSize`); options given beside the environment
 * override what it says. `GX1_FLIGHT_RECORDER=<dir>` turns on the flight recorder. A process
 * without an 'uncaughtException' listener of its own reports an rxccl error nobody catches in one
 * line, `rxccl: CODE: message` (see `reportUncaughtRxcclErrors`).
 *
 * @example
 * const session = await openSession({ timeoutMs: 30_000 }); // under rxccl launch, torchrun, srun, mpirun
 */
export async function openSession(options?: Partial<SessionOptions>): Promise<RankSession> {
  // First: the likeliest uncaught rxccl error is this call's own, a configuration it refuses.
  reportUncaughtRxcclErrors();
  warnUnknownVariables(process.env);
  const chosen = await chooseOptions(options);
  const recording = flightRecordingFromEnvironment(processSettings());
  // Asked for a record while still joining (the launcher passes SIGUSR1 on to every rank): say
  // where it waits, rather than let Node.js open its inspector on a rank that wants a record.
  const joining = () => debugLog.warn(`rank ${chosen.rank}: SIGUSR1 while joining job at ${chosen.coordinator}: no session yet, so no flight record`);
  if (recording !== null) process.on('SIGUSR1', joining);
  try {
    // A rank 0 that hosts the coordinator keeps it until every rank has left.
    const joins = optionOrSetting('join', options?.join, resolveJoin, processSettings().GX1_JOIN);
    const session = joins
      ? await joinRunningJob(chosen)
      : await keepHostedCoordinator(chosen, (holds) => openJob(chosen, holds, chosen.worldSize));
    if (recording !== null) recordFlight(session, recording);
    return session;
  } finally {
    process.off('SIGUSR1', joining);
  }
}

/** Opens the session `options` name, able to go on into the jobs its job grows into (`grow()`). */
function openJob(options: SessionOptions, holds: SessionHolds, newcomersFrom: number): Promise<RankSession> {
  return RankSession.open(resolveSessionOptions(options), holds, {
    newcomersFrom,
    openGrown: (job, grownHolds) => openJob(grownJobOptions(options, job), grownHolds, job.members),
  });
}

/** `options` for the job `job` grew into: its coordinator on the same host, its id, this process's rank and world size. */
function grownJobOptions(options: SessionOptions, job: GrownJob): SessionOptions {
  const { host } = parseHostPort(options.coordinator);
  return { ...options, coordinator: hostPort({ host, port: job.port }), uniqueId: job.uniqueId, rank: job.rank, worldSize: job.worldSize };
}

/** A process joining a running fault-tolerant job: waits to be admitted (its session timeout), then opens its session of the grown job. */
async function joinRunningJob(options: SessionOptions): Promise<RankSession> {
  const resolved = resolveSessionOptions(options);
  const job = await awaitAdmission(
    { host: resolved.host, port: resolved.port },
    { uniqueId: resolved.uniqueId, timeoutMs: resolved.timeoutMs, secret: resolved.secret, tls: resolved.tls },
  );
  debugLog.info(`joined the running job at ${options.coordinator}: rank ${job.rank} of ${job.worldSize} in job ${job.uniqueId.toHex()}`);
  return openJob(grownJobOptions(options, job), {}, job.members);
}

async function chooseOptions(options: Partial<SessionOptions> | undefined): Promise<SessionOptions> {
  // A joining process learns its rank and world size when it is admitted: until then it is any rank of a world of one.
  if (options?.join === true && options.coordinator !== undefined && options.uniqueId !== undefined) return { rank: 0, worldSize: 1, ...options } as SessionOptions;
  if (options !== undefined && JOB_OPTIONS.every((name) => options[name] !== undefined)) return options as SessionOptions;
  const discovered = await sessionOptionsFromEnvironment(process.env);
  return options === undefined ? discovered : overrideOptions(discovered, options);
}

/**
 * The reactive form of `openSession`: emits the session once joined, errors when the session
 * fails, and closes it (LEAVE, sockets ended) when the subscriber unsubscribes.
 */
export function connect(options?: Partial<SessionOptions>): Observable<RankSession> {
  return new Observable<RankSession>((subscriber) => {
    let session: RankSession | null = null;
    let unsubscribed = false;
    openSession(options).then(
      (opened) => {
        if (unsubscribed) {
          void opened.close();
          return;
        }
        session = opened;
        subscriber.next(opened);
        opened.failure$.subscribe({ error: (error: unknown) => subscriber.error(error) });
      },
      (error: unknown) => subscriber.error(error),
    );
    return () => {
      unsubscribed = true;
      void session?.close();
    };
  });
}
