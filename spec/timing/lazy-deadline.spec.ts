/** LazyDeadline on a virtual clock: due exactly when set, moved by each set, and a cleared one stops holding the loop after a nap. */
import { VirtualTimeScheduler } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { LAZY_DEADLINE_NAP_MS, LazyDeadline } from '../../lib/transport/lazy-deadline.js';

function deadline() {
  const scheduler = new VirtualTimeScheduler();
  const fired: number[] = [];
  return { scheduler, fired, deadline: new LazyDeadline(scheduler, () => fired.push(scheduler.now())) };
}

describe('LazyDeadline', () => {
  it('expires exactly when due, once, however far past the nap', () => {
    const { scheduler, fired, deadline: timer } = deadline();
    timer.set(1_000);
    scheduler.flush();
    expect(fired).toEqual([1_000]);
  });

  it('each set moves it (later or sooner); a clear before it is due means it never fires', () => {
    const { scheduler, fired, deadline: timer } = deadline();
    timer.set(1_000);
    scheduler.schedule(() => timer.set(1_000), 600); // due at 1600
    scheduler.schedule(() => timer.set(50), 700); // due at 750, sooner than the wake scheduled
    scheduler.schedule(() => timer.set(100), 800); // due at 900
    scheduler.schedule(() => timer.clear(), 850);
    scheduler.schedule(() => timer.set(10), 2_000); // due at 2010
    scheduler.flush();
    expect(fired).toEqual([750, 2_010]);
  });

  it('leaves nothing scheduled a nap after it was cleared, and nothing at all once stopped', () => {
    const { scheduler, fired, deadline: timer } = deadline();
    timer.set(60_000);
    timer.clear();
    scheduler.flush();
    expect(scheduler.now()).toBeLessThanOrEqual(LAZY_DEADLINE_NAP_MS);
    timer.set(60_000);
    timer.stop();
    expect(scheduler.actions).toHaveLength(0);
    expect(fired).toEqual([]);
  });
});
