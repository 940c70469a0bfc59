import type { ElementType } from '../../protocol/element-type.js';
import type { OperationDescriptor } from '../../protocol/agreement.js';
import type { CollectiveRequest } from '../../transport/collective-channel.js';
import { descriptorOf } from '../descriptor.js';
import type { Schedule } from './schedule.js';

/**
 * A call shape as the native plane runs it: its key (the plane compiles it once under it), any
 * rank's schedule of it (the plane reads its predecessor's, `withHeaderExchange`) and the
 * tensor's element type. Made once per shape, so a call builds none of it.
 */
export interface PlaneProgram {
  readonly key: string;
  readonly schedule: (rank: number) => Schedule;
  readonly elementType: ElementType;
}

/**
 * A call shape, prepared once: its schedule, the descriptor its calls agree on, and what the
 * native plane runs (`PlaneProgram`), so that a repeated call does one lookup.
 */
export interface CachedSchedule {
  readonly schedule: Schedule;
  readonly descriptor: OperationDescriptor;
  readonly program: PlaneProgram;
}

/** What a call's shape is written from besides the session's context: its key's parts (run-scheduled.ts). */
export interface CallShape {
  readonly collective: string;
  readonly algorithm: string;
  readonly count: number;
  readonly elementType: ElementType;
  readonly op: string | null;
  readonly root: number | null;
  readonly inPlace: boolean;
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
  /** The shape of the last call looked up (`repeated`), and its entry. */
  private last: { readonly shape: CallShape; readonly entry: CachedSchedule } | null = null;
  /** Which cache this is, in this process: keys of the native plane's programs carry it. */
  readonly generation = ScheduleCache.made++;

  /** The shape known as `key`, if it was prepared (`add`). */
  get(key: string): CachedSchedule | undefined {
    return this.entries.get(key);
  }

  /**
   * The entry of the last call looked up, if `shape` is that call's: calls repeat their shape, and
   * this spares building and hashing the key's string. Else undefined (look it up by key).
   */
  repeated(shape: CallShape): CachedSchedule | undefined {
    const last = this.last?.shape;
    if (
      last === undefined ||
      last.collective !== shape.collective ||
      last.algorithm !== shape.algorithm ||
      last.count !== shape.count ||
      last.elementType !== shape.elementType ||
      last.op !== shape.op ||
      last.root !== shape.root ||
      last.inPlace !== shape.inPlace
    ) {
      return undefined;
    }
    return this.last!.entry;
  }

  /** Remembers `entry` as `shape`'s, for the next call (`repeated`). */
  remember(shape: CallShape, entry: CachedSchedule): void {
    this.last = { shape, entry };
  }

  /** Prepares the shape known as `key`: this rank's schedule, the descriptor `request` agrees on with its layout, and the plane's program. */
  add(key: string, request: CollectiveRequest, schedule: Schedule, program: PlaneProgram): CachedSchedule {
    const entry = { schedule, descriptor: descriptorOf(request, schedule.layout), program };
    this.entries.set(key, entry);
    if (this.entries.size > CACHED_SCHEDULES) this.entries.delete(this.entries.keys().next().value as string);
    return entry;
  }

  /** Forgets every schedule (their inputs changed: a new ring order). */
  clear(): void {
    this.entries.clear();
    this.last = null;
  }
}
