import { catchError, endWith, map, merge, type Observable, of } from 'rxjs';
import type { Frame } from '../protocol/frame.js';
import type { FrameChannel } from '../transport/frame-channel.js';

/** What happens on one rank's connection: a frame, a clean close, or a failure. */
export type RankEvent =
  | { readonly kind: 'frame'; readonly rank: number; readonly frame: Frame }
  | { readonly kind: 'closed'; readonly rank: number }
  | { readonly kind: 'failed'; readonly rank: number; readonly error: unknown };

/** Merges the frame streams of every rank's connection into one stream of rank-tagged events. */
export function rankEvents(channels: readonly FrameChannel[]): Observable<RankEvent> {
  return merge(
    ...channels.map((channel, rank) =>
      channel.frames$.pipe(
        map((frame): RankEvent => ({ kind: 'frame', rank, frame })),
        endWith<RankEvent>({ kind: 'closed', rank }),
        catchError((error: unknown) => of<RankEvent>({ kind: 'failed', rank, error })),
      ),
    ),
  );
}

export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
