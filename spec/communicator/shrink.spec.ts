import { afterEach, describe, expect, it } from 'vitest';
import { RankLostError } from '../../lib/errors.js';
import type { Communicator } from '../../lib/session/rank-session.js';
import type { CollectiveTransport } from '../../lib/transport/transport-kind.js';
import { rejection, sleep, startCoordinator, type TestJob } from '../helpers/job.js';

/**
 * Shrink in one process over real sockets: a rank leaves mid-collective (its session closes, which
 * a fault-tolerant coordinator reports as a loss like a death), the survivors' pending calls fail
 * naming it, and `shrink()` gives a communicator of the rest. Process deaths (SIGKILL) are in
 * shrink-processes.spec.ts.
 */
const TRANSPORTS: CollectiveTransport[] = ['tcp_host_staged', 'tcp_peer'];

let job: TestJob | null = null;
afterEach(async () => {
  await job?.dispose();
  job = null;
});

async function faultTolerantJob(worldSize: number, transport: CollectiveTransport): Promise<Communicator[]> {
  job = await startCoordinator(worldSize, { transport, faultTolerant: true, timeoutMs: 10_000 });
  const opened = job;
  return Promise.all(Array.from({ length: worldSize }, (_, rank) => opened.openRank(rank, { faultTolerant: true })));
}

describe.each(TRANSPORTS)('shrink on %s', (transport) => {
  it('a rank lost mid-all-reduce is named on every survivor; shrink gives the rest, twice in one job', async () => {
    const sessions = await faultTolerantJob(4, transport);
    // Ranks 0..2 wait in an all-reduce that rank 3 never joins: it leaves instead.
    const pending = sessions.slice(0, 3).map((session) => rejection(session.allReduce(Float64Array.of(session.rank + 1))));
    await sleep(50);
    const lostAt = performance.now();
    await sessions[3]!.close();
    const errors = await Promise.all(pending);
    for (const error of errors) {
      expect(error).toBeInstanceOf(RankLostError);
      expect((error as RankLostError).rank).toBe(3);
      expect(error.message).toMatch(/^rank 3 was lost \(.+\): rank \d of the job's world cannot complete; shrink\(\) continues with the ranks left$/);
    }
    const shrunk = await Promise.all(sessions.slice(0, 3).map((session) => session.shrink()));
    expect(performance.now() - lostAt).toBeLessThan(2_000);
    expect(shrunk.map((communicator) => [communicator.rank, communicator.worldSize])).toEqual([
      [0, 3],
      [1, 3],
      [2, 3],
    ]);
    expect(shrunk[0]!.jobRanks).toEqual([0, 1, 2]);
    const sums = await Promise.all(shrunk.map((communicator) => communicator.allReduce(Float64Array.of(communicator.rank + 1))));
    expect(sums.map((sum) => sum[0])).toEqual([6, 6, 6]);

    // Again: rank 1 of the shrunk communicator (job rank 1) leaves mid-collective.
    const again = [shrunk[0]!, shrunk[2]!].map((communicator) => rejection(communicator.allReduce(Int32Array.of(1))));
    await sleep(50);
    await sessions[1]!.close();
    for (const error of await Promise.all(again)) expect((error as RankLostError).rank).toBe(1);
    const twice = await Promise.all([shrunk[0]!.shrink(), shrunk[2]!.shrink()]);
    expect(twice.map((communicator) => communicator.jobRanks)).toEqual([
      [0, 2],
      [0, 2],
    ]);
    const last = await Promise.all(twice.map((communicator) => communicator.allGather(Int32Array.of(communicator.jobRanks[communicator.rank]!))));
    expect(last.map((result) => [...result])).toEqual([
      [0, 2],
      [0, 2],
    ]);
  });

  it('100 collectives after shrink() add no listener to the lost rank\'s closed sockets (no MaxListenersExceededWarning)', async () => {
    const warnings: Error[] = [];
    const warned = (warning: Error) => warnings.push(warning);
    process.on('warning', warned);
    try {
      const sessions = await faultTolerantJob(3, transport);
      const told = sessions.slice(0, 2).map((session) => rejection(session.barrier()));
      await sleep(50);
      await sessions[2]!.close();
      for (const error of await Promise.all(told)) expect(error).toBeInstanceOf(RankLostError);
      const shrunk = await Promise.all(sessions.slice(0, 2).map((session) => session.shrink()));
      for (let round = 0; round < 100; round++) {
        const sums = await Promise.all(shrunk.map((communicator) => communicator.allReduce(Int32Array.of(1))));
        expect(sums.map((sum) => sum[0])).toEqual([2, 2]);
      }
      // Node reports the 11th listener of one kind on one emitter: 100 rounds would pass it 20 times over.
      expect(warnings.filter((warning) => warning.name === 'MaxListenersExceededWarning').map((warning) => warning.message)).toEqual([]);
    } finally {
      process.off('warning', warned);
    }
  });

  it('a communicator without the lost rank is untouched; shrink outside a fault-tolerant job is refused', async () => {
    const sessions = await faultTolerantJob(4, transport);
    const halves = await Promise.all(sessions.map((session) => session.split({ color: session.rank < 2 ? 0 : 1 })));
    await sessions[3]!.close();
    // The half of ranks 0 and 1 goes on as if nothing happened.
    const sums = await Promise.all([halves[0]!.allReduce(Int32Array.of(1)), halves[1]!.allReduce(Int32Array.of(2))]);
    expect(sums.map((sum) => sum[0])).toEqual([3, 3]);
    const lost = await rejection(halves[2]!.barrier());
    expect(lost).toBeInstanceOf(RankLostError);
  });
});

it('a rank that is only slow is not shrunk away: the others wait for it, and every rank ends in one communicator of all', async () => {
  const sessions = await faultTolerantJob(4, 'tcp_peer');
  const early = sessions.slice(0, 3).map((session) => session.shrink());
  await sleep(300);
  const all = await Promise.all([...early, sessions[3]!.shrink()]);
  expect(all.map((communicator) => communicator.jobRanks)).toEqual(new Array(4).fill([0, 1, 2, 3]));
  const sums = await Promise.all(all.map((communicator) => communicator.allReduce(Int32Array.of(1))));
  expect(sums.map((sum) => sum[0])).toEqual([4, 4, 4, 4]);
});

it.each(TRANSPORTS)('the coordinator gone is not recoverable, and shrink says so (%s)', async (transport) => {
  const sessions = await faultTolerantJob(3, transport);
  await job!.coordinator.close();
  const failed = await rejection(sessions[1]!.barrier());
  expect(failed).not.toBeInstanceOf(RankLostError);
  const error = await rejection(sessions[1]!.shrink());
  expect(error.code).toBe('CHANNEL_CLOSED');
  expect(error.message).toMatch(/^rank 1 cannot shrink the job's world: the job itself failed \(.+\); a job goes on without lost ranks, never without its coordinator or after an abort$/);
});

it('shrink() outside a fault-tolerant job is refused, naming the setting', async () => {
  job = await startCoordinator(2, { transport: 'tcp_peer' });
  const opened = job;
  const sessions = await Promise.all([0, 1].map((rank) => opened.openRank(rank)));
  const error = await rejection(sessions[0]!.shrink());
  expect(error.code).toBe('INVALID_CONFIGURATION');
  expect(error.message).toContain('GX1_FAULT_TOLERANT=1');
});
