/**
 * The reference design's tcp_host_staged tests (../shared/seed/network.rs, `mod tests`), ported
 * with their intent and timing bounds. Ranks run in this process; spec/process covers child processes.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { UniqueId } from '../../lib/protocol/unique-id.js';
import { expectAbortInterruptsCollective, rejection, sleep, startCoordinator, startJob, type TestJob } from '../helpers/job.js';

const jobs: TestJob[] = [];
async function track<T extends TestJob>(job: Promise<T>): Promise<T> {
  const started = await job;
  jobs.push(started);
  return started;
}
afterEach(async () => {
  await Promise.all(jobs.splice(0).map((job) => job.dispose()));
});

describe('seed tests: tcp_host_staged', () => {
  it('tcp_rendezvous_routes_all_gather_all_to_all_and_barrier', async () => {
    const job = await track(startJob(3, { uniqueId: UniqueId.fromBytes(new Array(16).fill(9)) }));
    await Promise.all(
      job.sessions.map(async (session) => {
        const rank = session.rank;
        const gathered = await session.allGather(Uint32Array.of(rank * 10, rank * 10 + 1));
        expect(Array.from(gathered)).toEqual([0, 1, 10, 11, 20, 21]);
        const exchanged = await session.allToAll(Uint32Array.from([0, 1, 2], (destination) => rank * 100 + destination));
        expect(Array.from(exchanged)).toEqual([rank, 100 + rank, 200 + rank]);
        await session.barrier();
        await session.close();
      }),
    );
    await expect(job.coordinator.done).resolves.toBeUndefined();
  });

  it('tcp_point_to_point_is_tagged_multiplexed_and_collective_independent', async () => {
    const job = await track(startJob(3, { uniqueId: UniqueId.fromBytes(new Array(16).fill(7)) }));
    const [zero, one, two] = job.sessions as [typeof job.sessions[0], typeof job.sessions[0], typeof job.sessions[0]];
    const gather = async (session: typeof zero) => Array.from((await session.allGather(Uint32Array.of(session.rank))) as Uint32Array);
    // As in the seed, each rank runs on its own: rank 2 goes straight to the all-gather, and its
    // request waits at the coordinator while ranks 0 and 1 are still exchanging point-to-point.
    const atTwo = gather(two);
    let twoGathered = false;
    void atTwo.then(() => (twoGathered = true), () => undefined);
    await sleep(20);
    const atZero = (async () => {
      await zero.send(1, 101, Uint32Array.of(101, 102));
      await zero.send(1, 100, Uint32Array.of(100, 101));
      return gather(zero);
    })();
    const atOne = (async () => {
      // Both receives are in flight at once; the sends arrive in the opposite tag order.
      const received = await Promise.all(
        [100, 101].map(async (tag) => [tag, Array.from((await one.receive(0, tag, { dtype: 'u32', count: 2 })) as Uint32Array)] as const),
      );
      expect(received).toEqual([
        [100, [100, 101]],
        [101, [101, 102]],
      ]);
      // The point-to-point exchange completed while rank 2's collective was pending, untouched by it.
      expect(twoGathered).toBe(false);
      return gather(one);
    })();
    for (const values of await Promise.all([atZero, atOne, atTwo])) expect(values).toEqual([0, 1, 2]);
    await Promise.all(job.sessions.map((session) => session.close()));
    await expect(job.coordinator.done).resolves.toBeUndefined();
  });

  it('tcp_rendezvous_aborts_mismatched_collective_order', async () => {
    const job = await track(startJob(2, { uniqueId: UniqueId.fromBytes(new Array(16).fill(5)) }));
    const [zero, one] = job.sessions as [typeof job.sessions[0], typeof job.sessions[0]];
    const errors = await Promise.all([rejection(zero.allGather(Uint32Array.of(0))), rejection(one.allReduce(Uint32Array.of(1)))]);
    for (const error of errors) {
      expect(error.code).toBe('REMOTE_ABORT');
      expect(error.message).toMatch(/collective sequence 0 mismatch: rank 0 submitted \{AllGather .*\}, rank 1 submitted \{AllReduce .*\}/);
    }
    await expect(job.coordinator.done).rejects.toThrow(/mismatch/);
  });

  it('collective_timeout_names_missing_rank_and_aborts_waiter', async () => {
    const job = await track(startCoordinator(2, { collectiveTimeoutMs: 150, timeoutMs: 2_000 }));
    const [waiting, missing] = await Promise.all([job.openRank(0), job.openRank(1)]);
    const started = Date.now();
    const error = await rejection(waiting.barrier());
    expect(error.code).toBe('REMOTE_ABORT');
    expect(error.message).toContain('missing ranks [1]');
    expect(Date.now() - started).toBeLessThan(2_000);
    await sleep(300 - (Date.now() - started));
    await missing.close();
    await expect(job.coordinator.done).rejects.toMatchObject({ code: 'TIMEOUT' });
  });

  it('explicit_rank_abort_interrupts_pending_point_to_point_work', async () => {
    const job = await track(startCoordinator(2, { timeoutMs: 2_000 }));
    const [waiting, aborting] = await Promise.all([job.openRank(0), job.openRank(1)]);
    const started = Date.now();
    const pending = rejection(waiting.receive(1, 99, { dtype: 'u32', count: 1 }));
    await sleep(25);
    await aborting.abort('injected rank failure');
    const error = await pending;
    expect(error.code).toBe('REMOTE_ABORT');
    expect(error.message).toContain('injected rank failure');
    expect(Date.now() - started).toBeLessThan(1_000);
    await expect(job.coordinator.done).rejects.toThrow(/injected rank failure/);
  });

  it('explicit_rank_abort_interrupts_collective_without_closing_its_session', async () => {
    await expectAbortInterruptsCollective(await track(startCoordinator(2, { timeoutMs: 2_000 })));
  });

  it('abort_is_broadcast_to_pending_work_on_every_point_to_point_rail', async () => {
    const job = await track(startCoordinator(2, { rails: 2, timeoutMs: 2_000 }));
    const [receiver, aborter] = await Promise.all([job.openRank(0), job.openRank(1)]);
    expect(receiver.rails).toBe(2);
    const pending = rejection(receiver.receive(1, 77, { dtype: 'u32', count: 1 }, { rail: 1 }));
    await sleep(20);
    await aborter.abort('multi-rail failure');
    const error = await pending;
    expect(error.code).toBe('REMOTE_ABORT');
    expect(error.message).toContain('multi-rail failure');
    await expect(job.coordinator.done).rejects.toThrow(/multi-rail failure/);
  });

  it('heartbeat_round_trip_is_independent_of_collective_sequence', async () => {
    const job = await track(startJob(2, { timeoutMs: 2_000 }));
    await Promise.all(
      job.sessions.map(async (session) => {
        for (let beat = 0; beat < 3; beat++) expect(await session.heartbeat(1_000)).toBeLessThan(1_000);
        await session.barrier();
        await session.close();
      }),
    );
    await expect(job.coordinator.done).resolves.toBeUndefined();
  });

  it('heartbeat_enabled_session_closes_cleanly_with_leave', async () => {
    const job = await track(startJob(2, { heartbeatTimeoutMs: 1_000, timeoutMs: 2_000 }));
    await Promise.all(
      job.sessions.map(async (session) => {
        await session.heartbeat(1_000);
        await session.barrier();
        await session.close();
      }),
    );
    await expect(job.coordinator.done).resolves.toBeUndefined();
  });

  it('collective_timeout_is_reconfigured_for_all_future_sequences', async () => {
    const job = await track(startCoordinator(2, { collectiveTimeoutMs: 2_000, timeoutMs: 2_000 }));
    const [waiting, missing] = await Promise.all([job.openRank(0), job.openRank(1)]);
    await Promise.all([waiting.setTimeout(120), missing.setTimeout(120)]);
    const started = Date.now();
    const error = await rejection(waiting.barrier());
    expect(error.code).toBe('REMOTE_ABORT');
    expect(error.message).toContain('missing ranks [1]');
    // Well under the original 2 s: the new 120 ms timeout governed this sequence.
    expect(Date.now() - started).toBeLessThan(1_500);
    await expect(job.coordinator.done).rejects.toMatchObject({ code: 'TIMEOUT' });
  });

  it('heartbeat_lease_aborts_a_stale_idle_rank', async () => {
    const job = await track(startCoordinator(2, { heartbeatTimeoutMs: 150, timeoutMs: 2_000 }));
    const [active] = await Promise.all([job.openRank(0), job.openRank(1)]);
    let failure: (Error & { code?: string }) | null = null;
    for (let beat = 0; beat < 20 && failure === null; beat++) {
      try {
        await active.heartbeat(1_000);
        await sleep(30);
      } catch (error) {
        failure = error as Error & { code?: string };
      }
    }
    expect(failure, 'stale rank did not expire').not.toBeNull();
    expect(failure!.code).toBe('REMOTE_ABORT');
    expect(failure!.message).toContain('heartbeat lease for rank 1');
    await expect(job.coordinator.done).rejects.toThrow(/heartbeat lease for rank 1; last contact \d+ ms ago/);
  });
});
