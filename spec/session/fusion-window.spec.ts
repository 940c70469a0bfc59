/**
 * When `allReduceFused` sends its buckets, in virtual time (RxJS TestScheduler, so every instant is
 * exact): a full bucket at once, the rest at completion, and with `windowMs` a bucket whose oldest
 * tensor waited that long, cut to the tensor count the ranks agree on (the other ranks' count is
 * scripted here). The session is a recording stand-in: spec/session/fusion.spec.ts runs real ones.
 */
import { type Observable, of } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { describe, expect, it } from 'vitest';
import { allReduceFused, type FusedStreamOptions } from '../../lib/session/operators/all-reduce-fused.js';
import type { RankSession } from '../../lib/session/rank-session.js';

/** What the stand-in session was asked: each bucket (its tensors' first values) and each agreement, with their instants. */
interface Recorded {
  readonly buckets: { at: number; values: number[] }[];
  readonly agreements: { at: number; ready: number }[];
}

/**
 * Runs `marbles` (each letter a one-element f32 tensor of that letter's index + 1, each `bytes`
 * bytes long) through the operator and returns what it emitted and what the session was asked.
 * `othersReady(ready)` is the smallest tensor count of the other ranks when this one asks.
 */
function run(marbles: string, options: FusedStreamOptions, othersReady: (ready: number) => number = (ready) => ready) {
  const scheduler = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
  const recorded: Recorded = { buckets: [], agreements: [] };
  const emitted: string[] = [];
  scheduler.run(({ cold }) => {
    const session = {
      allReduceMany$: (tensors: Float32Array[]): Observable<Float32Array[]> => {
        recorded.buckets.push({ at: scheduler.now(), values: tensors.map((tensor) => tensor[0]!) });
        return of(tensors.map((tensor) => tensor.map((value) => value * 10)));
      },
      allReduce$: (ready: Uint32Array): Observable<Uint32Array> => {
        recorded.agreements.push({ at: scheduler.now(), ready: ready[0]! });
        return of(Uint32Array.of(Math.min(ready[0]!, othersReady(ready[0]!))));
      },
    } as unknown as RankSession;
    const letters = Object.fromEntries([...'abcdefgh'].map((letter, index) => [letter, Float32Array.of(index + 1)]));
    const stream = cold(marbles, letters).pipe(allReduceFused(session, 'sum', { ...options, scheduler }));
    stream.subscribe({
      next: (value) => emitted.push(`${scheduler.now()}:${(value as Float32Array)[0]}`),
      complete: () => emitted.push(`${scheduler.now()}:done`),
    });
  });
  return { recorded, emitted };
}

describe('allReduceFused in virtual time', () => {
  it('without a window: a bucket goes the instant it is full, the rest when the stream completes', () => {
    // 4-byte tensors in 8-byte buckets: a and b fill one at 1 ms, c (5) and d another at 7, e (13) waits for the end at 21.
    const { recorded, emitted } = run('ab 3ms c 1ms d 5ms e 7ms |', { bucketBytes: 8 });
    expect(recorded.buckets).toEqual([
      { at: 1, values: [1, 2] },
      { at: 7, values: [3, 4] },
      { at: 21, values: [5] },
    ]);
    expect(recorded.agreements).toEqual([]);
    expect(emitted).toEqual(['1:10', '1:20', '7:30', '7:40', '21:50', '21:done']);
  });

  it('with a window: a bucket goes once its oldest tensor waited windowMs, full ones at once, each after the ranks agree on its count', () => {
    // a at 0, b at 2: the window (5 ms) closes at 5. c, d, e at 10..12 fill a 12-byte bucket at 12.
    const { recorded, emitted } = run('a 1ms b 7ms cde 20ms |', { bucketBytes: 12, windowMs: 5 });
    expect(recorded.agreements).toEqual([
      { at: 5, ready: 2 },
      { at: 12, ready: 3 },
    ]);
    expect(recorded.buckets).toEqual([
      { at: 5, values: [1, 2] },
      { at: 12, values: [3, 4, 5] },
    ]);
    expect(emitted).toEqual(['5:10', '5:20', '12:30', '12:40', '12:50', '33:done']);
  });

  it('with a window, the bucket takes only the tensors every rank has, and the rest go in the next', () => {
    // Three tensors by 2 ms; the others have only one when this rank's window closes at 5 (a's), then all.
    let asked = 0;
    const { recorded, emitted } = run('abc 10ms |', { bucketBytes: 1 << 20, windowMs: 5 }, (ready) => (asked++ === 0 ? 1 : ready));
    expect(recorded.agreements).toEqual([
      { at: 5, ready: 3 },
      // b came at 1 ms: its window closes at 6.
      { at: 6, ready: 2 },
    ]);
    expect(recorded.buckets).toEqual([
      { at: 5, values: [1] },
      { at: 6, values: [2, 3] },
    ]);
    expect(emitted).toEqual(['5:10', '6:20', '6:30', '13:done']);
  });
});
