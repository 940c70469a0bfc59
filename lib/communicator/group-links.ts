import { map, type Observable } from 'rxjs';
import { ANY_RANK } from '../protocol/constants.js';
import { messageKey } from '../protocol/message-key.js';
import type { ExpectedShape, MessageEnvelope, MessageShape, SessionLinks } from '../transport/links/links.js';
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
  /** The job's, where it has them (the mesh): in this communicator's ranks and keys. */
  readonly waiting?: (rail: number, peer: number, tag: bigint) => MessageEnvelope | null;
  readonly probe?: (rail: number, peer: number, tag: bigint, waitMs?: number) => Observable<MessageEnvelope>;

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
    const { waiting, probe } = job;
    if (waiting !== undefined) {
      this.waiting = (rail, peer, tag) => {
        const found = waiting.call(job, rail, this.jobRank(peer), messageKey(this.id, tag));
        return found === null ? null : this.inGroup(found);
      };
    }
    if (probe !== undefined) {
      this.probe = (rail, peer, tag, waitMs) =>
        probe.call(job, rail, this.jobRank(peer), messageKey(this.id, tag), waitMs ?? this.timeoutMs()).pipe(
          map((found) => this.inGroup(found)),
          this.failure.untilEnded(),
        );
    }
  }

  get rails(): number {
    return this.job.rails;
  }

  send(rail: number, peer: number, tag: bigint, bytes: Uint8Array, shape: MessageShape): Observable<void> {
    return this.job.send(rail, this.members[peer]!, messageKey(this.id, tag), bytes, shape).pipe(this.failure.untilEnded());
  }

  receive(rail: number, peer: number, tag: bigint, shape: ExpectedShape, into?: Uint8Array, waitMs?: number): Observable<Uint8Array> {
    return this.job.receive(rail, this.jobRank(peer), messageKey(this.id, tag), shape, into, waitMs ?? this.timeoutMs()).pipe(this.failure.untilEnded());
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

  /** Only members send under this communicator's keys: a message from any rank of the job is one from any member. */
  private jobRank(peer: number): number {
    return peer === ANY_RANK ? ANY_RANK : this.members[peer]!;
  }

  /** A waiting message's envelope with its sender as this communicator's rank. */
  private inGroup(envelope: MessageEnvelope): MessageEnvelope {
    return { ...envelope, source: this.members.indexOf(envelope.source) };
  }
}
