import { first, firstValueFrom, map, race, type SchedulerLike, timer } from 'rxjs';
import type { NativePlane } from '../collectives/schedule/native-plane.js';
import type { CollectiveTuning } from '../collectives/tuning.js';
import { WaitingRanks } from '../collectives/waiting-ranks.js';
import { ChannelClosedError, RankLostError } from '../errors.js';
import { communicatorText } from '../protocol/message-key.js';
import type { TopologyGroups } from '../topology/topology-groups.js';
import type { BufferPool } from '../transport/buffer-pool.js';
import { LEFT_GRACE_MS, type RankLosses } from '../transport/rank-losses.js';
import { SessionFailure } from '../transport/session-failure.js';
import { childCommunicatorId, communicatorUniqueId } from './communicator-id.js';
import { openCommunicatorPlane } from './communicator-plane.js';
import { GroupLinks } from './group-links.js';
import { LeaderCoordinator } from './leader-coordinator.js';
import type { Membership } from './membership.js';

/** What a communicator makes one of some of its ranks from: its place in the job, and its own tuning, ring and groups now. */
export interface CommunicatorParent {
  /** Its rank (the new communicator's members are ranks of it). */
  readonly rank: number;
  readonly membership: Pick<Membership<unknown>, 'id' | 'jobLinks' | 'jobRanks' | 'jobFailure' | 'losses' | 'planes'>;
  readonly tuning: CollectiveTuning;
  /** The ring its collectives follow now (its context's). */
  readonly ringOrder: readonly number[];
  /** The groups its collectives follow now (its context's), else null. */
  readonly topologyGroups: TopologyGroups | null;
  /** Its collective timeout now: the new communicator starts with it. */
  readonly timeoutMs: number;
  readonly scratch: BufferPool;
  readonly scheduler: SchedulerLike;
}

/** The parts of a communicator of some of its parent's ranks that are its own: the session built over them is the communicator. */
export interface ChildCommunicator {
  readonly id: bigint;
  /** This rank's rank in it. */
  readonly rank: number;
  readonly worldSize: number;
  /** The job's links under its own keys; `links.members` are its job ranks. */
  readonly links: GroupLinks;
  /** Its first rank, as its coordinator. */
  readonly coordinator: LeaderCoordinator;
  /** Its own failure, which follows the job's (not its parent's: in a fault-tolerant job a communicator outlives a lost rank it lacks). */
  readonly failure: SessionFailure;
  /** Its parent's tuning, with the ring and groups narrowed to its ranks (in the same order). */
  readonly tuning: CollectiveTuning;
  readonly timeout: { ms: number };
  /** Whom its running collective waits for (its leader says so too). */
  readonly waiting: WaitingRanks;
  /** Its native data plane, where it has one; else null: the JS plane. */
  readonly nativePlane: NativePlane | null;
}

/**
 * The communicator of `members` (ranks of `parent`, in their new order) with id `id`: the job's
 * links under its own keys, its first rank as its coordinator, the parent's tuning with the ring
 * and groups narrowed to its ranks (in the same order), and a failure of its own that follows the
 * job's; on `plane` where it has one, else the JS plane.
 */
