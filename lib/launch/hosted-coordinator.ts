import { Coordinator } from '../coordinator/coordinator.js';
import { ConfigurationError } from '../errors.js';
import type { RankSession, SessionHolds } from '../session/rank-session.js';
import type { SessionOptions } from '../session/session-options.js';
import { coordinatorBusyWindow } from './coordinator-busy-window.js';
import type { Settings } from '../settings/read-settings.js';
import { type DiscoveredJob, hostPort } from './job-environment.js';

/** The coordinators rank 0 hosts, by the session options they were discovered with. */
const hosted = new WeakMap<SessionOptions, Coordinator>();

/**
 * Starts the coordinator rank 0 hosts in-process (no coordinator runs separately) and returns the
 * session options that reach it over loopback. The coordinator is remembered with the returned
 * options, so `keepHostedCoordinator` can tie it to rank 0's session.
 */
export async function hostCoordinator(job: DiscoveredJob, bind: string, options: SessionOptions, settings: Settings): Promise<SessionOptions> {
  let coordinator: Coordinator;
  try {
    coordinator = await Coordinator.listen({
      host: bind,
      port: job.coordinator.port,
      uniqueId: job.uniqueId,
      worldSize: job.worldSize,
      rails: job.rails,
      transport: job.transport,
      hostRank: job.rank,
      ...(job.timeoutMs !== undefined ? { rendezvousTimeoutMs: job.timeoutMs } : {}),
      ...(options.secret !== undefined ? { secret: options.secret } : {}),
      ...(options.tls !== undefined ? { tls: options.tls } : {}),
      // Unset, the ranks wait their session timeout: so does the coordinator, so that one number holds.
      ...((job.collectiveTimeoutMs ?? job.timeoutMs) !== undefined ? { collectiveTimeoutMs: job.collectiveTimeoutMs ?? job.timeoutMs } : {}),
      ...(job.heartbeatTimeoutMs !== undefined ? { heartbeatTimeoutMs: job.heartbeatTimeoutMs } : {}),
      // A fault-tolerant job's coordinator is too (the option, else GX1_FAULT_TOLERANT of the settings).
      ...(options.faultTolerant !== undefined ? { faultTolerant: options.faultTolerant } : {}),
      busyWindow: coordinatorBusyWindow(settings),
    }, settings);
  } catch (error) {
    if (!(error instanceof ConfigurationError)) throw error;
    throw new ConfigurationError(
      `rank 0 hosts the job's coordinator (${job.launcher}) and ${error.message}; ` +
        'if another job or program holds that port, set GX1_COORDINATOR_PORT to a free one (the same on every rank)',
      { cause: error },
    );
  }
  const local = { ...options, coordinator: hostPort({ host: bind === '0.0.0.0' ? '127.0.0.1' : bind, port: coordinator.address.port }) };
  hosted.set(local, coordinator);
  return local;
}

/**
 * `options` with `overrides` on top, still tied to the coordinator `options` came with (if rank 0
 * hosts one), so that a rank may adjust discovered options (`openSession({ timeoutMs })`).
 */
export function overrideOptions(options: SessionOptions, overrides: Partial<SessionOptions>): SessionOptions {
  const merged = { ...options, ...overrides };
  const coordinator = hosted.get(options);
  if (coordinator !== undefined) hosted.set(merged, coordinator);
  return merged;
}

/**
 * Opens a session and, when these options come with a coordinator this rank hosts, keeps the
 * coordinator serving the other ranks until they are done: the session holds the coordinator's
 * `done`, and its `close()` waits for it to settle (its failure is the session's own, already reported), so
 * a rank 0 that exits right after closing does not cut the others off. A session that fails to
 * open closes the coordinator with it. Where the job grows (`grow()`), the grown job's coordinator
 * runs here too, and is held the same way (`Coordinator.finished`).
 */
export async function keepHostedCoordinator(options: SessionOptions, open: (holds: SessionHolds) => Promise<RankSession>): Promise<RankSession> {
  const coordinator = hosted.get(options);
  if (coordinator === undefined) return open({});
  try {
    return await open({ closeAfter: [coordinator.finished] });
  } catch (error) {
    await coordinator.close();
    throw error;
  }
}
