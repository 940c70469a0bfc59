import { type Observable, ReplaySubject, take } from 'rxjs';
import { ChannelClosedError } from '../errors.js';
import { growRequestFrame } from '../protocol/control-frames.js';
import type { Frame } from '../protocol/frame.js';
import type { GrownJob } from '../protocol/grown-job.js';
import type { UniqueId } from '../protocol/unique-id.js';

/** Where a grow request goes: the rank's first rail (its control channel on tcp_peer). */
export interface GrowthChannel {
  sendControl(frame: Frame): void;
}

/**
 * A fault-tolerant job's growth as one rank sees it (docs/protocol.md 13.9): how many processes
 * wait to join (the coordinator's notices on the first rail), the request that admits them, and
 * this rank's admission into the grown job.
 */
export class JobGrowth {
  private waitingCount = 0;
  private readonly admission = new ReplaySubject<GrownJob>(1);
  private channel: GrowthChannel | null = null;

  constructor(private readonly origin: { readonly uniqueId: UniqueId; readonly rank: number; readonly worldSize: number }) {}

  /** Processes waiting to join, as the coordinator last said. */
  get waiting(): number {
    return this.waitingCount;
  }

  /** The rank's first rail, once open. */
  attach(channel: GrowthChannel): void {
    this.channel = channel;
  }

  /** The coordinator's notice: `count` processes wait. */
  noticeWaiting(count: number): void {
    this.waitingCount = count;
  }

  /** The coordinator's admission of this rank into the grown job. */
  admitted(job: GrownJob): void {
    this.admission.next(job);
  }

  /** Asks the coordinator to admit `joiners` waiting processes into a job of `members` (job ranks, in order) then them. */
  request(joiners: number, members: readonly number[]): void {
    if (this.channel === null) throw new ChannelClosedError(`rank ${this.origin.rank} has no first rail to ask for growth on`);
    this.channel.sendControl(growRequestFrame(this.origin, joiners, members));
  }

  /** This rank's admission, once the coordinator sends it (then completes). */
  get admission$(): Observable<GrownJob> {
    return this.admission.pipe(take(1));
  }
}