export function childCommunicator(parent: CommunicatorParent, id: bigint, members: readonly number[], plane: NativePlane | null = null): ChildCommunicator {
  const { jobLinks, jobRanks, jobFailure } = parent.membership;
  const failure = SessionFailure.following(jobFailure);
  const rank = members.indexOf(parent.rank);
  const timeout = { ms: parent.timeoutMs };
  const waiting = new WaitingRanks();
  const links = new GroupLinks(jobLinks, members.map((member) => jobRanks[member]!), rank, id, failure, () => timeout.ms);
  const coordinator = new LeaderCoordinator({
    waiting,
    links,
    uniqueId: communicatorUniqueId(id),
    name: `communicator ${communicatorText(id)}`,
    jobRanks: links.members,
    pool: parent.scratch,
    timeoutMs: () => timeout.ms,
    scheduler: parent.scheduler,
    abort: (reason) => void links.abort(reason),
  });
  const { tuning } = parent;
  const ringTuned = tuning.ringOrder !== null || tuning.topology !== null;
  const ring = parent.ringOrder.filter((member) => members.includes(member)).map((member) => members.indexOf(member));
  // The parent's groups, of the members only, renumbered; a group with none of them goes. (On
  // its own native plane, groups that were the hosts are its hosts.)
  const groups = parent.topologyGroups?.map((group) => group.filter((member) => members.includes(member)).map((member) => members.indexOf(member))).filter((group) => group.length > 0) ?? null;
  return {
    id,
    rank,
    worldSize: members.length,
    links,
    coordinator,
    failure,
    tuning: { ...tuning, ringOrder: ringTuned ? ring : null, topology: null, groups },
    timeout,
    waiting,
    nativePlane: plane,
  };
}

/**
 * The communicator of `members` (see `childCommunicator`) with a native data plane of its own where
 * the world runs one (communicator-plane.ts: data links of its own between its members, set up over
 * the job's links under the id `<id> native plane`), so that its collectives run at the world's
 * speed beside the world's and every other communicator's.
 *
 * In a fault-tolerant job a member lost while the plane is set up (a shrink's survivor that died
 * in it) ends the set-up at once: the communicator then has no plane, and that loss fails it on
 * every member alike (one that finished its set-up first fails on hearing of it), so its first
 * call names the rank. A set-up that fails otherwise there waits `SETUP_LOSS_GRACE_MS` to hear of
 * a member's loss before it fails with its error.
 */
export async function openChildCommunicator(parent: CommunicatorParent, id: bigint, members: readonly number[]): Promise<ChildCommunicator> {
  const { planes, jobLinks, jobRanks, jobFailure, losses } = parent.membership;
  if (planes === null || members.length < 2) return childCommunicator(parent, id, members);
  const memberRanks = members.map((member) => jobRanks[member]!);
  const rank = members.indexOf(parent.rank);
  const failure = SessionFailure.endingWith(jobFailure);
  const name = `communicator ${communicatorText(id)}`;
  // A lost member would never answer.
  const lossWatch = losses?.lost$
    .pipe(first((loss) => memberRanks.includes(loss.rank)))
    .subscribe((loss) => failure.fail(new RankLostError(loss.rank, loss.reason, `rank ${rank} setting up the native plane of ${name}`)));
  const setup = new GroupLinks(jobLinks, memberRanks, rank, childCommunicatorId(id, 'native plane'), failure, () => parent.timeoutMs);
  try {
    return childCommunicator(parent, id, members, await openCommunicatorPlane(planes, setup, id, memberRanks, rank, losses));
  } catch (error) {
    if (losses === null || jobFailure.failed || !(await memberLost(losses, memberRanks, parent.scheduler))) throw error;
    return childCommunicator(parent, id, members);
  } finally {
    lossWatch?.unsubscribe();
    failure.close(new ChannelClosedError(`rank ${parent.rank} native plane set-up of ${name} ended`));
  }
}

/**
 * How long a communicator's plane set-up that failed waits to hear that a member was lost: a
 * member that died ends its links at once, and this rank holds it lost within `LEFT_GRACE_MS` of
 * that (or sooner, on the coordinator's notice).
 */
const SETUP_LOSS_GRACE_MS = 2 * LEFT_GRACE_MS;

/** Whether one of `members` (job ranks) is lost, or is within `SETUP_LOSS_GRACE_MS`. */
function memberLost(losses: RankLosses, members: readonly number[], scheduler: SchedulerLike): Promise<boolean> {
  return firstValueFrom(
    race(
      losses.lost$.pipe(
        first((loss) => members.includes(loss.rank)),
        map(() => true),
      ),
      timer(SETUP_LOSS_GRACE_MS, scheduler).pipe(map(() => false)),
    ),
  );
}
