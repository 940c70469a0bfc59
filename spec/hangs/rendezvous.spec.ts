/**
 * A job missing a rank at start: the coordinator reports who has not joined, periodically, and
 * answers a rank whose wait ran out with an Abort naming them; the rank's error says who.
 */
import { firstValueFrom, filter, VirtualTimeScheduler } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { Coordinator } from '../../lib/coordinator/coordinator.js';
import type { CoordinatorEvent } from '../../lib/coordinator/coordinator-events.js';
import { UniqueId } from '../../lib/protocol/unique-id.js';
import { runRxccl } from '../cli/rxccl-process.js';
import { compiledNode } from '../helpers/compiled-script.js';
import { abortText, joinBytes, rawConnection } from '../helpers/raw-socket.js';

const coordinators: Coordinator[] = [];
afterEach(async () => {
  await Promise.all(coordinators.splice(0).map((coordinator) => coordinator.close()));
});

/** A coordinator for 3 ranks with one rail, on a virtual clock that runs only when told. */
async function virtualCoordinator() {
  const scheduler = new VirtualTimeScheduler(undefined, 0);
  const uniqueId = UniqueId.random();
  const coordinator = await Coordinator.listen({
    host: '127.0.0.1',
    port: 0,
    uniqueId,
    worldSize: 3,
    rails: 1,
    scheduler,
    joinReportIntervalMs: 1_000,
    rendezvousTimeoutMs: 2_500,
  });
  coordinators.push(coordinator);
  const events: CoordinatorEvent[] = [];
  coordinator.events$.subscribe((event) => events.push(event));
  /** Runs the virtual clock up to `ms`. */
  const advanceTo = (ms: number) => {
    scheduler.maxFrames = ms;
    scheduler.flush();
  };
  /** Joins `rank` on the collective channel and its rail (raw JOINs), once the coordinator saw both. */
  const join = async (rank: number) => {
    const joined = firstValueFrom(coordinator.events$.pipe(filter((event) => event.type === 'rank-joined' && event.rank === rank && event.channel === 'rail 0')));
    const connections = [undefined, 0].map((rail) => {
      const connection = rawConnection(coordinator.address.port, 20_000);
      connection.socket.write(joinBytes({ uniqueId, rank, worldSize: 3, ...(rail !== undefined ? { rail } : {}) }));
      return connection;
    });
    await joined;
    return connections;
  };
  return { coordinator, events, advanceTo, join };
}

describe('rendezvous with a rank missing', () => {
  it('reports the ranks that have not joined every joinReportIntervalMs until all have', async () => {
    const { events, advanceTo, join } = await virtualCoordinator();
    advanceTo(1_000);
    await join(0);
    advanceTo(2_000);
    await join(2);
    advanceTo(2_999);
    const reports = events.filter((event) => event.type === 'ranks-not-joined');
    expect(reports).toEqual([
      { type: 'ranks-not-joined', missing: [0, 1, 2], waitedMs: 1_000 },
      { type: 'ranks-not-joined', missing: [1, 2], waitedMs: 2_000 },
    ]);
    await join(1);
    expect(events.filter((event) => event.type === 'channel-ready').map((event) => event.type === 'channel-ready' && event.channel)).toEqual(['collective', 'rail 0']);
    advanceTo(10_000);
    // Nothing more once every rank joined.
    expect(events.filter((event) => event.type === 'ranks-not-joined')).toHaveLength(2);
  }, 30_000);

  it('answers a rank whose wait ran out with an Abort naming the ranks missing, and frees its place', async () => {
    const { events, advanceTo, join } = await virtualCoordinator();
    const [collective, rail] = await join(0);
    await join(2);
    advanceTo(2_499);
    expect(collective!.socket.destroyed).toBe(false);
    advanceTo(2_500);
    const outcomes = await Promise.all([collective!.outcome, rail!.outcome]);
    // Rank 2 joined at the same virtual instant: its own wait ran out too, yet rank 0 is not named.
    expect(outcomes.map((outcome) => abortText(outcome.frames))).toEqual([
      'ranks [1] have not joined (collective) within 2500 ms',
      'ranks [1] have not joined (rail 0) within 2500 ms',
    ]);
    expect(outcomes.every((outcome) => outcome.dropped)).toBe(true);
    // The places are free again: the rendezvous waits for all three.
    advanceTo(3_000);
    expect(events.at(-1)).toEqual({ type: 'ranks-not-joined', missing: [0, 1, 2], waitedMs: 3_000 });
  }, 30_000);

  it("names the missing rank in a waiting rank's error, in a real job with a short timeout", async () => {
    const started = Date.now();
    // Rank 2 never opens a session; the others time out after 1.5 s.
    const script = `if [ "$GX1_RANK" = 2 ]; then sleep 20; else exec ${compiledNode('spec/hangs/fixtures/no-close.ts').join(' ')}; fi`;
    const result = await runRxccl(['launch', '-n', '3', '--', 'sh', '-c', script], { GX1_TIMEOUT_MS: '1500' });
    expect(result.code).not.toBe(0);
    // Uncaught, the error is the rank's one line (issue #49 item 2), and the launcher's last line.
    expect(result.stderr).toMatch(/^\[rank [01]\] rxccl: TIMEOUT: rank [01] waiting for READY on (collective channel|point-to-point rail 0) timed out: ranks \[2\] have not joined/m);
    expect(result.stderr.trimEnd().split('\n').at(-1)).toMatch(/^rxccl launch: job failed: ranks \[2\] never joined the job \(the others waited 1500 ms for them\); then rank [01] failed: TIMEOUT: rank [01] waiting for READY .*ranks \[2\] have not joined/);
    expect(Date.now() - started).toBeLessThan(30_000);
  }, 60_000);
});
