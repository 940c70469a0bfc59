import type { Observable } from 'rxjs';
import { ANY_RANK } from '../protocol/constants.js';
import { messageKey } from '../protocol/message-key.js';
import type { ExpectedShape, MessageShape, SessionLinks } from '../transport/links/links.js';
import type { SessionFailure } from '../transport/session-failure.js';

/**
 * A communicator's view of the job's links: its ranks are positions in `members` (each a rank of
 * the job), and its messages travel on the job's connections under keys of its own communicator
 * id (lib/protocol/message-key.ts), so its tags never meet the world's or another communicator's.
 * Nothing is connected, nothing is copied: a send here is a send on the job's links.
 *
 * Every operation also ends with the communicator's own `failure` (its close, or the failure of the
 * job it follows). An abort still ends the whole job, as on the world.
 */
export class GroupLinks implements SessionLinks {
  readonly worldSize: number;

  constructor(
    private readonly job: SessionLinks,
    /** The job rank of each communicator rank. */
    readonly members: readonly number[],
    readonly rank: number,
    /** The communicator's id: the upper half of every key its messages carry (never 0, the world's). */
    readonly id: bigint,
    private readonly failure: SessionFailure,
    /** The communicator's timeout now (its `setTimeout` changes it): how long a receive waits unless told. */
    private readonly timeoutMs: () => number,
  ) {
    this.worldSize = members.length;
  }

  get rails(): number {
    return this.job.rails;
  }

  send(rail: number, peer: number, tag: bigint, bytes: Uint8Array, shape: MessageShape): Observable<void> {
    return this.job.send(rail, this.members[peer]!, messageKey(this.id, tag), bytes, shape).pipe(this.failure.untilEnded());
  }

  receive(rail: number, peer: number, tag: bigint, shape: ExpectedShape, into?: Uint8Array, waitMs?: number): Observable<Uint8Array> {
    // Only members send under this communicator's keys: a receive from any rank of the job is one from any member.
    const source = peer === ANY_RANK ? ANY_RANK : this.members[peer]!;
    return this.job.receive(rail, source, messageKey(this.id, tag), shape, into, waitMs ?? this.timeoutMs()).pipe(this.failure.untilEnded());
  }

  release(bytes: Uint8Array): void {
    this.job.release(bytes);
  }

  heartbeat(timeoutMs: number): Observable<void> {
    return this.job.heartbeat(timeoutMs).pipe(this.failure.untilEnded());
  }

  abort(message: string): number {
    return this.job.abort(message);
  }

  close(): void {
    // The connections are the job's: the communicator's close ends only its own operations (its failure).
  }
}
