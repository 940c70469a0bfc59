/** `coordinator.events$` and `session.events$` over a real job: what happened, in order, no payload. */
import { afterEach, describe, expect, it } from 'vitest';
import type { CoordinatorEvent } from '../../lib/coordinator/coordinator-events.js';
import type { SessionEvent } from '../../lib/session/events.js';
import { rejection, startCoordinator, type TestJob } from '../helpers/job.js';

const jobs: TestJob[] = [];
afterEach(async () => {
  await Promise.all(jobs.splice(0).map((job) => job.dispose()));
});

/** Events without their timings, which vary. */
const untimed = (event: CoordinatorEvent | SessionEvent) => {
  const { durationMs: _duration, roundTripMs: _roundTrip, ...rest } = event as Record<string, unknown>;
  return rest;
};

describe('coordinator.events$', () => {
  it('reports joins, each collective with its sequence and operation, P2P matches, heartbeats and departures', async () => {
    const job = await startCoordinator(2);
    jobs.push(job);
    const events: CoordinatorEvent[] = [];
    job.coordinator.events$.subscribe((event) => events.push(event));
    const [rank0, rank1] = await Promise.all([job.openRank(0), job.openRank(1)]);
    expect(events.filter((event) => event.type === 'rank-joined')).toHaveLength(4);
    expect(events.filter((event) => event.type === 'channel-ready').map(untimed)).toEqual([
      expect.objectContaining({ type: 'channel-ready' }),
      expect.objectContaining({ type: 'channel-ready' }),
    ]);
    events.length = 0;
    await Promise.all([rank0!.allReduce(Float64Array.of(1, 2)), rank1!.allReduce(Float64Array.of(3, 4))]);
    await Promise.all([rank0!.send(1, 5, Int8Array.of(1, 2, 3)), rank1!.receive(0, 5, { dtype: 'i8', count: 3 })]);
    await rank1!.heartbeat(5_000);
    await Promise.all([rank0!.close(), rank1!.close()]);
    await job.coordinator.done;
    const seen = events.map(untimed);
    expect(seen.slice(0, 4)).toEqual([
      { type: 'collective-started', sequence: 0, operation: 'AllReduce', rank: expect.any(Number) },
      { type: 'collective-completed', sequence: 0, operation: 'AllReduce', bytes: 32 },
      { type: 'p2p-matched', rail: 0, source: 0, destination: 1, tag: 5n, bytes: 3 },
      { type: 'heartbeat', rank: 1, rail: 0 },
    ]);
    expect(seen.slice(4, -1).sort((a, b) => Number(a.rank) - Number(b.rank))).toEqual([
      { type: 'rank-left', rank: 0 },
      { type: 'rank-left', rank: 1 },
    ]);
    expect(seen.at(-1)).toEqual({ type: 'finished' });
  }, 30_000);

  it('reports the failure that ends the job, then completes', async () => {
    const job = await startCoordinator(2);
    jobs.push(job);
    const events: CoordinatorEvent[] = [];
    let completed = false;
    job.coordinator.events$.subscribe({ next: (event) => events.push(event), complete: () => (completed = true) });
    const [rank0] = await Promise.all([job.openRank(0), job.openRank(1)]);
    await rank0!.abort('rank 0 gives up');
    await rejection(job.coordinator.done);
    expect(events.at(-1)).toEqual({ type: 'failed', error: expect.objectContaining({ message: expect.stringContaining('rank 0 gives up') }) });
    expect(completed).toBe(true);
  }, 30_000);
});

describe('session.events$', () => {
  it('reports point-to-point messages, heartbeats and the failure, with sizes and never payload bytes', async () => {
    const job = await startCoordinator(2);
    jobs.push(job);
    const [rank0, rank1] = await Promise.all([job.openRank(0), job.openRank(1)]);
    const events: SessionEvent[] = [];
    rank1!.events$.subscribe((event) => events.push(event));
    await Promise.all([rank0!.send(1, 9n, Float32Array.of(1, 2)), rank1!.receive(null, 9n, { dtype: 'f32', count: 2 })]);
    await Promise.all([rank1!.send(0, 4, Uint8Array.of(7)), rank0!.receive(1, 4, { dtype: 'u8', count: 1 })]);
    await rank1!.heartbeat(5_000);
    await rank0!.abort('stop here');
    await expect.poll(() => events.at(-1)?.type).toBe('failed');
    expect(events.map(untimed)).toEqual([
      { type: 'p2p-received', source: null, tag: 9n, rail: 0, bytes: 8 },
      { type: 'p2p-sent', destination: 0, tag: 4n, rail: 0, bytes: 1 },
      { type: 'heartbeat' },
      { type: 'failed', error: expect.objectContaining({ code: 'REMOTE_ABORT' }) },
    ]);
  }, 30_000);
});
