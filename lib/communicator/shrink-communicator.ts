import { lastValueFrom, type Subscription } from 'rxjs';
import { ChannelClosedError, ConfigurationError, failureText, RankLostError } from '../errors.js';
import { ElementType } from '../protocol/element-type.js';
import { layoutHash } from '../protocol/layout-hash.js';
import { Opcode } from '../protocol/opcode.js';
import { SessionFailure } from '../transport/session-failure.js';
import { type ChildCommunicator, type CommunicatorParent, openChildCommunicator } from './child-communicator.js';
import { childCommunicatorId } from './communicator-id.js';
import { GroupLinks } from './group-links.js';
import { agreeOnSurvivors, answerDecision } from './shrink-agreement.js';

/** A communicator that shrinks: what its children are made from, and what a shrink of it checks and names. */
export interface ShrinkingCommunicator extends CommunicatorParent {
  /** `communicator 0x...`, or `the job's world`: how errors name it. */
  readonly name: string;
  /** It was closed: nothing to shrink. */
  readonly closed: boolean;
  /** Takes the number of this shrink among its shrinks (from 0; a refused one takes none): the agreement's and the new communicator's ids carry it. */
  readonly nextIndex: () => number;
}

/** What the survivors meet on: the session built over the shrunk communicator's parts (its raw `exchange`). */
export interface Meeting {
  exchange(options: { readonly opcode: Opcode; readonly elementType: ElementType; readonly count: number; readonly layoutHash: bigint }): Promise<unknown>;
  close(): Promise<void>;
}

/**
 * The shrink of a communicator (docs/protocol.md 13.7; `RankSession.shrink`): the ranks left agree
 * on who is left from the coordinator's notices (`agreeOnSurvivors`), and each opens the
 * communicator of the survivors (`openChildCommunicator`: a native plane of its own where the
 * world runs one), which `build` makes a session of; they meet there with a barrier. A survivor
 * lost during the shrink may be in it, on every survivor alike: its first call then fails with
 * `RankLostError`, to be shrunk in turn. Refused outside a fault-tolerant job, on a closed
 * communicator, and once the job itself failed.
 */
export async function shrinkCommunicator<C extends Meeting>(shrinking: ShrinkingCommunicator, build: (child: ChildCommunicator) => C): Promise<C> {
  const { rank, name, membership } = shrinking;
  const { losses, jobFailure, jobLinks, jobRanks } = membership;
  if (losses === null) {
    throw new ConfigurationError('shrink() needs a fault-tolerant job (faultTolerant: true, GX1_FAULT_TOLERANT=1, or rxccl launch --keep-going)');
  }
  if (shrinking.closed) throw new ChannelClosedError(`rank ${rank} of ${name} closed: nothing to shrink`);
  if (jobFailure.failed) {
    throw new ChannelClosedError(
      `rank ${rank} cannot shrink ${name}: the job itself failed (${failureText(jobFailure.error)}); a job goes on without lost ranks, never without its coordinator or after an abort`,
    );
  }
  const index = shrinking.nextIndex();
  // The agreement's own keys, on every rank of this communicator (lost ones too: their notices end the waits).
  const agreement = SessionFailure.endingWith(jobFailure);
  const links = new GroupLinks(jobLinks, jobRanks, rank, childCommunicatorId(membership.id, `shrink ${index}`), agreement, () => shrinking.timeoutMs);
  const parts = { links, jobRanks, losses, timeoutMs: shrinking.timeoutMs, scheduler: shrinking.scheduler, name };
  let answering: Subscription | null = null;
  try {
    // A rank whose job ends meanwhile (its world closed) stops waiting for notices it will never hear.
    const survivors = await lastValueFrom(agreeOnSurvivors(parts, 0).pipe(agreement.untilEnded()));
    // Until this shrink is over, a member that could not decide in the same round hears the decision.
    answering = answerDecision(parts, survivors).subscribe();
    const ranks = survivors.ranks.join(',');
    const shrunk = build(await openChildCommunicator(shrinking, childCommunicatorId(membership.id, `shrink ${index} ${ranks}`), survivors.ranks));
    try {
      // Every survivor decided the same ranks and meets here.
      await shrunk.exchange({ opcode: Opcode.Barrier, elementType: ElementType.None, count: 0, layoutHash: layoutHash(`shrink ${ranks}`) });
    } catch (error) {
      // One of them was lost during the shrink. Some survivors may have met here before they
      // heard of it: every survivor gets this communicator alike, and its first call fails on
      // each, to be shrunk in turn.
      if (!(error instanceof RankLostError)) {
        // No survivor goes on with it (a timeout, an abort): what it opened closes here.
        await shrunk.close();
        throw error;
      }
    }
    return shrunk;
  } finally {
    answering?.unsubscribe();
    agreement.close(new ChannelClosedError(`rank ${rank} shrink of ${name} ended`));
  }
}
