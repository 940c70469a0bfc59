import { ConfigurationError } from '../errors.js';
import { admissionFrame, ANY_WORLD_SIZE } from '../protocol/control-frames.js';
import { formatGrownJob, type GrownJob } from '../protocol/grown-job.js';
import { ANY_RANK } from '../protocol/constants.js';
import type { UniqueId } from '../protocol/unique-id.js';
import { type FrameChannel, outgoing } from '../transport/frame-channel.js';

/** A process waiting to join: its connection, and the job id it asked with (its admission carries that id). */
export interface Joiner {
  readonly channel: FrameChannel;
  readonly uniqueId: UniqueId;
}

/** What the queue needs of its coordinator. */
export interface JoinerHost {
  readonly uniqueId: UniqueId;
  /** The most ranks the job may have, the waiting joiners counted. */
  readonly maxWorldSize: number;
  /** The ranks the job has now (joined and not lost). */
  liveRanks(): number;
  /** Tells every live rank how many joiners wait (docs/protocol.md 13.9). */
  announce(waiting: number): void;
}

/**
 * The processes waiting to join a running fault-tolerant job (docs/protocol.md 13.9), first come
 * first admitted. Each arrival and departure is announced to the job's ranks, whose rank 0 decides
 * at its next step boundary how many to admit (`grow()`). A joiner that would take the job past its
 * maximum is refused; one that closes while waiting is forgotten. The channels of joiners not
 * admitted when the job grows move on to the grown job's coordinator (`handOver`).
 */
export class WaitingJoiners {
  private readonly joiners: Joiner[] = [];

  constructor(private readonly host: JoinerHost) {}

  get count(): number {
    return this.joiners.length;
  }

  /** Queues `joiner`; throws (a ConfigurationError for the caller to refuse it with) where the job is full. */
  add(joiner: Joiner): void {
    const live = this.host.liveRanks();
    if (live + this.joiners.length + 1 > this.host.maxWorldSize) {
      throw new ConfigurationError(
        `job ${this.host.uniqueId.toHex()} is at its maximum of ${this.host.maxWorldSize} ranks (${live} running, ${this.joiners.length} waiting to join)`,
      );
    }
    this.track(joiner);
    this.host.announce(this.joiners.length);
  }

  /**
   * Takes on the joiners a job that grew did not admit (`handOver`): they wait here for this job
   * to grow in turn, and are announced once its ranks have joined.
   */
  adopt(joiners: readonly Joiner[]): void {
    for (const joiner of joiners) this.track(joiner);
  }

  private track(joiner: Joiner): void {
    this.joiners.push(joiner);
    joiner.channel.socket.once('close', () => {
      const index = this.joiners.indexOf(joiner);
      if (index < 0) return;
      this.joiners.splice(index, 1);
      this.host.announce(this.joiners.length);
    });
  }

  /**
   * Takes the first `count` joiners (fewer where fewer wait) out of the queue, to be admitted
   * (`admitJoiner`) once the grown job's coordinator listens; a joiner closing meanwhile is
   * then its rank missing from that job's rendezvous.
   */
  take(count: number): Joiner[] {
    const taken = this.joiners.splice(0, count);
    if (taken.length > 0) this.host.announce(this.joiners.length);
    return taken;
  }

  /** The joiners still waiting (for the grown job's coordinator to take on, or to be refused); none are left here. */
  handOver(): Joiner[] {
    return this.joiners.splice(0);
  }

}

/** Sends a joiner its admission into `job` (docs/protocol.md 13.9), under the id it asked with, and ends its connection here. */
export function admitJoiner({ channel, uniqueId }: Joiner, job: GrownJob): void {
  try {
    channel.send(outgoing(admissionFrame({ uniqueId, worldSize: ANY_WORLD_SIZE }, ANY_RANK, formatGrownJob(job))));
  } catch {
    // Gone since: the grown job's rendezvous names its rank as not joined.
  }
  channel.finish();
}
