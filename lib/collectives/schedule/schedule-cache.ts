import type { OperationDescriptor } from '../../protocol/agreement.js';
import type { CollectiveRequest } from '../../transport/collective-channel.js';
import { descriptorOf } from '../descriptor.js';
import type { Schedule } from './schedule.js';

/** A schedule written once for a call's shape, with the descriptor its calls agree on. */
export interface CachedSchedule {
  readonly schedule: Schedule;
  readonly descriptor: OperationDescriptor;
}

/** Shapes a session keeps schedules for; a job's collectives come in few shapes. */
export const CACHED_SCHEDULES = 256;

/**
 * A session's schedules by call shape (the collective, the algorithm and everything a schedule is
 * written from): every call of a shape runs the same schedule, so it is written (and its layout
 * hashed) once, and the native plane compiles it once under the same key.
 */
export class ScheduleCache {
  private static made = 0;
  private readonly entries = new Map<string, CachedSchedule>();
  /** Which cache this is, in this process: keys of the native plane's programs carry it. */
  readonly generation = ScheduleCache.made++;

  get(key: string, request: CollectiveRequest, write: () => Schedule): CachedSchedule {
    const known = this.entries.get(key);
    if (known !== undefined) return known;
    const schedule = write();
    const entry = { schedule, descriptor: descriptorOf(request, schedule.layout) };
    this.entries.set(key, entry);
    if (this.entries.size > CACHED_SCHEDULES) this.entries.delete(this.entries.keys().next().value as string);
    return entry;
  }

  /** Forgets every schedule (their inputs changed: a new ring order). */
  clear(): void {
    this.entries.clear();
  }
}
