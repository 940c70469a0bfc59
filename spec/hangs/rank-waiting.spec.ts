/**
 * A collective no coordinator sees (here the mesh's): the ranks themselves report, every
 * `slowCollectiveMs`, which collective waits for which ranks, and the collective timeout (not the
 * session timeout) ends it naming them. Exact, on a virtual clock; rank 3 of 4 never comes, as a
 * stopped process would not.
 */
import { VirtualTimeScheduler } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { resolveTuning } from '../../lib/collectives/tuning.js';
import { describeSessionEvent, type SessionEvent } from '../../lib/session/events.js';
import { RankSession } from '../../lib/session/rank-session.js';
import { resolveSessionOptions } from '../../lib/session/session-options.js';
import { memoryJob } from '../../lib/testing/index.js';

const WORLD = 4;
const STOPPED = 3;

/** Ranks 0..2 of a 4-rank tcp_peer job in memory, each a session with `timeoutMs` as its collective timeout. */
function survivors(scheduler: VirtualTimeScheduler, timeoutMs: number, slowCollectiveMs: number) {
  // The links' own receive timeout (the session timeout) is far longer: only the collective timeout may end the wait.
  const job = memoryJob(WORLD, { scheduler, timeoutMs: 10 * timeoutMs });
  const tuning = resolveTuning({}, WORLD, {});
  return job.ranks
    .filter((_, rank) => rank !== STOPPED)
    .map(({ links, context, failure }, rank) => {
      const session = RankSession.over({
        rank,
        worldSize: WORLD,
        transport: 'tcp_peer',
        links,
        coordinator: { exchange: (request, parts) => context.coordinate(request, parts), close: () => undefined },
        failure,
        tuning,
        timeoutMs,
        slowCollectiveMs,
        scheduler,
      });
      const waiting: SessionEvent[] = [];
      session.events$.subscribe((event) => event.type === 'collective-waiting' && waiting.push(event));
      return { session, waiting };
    });
}

/** Each survivor's all-reduce: how it failed, and when (read as it fails: the clock has moved on once a promise settles). */
function allReduces(ranks: ReturnType<typeof survivors>, scheduler: VirtualTimeScheduler) {
  const failures: { message: string; at: number }[] = [];
  for (const { session } of ranks) {
    session.allReduce$(Float32Array.of(1)).subscribe({ error: (error: Error) => failures.push({ message: error.message, at: scheduler.now() }) });
  }
  scheduler.flush();
  return failures;
}

describe('a rank waiting in a collective no coordinator sees', () => {
  it('says every slowCollectiveMs which collective waits for which ranks, until the collective timeout names them', () => {
    const scheduler = new VirtualTimeScheduler();
    const ranks = survivors(scheduler, 100_000, 30_000);
    const failures = allReduces(ranks, scheduler);
    expect(failures).toHaveLength(3);
    // The first to time out tells the others (an abort), with the same text.
    for (const { message, at } of failures) {
      expect(message).toContain('collective 0 (AllReduce) on the direct peer mesh; missing ranks [3] timed out');
      expect(at).toBe(100_000);
    }
    const waited = ranks[0]!.waiting;
    expect(waited.map((event) => event.type === 'collective-waiting' && event.waitedMs)).toEqual([30_000, 60_000, 90_000]);
    expect(waited[0]).toMatchObject({ type: 'collective-waiting', sequence: 0, collective: 'allReduce', plane: 'js', missing: [STOPPED] });
    expect(describeSessionEvent(waited[0]!)).toMatch(/^collective sequence 0 allReduce \(\S+, js\) has waited 30000 ms for ranks \[3\]$/);
  });

  it('says nothing when the collective timeout comes first', () => {
    const scheduler = new VirtualTimeScheduler();
    const ranks = survivors(scheduler, 20_000, 30_000);
    const failures = allReduces(ranks, scheduler);
    expect(failures.map(({ at }) => at)).toEqual([20_000, 20_000, 20_000]);
    expect(ranks.flatMap(({ waiting }) => waiting)).toEqual([]);
  });
});

describe('the collective timeout of a session', () => {
  const base = { coordinator: '127.0.0.1:29500', uniqueId: '00112233445566778899aabbccddeeff', rank: 0, worldSize: 2 };

  it('is collectiveTimeoutMs, else GX1_COLLECTIVE_TIMEOUT_MS, else the session timeout', () => {
    expect(resolveSessionOptions({ ...base, collectiveTimeoutMs: 5_000 }, { GX1_COLLECTIVE_TIMEOUT_MS: '7000' }).collectiveTimeoutMs).toBe(5_000);
    expect(resolveSessionOptions(base, { GX1_COLLECTIVE_TIMEOUT_MS: ' 7000 ' })).toMatchObject({ collectiveTimeoutMs: 7_000, timeoutMs: 300_000 });
    expect(resolveSessionOptions({ ...base, timeoutMs: 30_000 }, {})).toMatchObject({ collectiveTimeoutMs: 30_000, timeoutMs: 30_000 });
  });

  it('refuses what is not whole milliseconds above zero, naming the setting', () => {
    expect(() => resolveSessionOptions(base, { GX1_COLLECTIVE_TIMEOUT_MS: '5s' })).toThrow('GX1_COLLECTIVE_TIMEOUT_MS must be whole milliseconds, got "5s"');
    expect(() => resolveSessionOptions(base, { GX1_COLLECTIVE_TIMEOUT_MS: '0' })).toThrow('GX1_COLLECTIVE_TIMEOUT_MS must be greater than zero, got 0');
    expect(() => resolveSessionOptions({ ...base, collectiveTimeoutMs: -1 }, {})).toThrow('collectiveTimeoutMs must be greater than zero, got -1');
  });
});
