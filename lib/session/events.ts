import type { CollectiveName } from '../collectives/algorithm.js';

/**
 * What a session reports on `session.events$` as it works: typed, never a payload byte. Enough for
 * a notebook or a pipeline to see which algorithm ran, how big and how long.
 */
export type SessionEvent =
  | { readonly type: 'collective-started'; readonly collective: CollectiveName; readonly algorithm: string; readonly bytes: number }
  | {
      readonly type: 'collective-finished';
      readonly collective: CollectiveName;
      readonly algorithm: string;
      readonly bytes: number;
      readonly durationMs: number;
    }
  | { readonly type: 'collective-failed'; readonly collective: CollectiveName; readonly algorithm: string; readonly error: unknown };
