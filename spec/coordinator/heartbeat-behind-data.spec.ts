/**
 * Issue #44, item 4: on tcp_host_staged with one rail, a large Send used to hold up the rank's
 * heartbeats (and the coordinator's echoes) until its last byte was through, so a send longer
 * than the lease killed a live rank. Messages now travel in fragments (docs/protocol.md 10.7) and a
 * Heartbeat or an Abort waits behind one fragment at most, in both directions.
 */
import { afterEach, expect, it } from 'vitest';
import { heartbeat$ } from '../../lib/session/operators/heartbeat.js';
import type { RankSession } from '../../lib/session/rank-session.js';
import { sleep, startCoordinator, type TestJob } from '../helpers/job.js';

const MIB = 1024 * 1024;
const MESSAGE_BYTES = 700 * MIB;
const LEASE_MS = 2_000;
const BEAT_MS = 250;

const jobs: TestJob[] = [];
afterEach(() => Promise.all(jobs.splice(0).map((job) => job.dispose())));

/** Every round trip of a rank's heartbeats, and the error that ended them if any. */
function beating(session: RankSession) {
  const record = { roundTrips: [] as number[], error: null as Error | null };
  const subscription = heartbeat$(session, BEAT_MS, LEASE_MS).subscribe({
    next: (ms) => record.roundTrips.push(ms),
    error: (error: Error) => (record.error = error),
  });
  return { record, stop: () => subscription.unsubscribe() };
}

it('one rail, 700 MiB parked unmatched at the coordinator, a 2 s lease: both ranks stay alive, and the data arrives whole', async () => {
  // Filled before the job starts: a fill this large holds the event loop that serves every rank here.
  const pattern = Buffer.from(Array.from({ length: 251 }, (_, index) => (index * 7 + 3) & 0xff));
  const message = Buffer.allocUnsafe(MESSAGE_BYTES).fill(pattern);
  const job = await startCoordinator(2, { heartbeatTimeoutMs: LEASE_MS, timeoutMs: 60_000 });
  jobs.push(job);
  const [zero, one] = (await Promise.all([job.openRank(0), job.openRank(1)])) as [RankSession, RankSession];
  const beats = [beating(zero), beating(one)];
  // Rank 1's send is acknowledged once the whole message is at the coordinator, which holds it
  // (no receive is posted yet); then rank 0 receives it, the coordinator writing it out again.
  await one.send(0, 1, message);
  await sleep(BEAT_MS);
  const received = (await zero.receive(1, 1, { dtype: 'u8', count: MESSAGE_BYTES })) as Uint8Array;
  await sleep(BEAT_MS);
  for (const beat of beats) beat.stop();
  for (const { record } of beats) {
    expect(record.error).toBeNull();
    expect(record.roundTrips.length).toBeGreaterThan(0);
    expect(Math.max(...record.roundTrips)).toBeLessThan(LEASE_MS);
  }
  expect(received.length).toBe(MESSAGE_BYTES);
  // Fragment boundaries and the ends first, for a readable failure, then every byte.
  for (const at of [0, MIB - 1, MIB, 2 * MIB, MESSAGE_BYTES - MIB, MESSAGE_BYTES - 1]) expect(received[at], `byte ${at}`).toBe(message[at]);
  expect(Buffer.compare(received, message)).toBe(0);
  await Promise.all([zero.close(), one.close()]);
  await expect(job.coordinator.done).resolves.toBeUndefined();
}, 60_000);
