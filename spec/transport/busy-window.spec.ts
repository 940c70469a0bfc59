/**
 * The coordinator's busy window (lib/transport/busy-window.ts): keeps the event loop turning until
 * its window after the last open() has passed, yielding the core on each turn; exact on a fake
 * clock. Then the coordinator with a real one: it opens the window on every collective request and
 * point-to-point frame, and results stay the same; and `GX1_COORDINATOR_BUSY_POLL_US`.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigurationError } from '../../lib/errors.js';
import { coordinatorBusyWindow, DEFAULT_COORDINATOR_BUSY_POLL_MICROS } from '../../lib/launch/coordinator-busy-window.js';
import { BusyWindow, type PollClock } from '../../lib/transport/busy-window.js';
import { startJob, type TestJob } from '../helpers/job.js';

/** A clock whose time moves only when told, and whose turns run only when asked. */
function fakeClock() {
  let now = 0;
  const queued: (() => void)[] = [];
  const clock: PollClock = { now: () => now, immediate: (turn) => void queued.push(turn) };
  /** Runs queued turns, `stepMs` of time passing before each; returns how many ran. */
  const run = (stepMs: number, most = 1_000) => {
    let ran = 0;
    while (queued.length > 0 && ran < most) {
      now += stepMs;
      queued.shift()!();
      ran++;
    }
    return ran;
  };
  return { clock, run, advance: (ms: number) => (now += ms), queued };
}

describe('BusyWindow', () => {
  it('turns until its window after the last open() has passed, yielding on every turn', () => {
    const { clock, run } = fakeClock();
    let yields = 0;
    const window = new BusyWindow(0.5, () => yields++, clock);
    window.open();
    // Turns at 0.1, 0.2, 0.3, 0.4 ms go on (and yield); the one at 0.5 ms stops.
    expect(run(0.1)).toBe(5);
    expect(yields).toBe(4);
  });

  it('extends a running window instead of starting a second loop', () => {
    const { clock, run, queued } = fakeClock();
    const window = new BusyWindow(1, null, clock);
    window.open();
    expect(run(0.4, 2)).toBe(2); // now 0.8 ms
    window.open(); // until 1.8 ms
    expect(queued).toHaveLength(1);
    expect(run(0.4)).toBe(3); // 1.2, 1.6 go on; 2.0 stops
  });

  it('does nothing with an empty window, and stops once it is no longer wanted', () => {
    const { clock, run } = fakeClock();
    new BusyWindow(0, null, clock).open();
    expect(run(0.1)).toBe(0);
    let wanted = true;
    const window = new BusyWindow(10, null, clock, () => wanted);
    window.open();
    expect(run(0.1, 3)).toBe(3);
    wanted = false;
    expect(run(0.1)).toBe(1);
  });
});

describe('the coordinator with a busy window', () => {
  const jobs: TestJob[] = [];
  afterEach(async () => {
    await Promise.all(jobs.splice(0).map((job) => job.dispose()));
  });

  it('opens it on every collective request and point-to-point frame, and the results stay right', async () => {
    let opened = 0;
    let yields = 0;
    const window = new BusyWindow(0.5, () => yields++);
    const open = window.open.bind(window);
    window.open = () => {
      opened++;
      open();
    };
    const job = await startJob(2, { busyWindow: window, timeoutMs: 10_000 });
    jobs.push(job);
    const [zero, one] = job.sessions as [(typeof job.sessions)[0], (typeof job.sessions)[0]];
    const rounds = 20;
    for (let round = 0; round < rounds; round++) {
      const sums = await Promise.all([zero.allReduce(Float32Array.of(1, round)), one.allReduce(Float32Array.of(2, round))]);
      for (const sum of sums) expect([...sum]).toEqual([3, 2 * round]);
    }
    expect(opened).toBeGreaterThanOrEqual(2 * rounds);
    const before = opened;
    const [received] = await Promise.all([one.receive(0, 7, { dtype: 'f32', count: 2 }), zero.send(1, 7, Float32Array.of(5, 6))]);
    expect([...(received as Float32Array)]).toEqual([5, 6]);
    expect(opened).toBeGreaterThan(before);
    expect(yields).toBeGreaterThan(0);
  });
});

describe('GX1_COORDINATOR_BUSY_POLL_US', () => {
  const yielder = () => () => undefined;

  it('defaults to the default window, takes whole microseconds, and 0 turns it off', () => {
    expect(coordinatorBusyWindow({}, yielder)?.windowMs).toBe(DEFAULT_COORDINATOR_BUSY_POLL_MICROS / 1000);
    expect(coordinatorBusyWindow({ GX1_COORDINATOR_BUSY_POLL_US: 'auto' }, yielder)?.windowMs).toBe(DEFAULT_COORDINATOR_BUSY_POLL_MICROS / 1000);
    expect(coordinatorBusyWindow({ GX1_COORDINATOR_BUSY_POLL_US: '1500' }, yielder)?.windowMs).toBe(1.5);
    expect(coordinatorBusyWindow({ GX1_COORDINATOR_BUSY_POLL_US: '0' }, yielder)).toBeNull();
  });

  it('is off where the addon cannot yield, and refuses a value that is not whole microseconds, naming the variable', () => {
    expect(coordinatorBusyWindow({}, () => null)).toBeNull();
    for (const text of ['-5', '1.5', 'fast', '100001']) {
      expect(() => coordinatorBusyWindow({ GX1_COORDINATOR_BUSY_POLL_US: text }, yielder)).toThrow(ConfigurationError);
      expect(() => coordinatorBusyWindow({ GX1_COORDINATOR_BUSY_POLL_US: text }, yielder)).toThrow(
        `GX1_COORDINATOR_BUSY_POLL_US must be auto or whole microseconds 0..100000, got "${text}"`,
      );
    }
  });
});
