/**
 * Rank-side timeouts and aborts on virtual time: the session under test runs its timers on a
 * `VirtualTimeScheduler`, so a timeout fires at exactly the configured instant (checked against
 * the scheduler's clock) and an abort is seen to end a pending wait without any timer firing.
 * The sockets, the coordinator and the other ranks are real.
 */
import { VirtualTimeScheduler } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import type { RemoteAbortError } from '../../lib/errors.js';
import { COLLECTIVE_RESPONSE_GRACE_MS } from '../../lib/transport/collective-channel.js';
import type { CollectiveTransport } from '../../lib/transport/transport-kind.js';
import { rejection, sleep, startCoordinator, type TestJob } from '../helpers/job.js';

const jobs: TestJob[] = [];
afterEach(async () => {
  await Promise.all(jobs.splice(0).map((job) => job.dispose()));
});

/** Two ranks; rank 0's timers are virtual, rank 1's real. */
async function pair(transport: CollectiveTransport, timeoutMs: number) {
  const job = await startCoordinator(2, { transport, collectiveTimeoutMs: 600_000, timeoutMs: 10_000 });
  jobs.push(job);
  const clock = new VirtualTimeScheduler();
  const [virtual, real] = await Promise.all([job.openRank(0, { timeoutMs, scheduler: clock }), job.openRank(1)]);
  return { clock, virtual: virtual!, real: real!, job };
}

/** Lets real I/O settle, then runs every pending virtual timer; returns the virtual time reached. */
async function advance(clock: VirtualTimeScheduler): Promise<number> {
  await sleep(50);
  clock.flush();
  return clock.now();
}

describe('rank-side timeouts on virtual time', () => {
  it('tcp_host_staged: a receive nobody answers fails the session at exactly timeoutMs, naming tag and rail', async () => {
    const { clock, virtual } = await pair('tcp_host_staged', 7_000);
    const pending = rejection(virtual.receive(1, 5, { dtype: 'f32', count: 1 }));
    expect(await advance(clock)).toBe(7_000);
    const error = await pending;
    expect(error.code).toBe('TIMEOUT');
    expect(error.message).toBe('point-to-point Receive with tag 5 on rail 0 timed out');
    expect((await rejection(virtual.barrier())).message).toBe(error.message);
  });

  it('a collective response that never comes fails at timeoutMs + the grace, naming rank, sequence and operation', async () => {
    const { clock, virtual } = await pair('tcp_host_staged', 3_000);
    const pending = rejection(virtual.barrier());
    expect(await advance(clock)).toBe(3_000 + COLLECTIVE_RESPONSE_GRACE_MS);
    const error = await pending;
    expect(error.code).toBe('TIMEOUT');
    expect(error.message).toBe('rank 0 collective sequence 0 (Barrier) response timed out');
  });

  it('tcp_peer: a direct receive nobody answers times out at exactly timeoutMs and aborts the job on every rank', async () => {
    const { clock, virtual, real } = await pair('tcp_peer', 4_000);
    const pending = rejection(virtual.receive(1, 9, { dtype: 'u8', count: 2 }));
    const elsewhere = rejection(real.receive(0, 10, { dtype: 'u8', count: 1 }));
    expect(await advance(clock)).toBe(4_000);
    const error = await pending;
    expect(error.code).toBe('TIMEOUT');
    expect(error.message).toBe('direct peer receive from rank 1 with tag 9 on rail 0 timed out');
    const other = await elsewhere;
    expect(other.code).toBe('REMOTE_ABORT');
    expect(other.message).toContain('direct peer receive from rank 1 with tag 9 on rail 0 timed out');
  });

  it('setTimeout(ms) moves the rank-side deadline of later waits', async () => {
    const { clock, virtual, real } = await pair('tcp_host_staged', 9_000);
    await Promise.all([virtual.setTimeout(2_000), real.setTimeout(2_000)]);
    const start = clock.now();
    const pending = rejection(virtual.receive(1, 1, { dtype: 'i32', count: 1 }));
    expect((await advance(clock)) - start).toBe(2_000);
    expect((await pending).code).toBe('TIMEOUT');
  });
});

describe('rank-side aborts on virtual time', () => {
  for (const transport of ['tcp_host_staged', 'tcp_peer'] as const) {
    it(`${transport}: an abort from the other rank ends a pending receive and collective with no timer firing`, async () => {
      const { clock, virtual, real } = await pair(transport, 60_000);
      const receive = rejection(virtual.receive(1, 3, { dtype: 'f64', count: 4 }));
      await sleep(20);
      await real.abort('stop here');
      const error = await receive;
      expect(error.code).toBe('REMOTE_ABORT');
      // Over the mesh the abort can arrive down the direct link, named for the peer that sent it,
      // before the coordinator's relayed one.
      expect(error.message).toMatch(/^(collective coordinator aborted: rank 1 aborted: |direct peer rank 1 aborted: )stop here$/);
      expect((error as RemoteAbortError).reason).toMatch(/stop here$/);
      // Nothing timed out: the virtual clock never moved, and the session refuses later work with the abort.
      expect(clock.now()).toBe(0);
      expect((await rejection(virtual.allReduce(Float32Array.of(1)))).message).toBe(error.message);
    });
  }
});
