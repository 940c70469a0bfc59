import { Observable } from 'rxjs';
import { sessionOptionsFromEnvironment } from './environment.js';
import { keepHostedCoordinator } from './hosted-coordinator.js';
import { flightRecordingFromEnvironment, recordFlight } from '../session/flight-recording.js';
import { RankSession } from '../session/rank-session.js';
import { resolveSessionOptions, type SessionOptions } from '../session/session-options.js';

/**
 * Joins a job. With no options the rank reads its environment (the `GX1_*` variables the launcher
 * sets, or those of torchrun, Slurm, Open MPI; see lib/launch).
 */
export async function openSession(options?: SessionOptions): Promise<RankSession> {
  const chosen = options ?? (await sessionOptionsFromEnvironment(process.env));
  const recording = flightRecordingFromEnvironment(process.env);
  // A rank 0 that hosts the coordinator keeps it until every rank has left.
  const session = await keepHostedCoordinator(chosen, (holds) => RankSession.open(resolveSessionOptions(chosen), holds));
  if (recording !== null) recordFlight(session, recording);
  return session;
}

/**
 * The reactive form of `openSession`: emits the session once joined, errors when the session
 * fails, and closes it (LEAVE, sockets ended) when the subscriber unsubscribes.
 */
export function connect(options?: SessionOptions): Observable<RankSession> {
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
