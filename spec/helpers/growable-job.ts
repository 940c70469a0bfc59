import { Coordinator } from '../../lib/coordinator/coordinator.js';
import { openSession } from '../../lib/launch/open-session.js';
import { UniqueId } from '../../lib/protocol/unique-id.js';
import type { RankSession } from '../../lib/session/rank-session.js';
import type { SessionOptions } from '../../lib/session/session-options.js';
import type { CollectiveTransport } from '../../lib/transport/transport-kind.js';

/**
 * Jobs that can grow, in one process over real sockets: a coordinator and sessions opened as
 * `openSession` opens them (so `grow()` can go on into the grown job), with a secret. Every
 * session opened here, and the coordinator, end with `disposeGrowableJobs` (an afterEach).
 */
/** The secret of every growable job here (a joiner that dials a grown job's coordinator gives it too). */
export const GROWABLE_SECRET = 'growable-job-secret';
const coordinators: Coordinator[] = [];
const sessions: RankSession[] = [];

export interface GrowableJob {
  readonly coordinator: Coordinator;
  /** What names the job to a session (`coordinator`, `uniqueId`, `secret`, ...). */
  readonly options: Partial<SessionOptions>;
  /** Opens rank `rank` of the job's `worldSize`. */
  openRank(rank: number): Promise<RankSession>;
  /** A process asking to join the running job: resolves with its session of the grown job. */
  joiner(): Promise<RankSession>;
}

export async function startGrowableJob(
  worldSize: number,
  transport: CollectiveTransport,
  { faultTolerant = true, maxWorldSize = worldSize }: { faultTolerant?: boolean; maxWorldSize?: number } = {},
): Promise<GrowableJob> {
  const uniqueId = UniqueId.random();
  const coordinator = await Coordinator.listen({ host: '127.0.0.1', port: 0, uniqueId, worldSize, transport, faultTolerant, maxWorldSize, secret: GROWABLE_SECRET, collectiveTimeoutMs: 10_000 }, {});
  coordinators.push(coordinator);
  const options: Partial<SessionOptions> = { coordinator: `127.0.0.1:${coordinator.address.port}`, uniqueId, secret: GROWABLE_SECRET, transport, faultTolerant, timeoutMs: 10_000 };
  const kept = (session: RankSession) => {
    sessions.push(session);
    return session;
  };
  return {
    coordinator,
    options,
    openRank: (rank) => openSession({ ...options, rank, worldSize }).then(kept),
    joiner: () => openSession({ ...options, join: true }).then(kept),
  };
}

export async function disposeGrowableJobs(): Promise<void> {
  await Promise.all(sessions.splice(0).map((session) => session.close().catch(() => undefined)));
  await Promise.all(coordinators.splice(0).map((coordinator) => coordinator.close()));
}
