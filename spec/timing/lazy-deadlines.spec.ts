/**
 * LazyDeadlines on a virtual clock: each deadline expires exactly when due and once, removed ones
 * never, many share one scheduled action, and nothing stays scheduled a nap after the last one.
 */
import { VirtualTimeScheduler } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { LAZY_DEADLINE_NAP_MS, LazyDeadline, LazyDeadlines } from '../../lib/transport/lazy-deadlines.js';

function clock() {
  const scheduler = new VirtualTimeScheduler();
  const fired: string[] = [];
  const at = (label: string) => () => fired.push(`${label}@${scheduler.now()}`);
  return { scheduler, fired, at, deadlines: new LazyDeadlines(scheduler) };
}

describe('LazyDeadlines', () => {
  it('expires each deadline exactly when due, once, however far past the nap', () => {
    const { scheduler, fired, at, deadlines } = clock();
    deadlines.add(1_000, at('a'));
    deadlines.add(30, at('b'));
    deadlines.add(1_000, at('c'));
    scheduler.flush();
    expect(fired).toEqual(['b@30', 'a@1000', 'c@1000']);
  });

  it('a removed deadline never expires; one added sooner than the scheduled wake moves it', () => {
    const { scheduler, fired, at, deadlines } = clock();
    const first = deadlines.add(600, at('first'));
    scheduler.schedule(() => deadlines.add(5, at('sooner')), 100); // due at 105, before the wake at 250
    scheduler.schedule(() => deadlines.remove(first), 500);
    scheduler.schedule(() => deadlines.add(10, at('late')), 2_000);
    scheduler.flush();
    expect(fired).toEqual(['sooner@105', 'late@2010']);
  });

  it('an expiry may add and remove deadlines', () => {
    const { scheduler, fired, at, deadlines } = clock();
    const doomed = deadlines.add(500, at('doomed'));
    deadlines.add(100, () => {
      fired.push(`first@${scheduler.now()}`);
      deadlines.remove(doomed);
      deadlines.add(50, at('again'));
    });
    scheduler.flush();
    expect(fired).toEqual(['first@100', 'again@150']);
  });

  it('a deadline removed by another due at the same time does not expire', () => {
    const { scheduler, fired, at, deadlines } = clock();
    let second: ReturnType<LazyDeadlines['add']> | null = null;
    deadlines.add(100, () => {
      fired.push(`first@${scheduler.now()}`);
      deadlines.remove(second!);
    });
    second = deadlines.add(100, at('second'));
    scheduler.flush();
    expect(fired).toEqual(['first@100']);
  });

  it('an expiry that throws does not keep the others due with it from expiring', () => {
    const { scheduler, fired, at, deadlines } = clock();
    deadlines.add(100, () => {
      throw new Error('expiry failed');
    });
    deadlines.add(100, at('second'));
    expect(() => scheduler.flush()).toThrow('expiry failed');
    expect(fired).toEqual(['second@100']);
  });

  it('keeps one scheduled action however many deadlines are set', () => {
    const { scheduler, deadlines } = clock();
    for (let index = 0; index < 100; index++) deadlines.add(60_000 - index, () => undefined);
    expect(scheduler.actions).toHaveLength(1);
  });

  it('leaves nothing scheduled a nap after the last deadline went, and nothing at all once stopped', () => {
    const { scheduler, fired, at, deadlines } = clock();
    deadlines.remove(deadlines.add(60_000, at('removed')));
    scheduler.flush();
    expect(scheduler.now()).toBeLessThanOrEqual(LAZY_DEADLINE_NAP_MS);
    deadlines.add(60_000, at('stopped'));
    deadlines.stop();
    expect(scheduler.actions).toHaveLength(0);
    expect(fired).toEqual([]);
  });
});

describe('LazyDeadline', () => {
  it('each set moves it (later or sooner); a clear before it is due means it never fires', () => {
    const { scheduler, fired, at, deadlines } = clock();
    const timer = new LazyDeadline(deadlines, at('due'));
    timer.set(1_000);
    scheduler.schedule(() => timer.set(1_000), 600); // due at 1600
    scheduler.schedule(() => timer.set(50), 700); // due at 750, sooner than the wake scheduled
    scheduler.schedule(() => timer.set(100), 800); // due at 900
    scheduler.schedule(() => timer.clear(), 850);
    scheduler.schedule(() => timer.set(10), 2_000); // due at 2010
    scheduler.flush();
    expect(fired).toEqual(['due@750', 'due@2010']);
  });

  it('may set itself again when it expires (a periodic report)', () => {
    const { scheduler, fired, deadlines } = clock();
    const timer: LazyDeadline = new LazyDeadline(deadlines, () => {
      fired.push(`tick@${scheduler.now()}`);
      if (fired.length < 3) timer.set(400);
    });
    timer.set(400);
    scheduler.flush();
    expect(fired).toEqual(['tick@400', 'tick@800', 'tick@1200']);
  });
});
