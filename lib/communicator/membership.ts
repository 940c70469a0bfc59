import { first, type Subscription } from 'rxjs';
import { RankLostError } from '../errors.js';
import type { GrownJob } from '../protocol/grown-job.js';
import { processSettings, type Settings } from '../settings/read-settings.js';
import type { JobGrowth } from '../transport/job-growth.js';
import type { SessionLinks } from '../transport/links/links.js';
import type { RankLosses } from '../transport/rank-losses.js';
import type { SessionFailure } from '../transport/session-failure.js';
import { WORLD_COMMUNICATOR } from './communicator-id.js';
import type { CommunicatorPlaneParts } from './communicator-plane.js';

/** What a session holds beyond its connections: work its `close()` also waits for. */
export interface SessionHolds {
  /** Settled either way before `close()` resolves (rank 0 keeps the coordinator it hosts serving). */
  readonly closeAfter?: readonly Promise<unknown>[];
}

/**
 * How a session that `openSession` opened goes on into the job its job grows into (`grow()`,
 * docs/protocol.md 13.9). `Session`: the session type (lib/session's `RankSession`).
 */
export interface JobLineage<Session> {
  /** The first rank of this job that joined it while it ran (a newcomer); the world size where none did. */
  readonly newcomersFrom: number;
  /** Opens this process's session of `job` (on the host of this job's coordinator), keeping `holds`. */
  readonly openGrown: (job: GrownJob, holds: SessionHolds) => Promise<Session>;
}

/** A fault-tolerant job's growth on this rank: the coordinator's word, how to go on, and the world to leave. */
export interface Growth<Session> {
  readonly job: JobGrowth;
  readonly lineage: JobLineage<Session>;
  /** This rank's session of the job's world (set once it is open). */
  world: Session | null;
}

/**
 * Where a session sits in its job: the world, or a communicator made from it (`split`, `group`,
 * `shrink`). `Session`: the session type (lib/session's `RankSession`), which this layer does not know.
 */
export interface Membership<Session> {
  /** The communicator's id (WORLD_COMMUNICATOR for the world): its messages' keys carry it. */
  readonly id: bigint;
  /** The job's links: every communicator's messages travel on them. */
  readonly jobLinks: SessionLinks;
  /** The job rank of each of this session's ranks. */
  readonly jobRanks: readonly number[];
  /** The job's own failure (an abort, the coordinator lost): every communicator fails with it. */
  readonly jobFailure: SessionFailure;
  /** The ranks a fault-tolerant job lost; null: the job is not fault-tolerant. */
  readonly losses: RankLosses | null;
  /**
   * Every communicator of the job on this rank not closed yet, whatever it was made from: the
   * world's close closes them (closing a communicator leaves those made from it, as MPI's do).
   */
  readonly communicators: Set<Session>;
  /** What a communicator opens a native data plane of its own with, where the world runs one; else null. */
  readonly planes: CommunicatorPlaneParts | null;
  /** A fault-tolerant job's growth, where `openSession` opened it; else null: it cannot grow. */
  readonly growth: Growth<Session> | null;
  /** The settings the job was opened over (`GX1_TOPOLOGY_PROBE_*` for `probeTopology`). */
  readonly settings: Settings;
}

/** The world's membership of a job over `links`. */
export function worldMembership<Session>(
  links: SessionLinks,
  jobFailure: SessionFailure,
  losses: RankLosses | null = null,
  planes: CommunicatorPlaneParts | null = null,
  growth: Growth<Session> | null = null,
  settings: Settings = processSettings(),
): Membership<Session> {
  return { id: WORLD_COMMUNICATOR, jobLinks: links, jobRanks: Array.from({ length: links.worldSize }, (_, rank) => rank), jobFailure, losses, communicators: new Set(), planes, growth, settings };
}

/**
 * In a fault-tolerant job, fails the communicator of `membership` (its `failure`) when one of its
 * ranks is lost: every pending and later operation ends with `RankLostError` naming it, as
 * `where` (`rank 1 of communicator 0x...`) cannot complete; and drops what still comes of its
 * messages. Null outside one.
 */
export function failOnMemberLoss(membership: Membership<unknown>, failure: SessionFailure, where: string): Subscription | null {
  const { losses, jobRanks, jobLinks, id } = membership;
  if (losses === null) return null;
  return losses.lost$.pipe(first((loss) => jobRanks.includes(loss.rank))).subscribe((loss) => {
    failure.fail(new RankLostError(loss.rank, loss.reason, where));
    jobLinks.forget?.(id);
  });
}
