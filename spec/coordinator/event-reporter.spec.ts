/** Where coordinator events go: the debug log first, then `events$`; per-operation events only built when someone takes them. */
import { describe, expect, it } from 'vitest';
import { CoordinatorEventReporter } from '../../lib/coordinator/coordinator-event-reporter.js';
import type { CoordinatorEvent } from '../../lib/coordinator/coordinator-events.js';
import { coordinatorEventLogger } from '../../lib/coordinator/log-coordinator-events.js';
import { DebugLog } from '../../lib/diagnostics/debug-log.js';

function reporter(level: 'off' | 'warn' | 'trace') {
  const written: string[] = [];
  const log = new DebugLog(level, (at, message) => written.push(`${at} ${message}`));
  return { reporter: new CoordinatorEventReporter(coordinatorEventLogger(log)), written };
}

const completed: CoordinatorEvent = { type: 'collective-completed', sequence: 3, operation: 'AllReduce', bytes: 16, durationMs: 0.25 };
const notJoined: CoordinatorEvent = { type: 'ranks-not-joined', missing: [1], waitedMs: 10_000 };

describe('CoordinatorEventReporter', () => {
  it('at the default warn with nobody subscribed is not observed, yet logs the warnings', () => {
    const { reporter: events, written } = reporter('warn');
    expect(events.observed).toBe(false);
    events.next(notJoined);
    events.next(completed);
    expect(written).toEqual(['warn coordinator: ranks [1] have not joined after 10000 ms']);
  });

  it('is observed while events$ has a subscriber, which gets every event after the log wrote it', () => {
    const { reporter: events, written } = reporter('warn');
    const seen: string[] = [];
    const subscription = events.events$.subscribe((event) => seen.push(`${event.type} after ${written.length} lines`));
    expect(events.observed).toBe(true);
    events.next(notJoined);
    events.next(completed);
    expect(seen).toEqual(['ranks-not-joined after 1 lines', 'collective-completed after 1 lines']);
    subscription.unsubscribe();
    expect(events.observed).toBe(false);
  });

  it('is observed at trace (the log writes every collective) and off has no log at all', () => {
    const trace = reporter('trace');
    expect(trace.reporter.observed).toBe(true);
    trace.reporter.next(completed);
    expect(trace.written).toEqual(['trace coordinator: collective sequence 3 AllReduce 16 bytes in 0.250 ms']);
    const off = reporter('off');
    expect(off.reporter.observed).toBe(false);
    off.reporter.next(notJoined);
    expect(off.written).toEqual([]);
  });

  it('completes events$', () => {
    const { reporter: events } = reporter('warn');
    let done = false;
    events.events$.subscribe({ complete: () => (done = true) });
    events.complete();
    expect(done).toBe(true);
  });
});
