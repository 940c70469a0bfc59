import type { Observable } from 'rxjs';
import type { ElementType } from '../../protocol/element-type.js';
import type { NativeOutcome, PlaneCall, SharedMemoryPeers, SingleCopyPeers } from '../../transport/data-plane.js';
import type { Schedule } from './schedule.js';

/**
 * The native data plane as the collectives see it: something that runs a schedule over the
 * caller's memory, every message under one header, and says how it ended. The addon's engine is
 * one (`addonPlane`); rxccl/testing's memory jobs have a model of it.
 */
export interface NativePlane {
  /**
   * Cold: runs this rank's `schedule(rank)` (the same for the same `key`: a plane may compile it
   * once) over `memory`, with `call`'s header on every message; emits undefined once it is done,
   * else how it failed. `schedule` writes any rank's schedule of the call as this rank's call would:
   * the plane reads its predecessor's on the ring to know what comes first on their link
   * (`withHeaderExchange`). `elementType` is the tensor's (the folds').
   */
  run(key: string, schedule: (rank: number) => Schedule, elementType: ElementType, memory: PlaneMemory, call: PlaneCall): Observable<NativeOutcome | undefined>;
  /** Ends a running collective (its outcome is "aborted") and every later one. */
  end(): void;
  /** Ends, then lets go of the data links. */
  close(): void;
  /** Forgets what it compiled (the schedules' inputs changed: a new ring order). */
  forget(): void;
  /** The peers it agreed single copy with so far, null while a collective runs (the addon's engine; a model has none). */
  singleCopyPeers?(): SingleCopyPeers | null;
  /** The peers it shares a shared-memory ring with so far, and why a peer's link kept TCP; null while a collective runs (the addon's engine; a model has none). */
  sharedMemoryPeers?(): SharedMemoryPeers | null;
  /**
   * The peers the running collective waits for in silence, for the session's waiting warning; none
   * while nothing waits (the addon's engine: as its thread said within the last second, leaving out
   * peers that moved any of its bytes in that second; a model has none).
   */
  waitingFor?(): readonly number[];
}

export interface PlaneMemory {
  readonly input: Uint8Array;
  readonly output: Uint8Array;
}

