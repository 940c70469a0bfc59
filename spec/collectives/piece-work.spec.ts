/** pieceWork: the hand-run group of sends, receives and kernels under the ring and chain algorithms. */
import { EMPTY, NEVER, Observable, of, Subject, throwError } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { pieceWork } from '../../lib/collectives/schedule/piece-work.js';

/** A source that records whether it is subscribed. */
function tracked<T>(source: Observable<T>) {
  const state = { subscribed: 0, active: 0 };
  const observable = new Observable<T>((subscriber) => {
    state.subscribed += 1;
    state.active += 1;
    const subscription = source.subscribe(subscriber);
    return () => {
      state.active -= 1;
      subscription.unsubscribe();
    };
  });
  return { observable, state };
}

describe('pieceWork', () => {
  it('completes once everything started has completed, including what each one started after it', () => {
    const first = new Subject<number>();
    const second = new Subject<number>();
    const seen: number[] = [];
    let completed = false;
    pieceWork((start) => {
      start(first, (value) => {
        seen.push(value);
        start(second, (next) => seen.push(next));
      });
    }).subscribe({ complete: () => (completed = true) });
    first.next(1);
    first.complete();
    expect(completed).toBe(false);
    second.next(2);
    second.complete();
    expect(seen).toEqual([1, 2]);
    expect(completed).toBe(true);
  });

  it('does not end while launch still starts work, even if the first work completes at once', () => {
    const order: string[] = [];
    pieceWork((start) => {
      start(of(1), () => order.push('first done'));
      order.push('launch goes on');
      start(EMPTY, () => order.push('second done'));
    }).subscribe({ complete: () => order.push('complete') });
    expect(order).toEqual(['first done', 'launch goes on', 'second done', 'complete']);
  });

  it('completes at once with nothing to do', () => {
    let completed = false;
    pieceWork(() => undefined).subscribe({ complete: () => (completed = true) });
    expect(completed).toBe(true);
  });

  it('fails with the first error and tears down what still runs, then the launch teardown', () => {
    const waiting = tracked(NEVER);
    const failing = new Subject<never>();
    let torn = 0;
    const errors: unknown[] = [];
    pieceWork((start) => {
      start(waiting.observable);
      start(failing);
      return () => (torn += 1);
    }).subscribe({ error: (error: unknown) => errors.push(error) });
    expect(waiting.state.active).toBe(1);
    failing.error(new Error('link lost'));
    expect(errors).toEqual([new Error('link lost')]);
    expect(waiting.state.active).toBe(0);
    expect(torn).toBe(1);
  });

  it('tears everything down when unsubscribed, and starts nothing more after', () => {
    const waiting = tracked(NEVER);
    const gate = new Subject<void>();
    const later = tracked(of(1));
    let torn = 0;
    const subscription = pieceWork((start) => {
      start(waiting.observable);
      start(gate, () => start(later.observable));
      return () => (torn += 1);
    }).subscribe();
    subscription.unsubscribe();
    expect(waiting.state.active).toBe(0);
    expect(torn).toBe(1);
    gate.complete();
    expect(later.state.subscribed).toBe(0);
  });

  it('a synchronous error while launching fails the whole without starting the rest', () => {
    const rest = tracked(NEVER);
    const errors: unknown[] = [];
    pieceWork((start) => {
      start(throwError(() => new Error('refused')));
      start(rest.observable);
    }).subscribe({ error: (error: unknown) => errors.push(error) });
    expect(errors).toEqual([new Error('refused')]);
    expect(rest.state.subscribed).toBe(0);
  });

  it('fails the group, not the process, when a continuation throws, with or without the value', () => {
    const errors: unknown[] = [];
    pieceWork((start) => {
      start(of(1), () => {
        throw new Error('then failed');
      });
    }).subscribe({ error: (error: unknown) => errors.push(error) });
    pieceWork((start) => {
      start(of(1), (value) => {
        throw new Error(value === 1 ? 'value refused' : 'no value');
      });
    }).subscribe({ error: (error: unknown) => errors.push(error) });
    expect(errors).toEqual([new Error('then failed'), new Error('value refused')]);
  });
});
