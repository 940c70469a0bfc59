/**
 * What the driver (run.ts) and its rank processes (worker.ts) say to each other over the fork's
 * IPC channel. A rank process lives across epochs; each epoch it opens one session of a fresh
 * job, works until that session fails (a rank of the job was killed), closes it and reports.
 */
import type { Resources } from './resources.js';
import type { Plane } from './planes.js';

/** Driver to rank process: join this epoch's job as `rank` and work until the session fails. */
export interface EpochOrder {
  readonly kind: 'epoch';
  readonly epoch: number;
  readonly plane: Plane;
  readonly coordinator: string;
  readonly uniqueId: string;
  readonly secret: string;
  readonly rank: number;
  readonly worldSize: number;
}

/** Operations completed and checked so far this epoch, and the wrong ones (a few described). */
export interface Tally {
  ops: number;
  wrong: number;
  readonly wrongExamples: string[];
}

/** The first error the session gave, stamped with `wallClockMs()`. */
export interface SessionError {
  readonly atMs: number;
  readonly message: string;
}

export type FromRank =
  /** Started: what the process holds before its first session. */
  | { readonly kind: 'hello'; readonly resources: Resources }
  | { readonly kind: 'joined'; readonly epoch: number }
  /** Every second while working, so a rank that is killed has told its count. */
  | { readonly kind: 'progress'; readonly epoch: number; readonly tally: Tally }
  /** The epoch's end: its session failed (or never opened) and is closed; what the process holds then. */
  | { readonly kind: 'report'; readonly epoch: number; readonly tally: Tally; readonly error: SessionError; readonly resources: Resources };
