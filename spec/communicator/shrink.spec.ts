import { afterEach, describe, expect, it } from 'vitest';
import { filter } from 'rxjs';
import { RankLostError } from '../../lib/errors.js';
import { dataPlaneEngine } from '../../lib/kernels/addon.js';
import type { Communicator } from '../../lib/session/rank-session.js';
import type { CollectiveTransport } from '../../lib/transport/transport-kind.js';
import { rejection, sleep, startCoordinator, type TestJob } from '../helpers/job.js';

/**
 * Shrink in one process over real sockets: a rank leaves mid-collective (its session closes, which
 * a fault-tolerant coordinator reports as a loss like a death), the survivors' pending calls fail
 * naming it, and `shrink()` gives a communicator of the rest. Where the world runs the native data
 * plane, the shrunk communicator opens one of its own (docs/protocol.md 13.8). Process deaths
 * (SIGKILL) are in shrink-processes.spec.ts.
 */
const TRANSPORTS: CollectiveTransport[] = ['tcp_host_staged', 'tcp_peer'];

let job: TestJob | null = null;
afterEach(async () => {
  await job?.dispose();
  job = null;
});

async function faultTolerantJob(worldSize: number, transport: CollectiveTransport, dataPlane?: 'native'): Promise<Communicator[]> {
  job = await startCoordinator(worldSize, { transport, faultTolerant: true, timeoutMs: 10_000 });
  const opened = job;
  return Promise.all(Array.from({ length: worldSize }, (_, rank) => opened.openRank(rank, { faultTolerant: true, dataPlane })));
}

/**
 * Job rank `lost` leaves (its world `leaving` closes) while `members` wait in an all-reduce it never
 * joins: each is told, naming it, and shrinks to the others, the same communicator on each.
 */
async function loseAndShrink(members: Communicator[], leaving: Communicator, lost: number): Promise<Communicator[]> {
  const told = members.map((communicator) => rejection(communicator.allReduce(Int32Array.of(1))));
  await sleep(50);
  await leaving.close();
  for (const error of await Promise.all(told)) expect((error as RankLostError).rank).toBe(lost);
  const shrunk = await Promise.all(members.map((communicator) => communicator.shrink()));
  const left = members[0]!.jobRanks.filter((jobRank) => jobRank !== lost);
  expect(shrunk.map((communicator) => communicator.jobRanks)).toEqual(new Array(members.length).fill(left));
  return shrunk;
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
    const twice = await loseAndShrink([shrunk[0]!, shrunk[2]!], sessions[1]!, 1);
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

const native = dataPlaneEngine() !== null;
const MiB = 1 << 20;
/** This process's TCP sockets and listeners now. */
const tcpHandles = () => process.getActiveResourcesInfo().filter((kind) => kind === 'TCPSocketWrap' || kind === 'TCPServerWrap').length;

/** Waits (a few turns of the loop: sockets end there) until at most `count` TCP handles are open; how many are. */
async function tcpHandlesSettle(count: number): Promise<number> {
  for (let turn = 0; turn < 100 && tcpHandles() > count; turn++) await sleep(10);
  return tcpHandles();
}

/** The planes of the collectives `communicator` finished while `work` ran, in order. */
async function planesDuring(communicator: Communicator, work: () => Promise<unknown>): Promise<string[]> {
  const planes: string[] = [];
  const watch = communicator.events$.pipe(filter((event) => event.type === 'collective-finished')).subscribe((event) => planes.push((event as { plane: string }).plane));
  try {
    await work();
  } finally {
    watch.unsubscribe();
  }
  return planes;
}

describe.skipIf(!native)('shrink on the native data plane', () => {
  it('the shrunk communicator runs its collectives on a native plane of its own, exact; again after a further loss; closing the job leaves no socket or listener open', async () => {
    const before = tcpHandles();
    const sessions = await faultTolerantJob(4, 'tcp_peer', 'native');
    expect(sessions.map((session) => session.plan('allReduce', MiB).plane)).toEqual(new Array(4).fill('native'));
    const shrunk = await loseAndShrink(sessions.slice(0, 3), sessions[3]!, 3);
    for (const communicator of shrunk) {
      expect(communicator.plan('allReduce', 8).plane).toBe('native');
      expect(communicator.plan('allReduce', MiB).plane).toBe('native');
    }
    const planes = await Promise.all(
      shrunk.map((communicator) =>
        planesDuring(communicator, async () => {
          const r = communicator.rank;
          const big = await communicator.allReduce(Float32Array.from({ length: MiB / 4 }, (_, at) => r + (at % 5)));
          expect([big[0], big[MiB / 4 - 1]]).toEqual([3, 3 + 3 * ((MiB / 4 - 1) % 5)]);
          expect(Array.from(await communicator.broadcast(Int32Array.of(10 + r), 2))).toEqual([12]);
          expect(Array.from(await communicator.allGather(Int32Array.of(r)))).toEqual([0, 1, 2]);
        }),
      ),
    );
    expect(planes).toEqual(new Array(3).fill(['native', 'native', 'native']));

    // Job rank 1 (rank 1 of the shrunk communicator) leaves mid-all-reduce: shrink again.
    const twice = await loseAndShrink([shrunk[0]!, shrunk[2]!], sessions[1]!, 1);
    const last = await Promise.all(
      twice.map((communicator) => planesDuring(communicator, async () => expect(Array.from(await communicator.allReduce(Float64Array.of(communicator.jobRanks[communicator.rank]! + 1)))).toEqual([4]))),
    );
    expect(last).toEqual([['native'], ['native']]);
    await job!.dispose();
    job = null;
    expect(await tcpHandlesSettle(before)).toBeLessThanOrEqual(before);
  });

  // A survivor that goes while the others set up the shrunk communicator's plane (trading
  // endpoints, connecting its mesh), or before, or after: whenever it goes, every other survivor
  // gets a communicator, the same on each, whose first call either fails naming it or runs without
  // it; a shrink of that one runs natively; nothing is left open.
  it.each([0, 2, 5, 10, 20, 40])('a survivor lost %i ms into the shrink: never a hang, the same communicator on every survivor, its first call names the rank or runs without it; no socket left', async (delayMs) => {
    const before = tcpHandles();
    const sessions = await faultTolerantJob(4, 'tcp_peer', 'native');
    const told = sessions.slice(0, 3).map((session) => rejection(session.barrier()));
    await sleep(50);
    await sessions[3]!.close();
    await Promise.all(told);
    const shrinking = sessions.slice(0, 2).map((session) => session.shrink());
    // Its own shrink may be over before it leaves (the later delays on a quick machine).
    const leaving = sessions[2]!.shrink().then(
      () => null,
      (error: Error & { code?: string }) => error,
    );
    await sleep(delayMs);
    const lostAt = performance.now();
    await sessions[2]!.close();
    const shrunk = await Promise.all(shrinking);
    // Within the loss's grace and a set-up: nothing waits for the timeout (10 s).
    expect(performance.now() - lostAt).toBeLessThan(2_000);
    // The rank that closed its session mid-shrink: its own shrink ends with the close, unless it was over.
    expect((await leaving)?.code ?? 'over before it left').toMatch(/^(CHANNEL_CLOSED|over before it left)$/);
    expect(shrunk[0]!.jobRanks).toEqual(shrunk[1]!.jobRanks);
    expect(shrunk[0]!.communicatorId).toBe(shrunk[1]!.communicatorId);
    let survivors = shrunk;
    if (shrunk[0]!.jobRanks.includes(2)) {
      for (const error of await Promise.all(shrunk.map((communicator) => rejection(communicator.allReduce(Int32Array.of(1)))))) {
        expect(error).toBeInstanceOf(RankLostError);
        expect((error as RankLostError).rank).toBe(2);
      }
      survivors = await Promise.all(shrunk.map((communicator) => communicator.shrink()));
    }
    expect(survivors.map((communicator) => communicator.jobRanks)).toEqual([
      [0, 1],
      [0, 1],
    ]);
    const planes = await Promise.all(survivors.map((communicator) => planesDuring(communicator, async () => expect(Array.from(await communicator.allReduce(Int32Array.of(1)))).toEqual([2]))));
    expect(planes).toEqual([['native'], ['native']]);
    await job!.dispose();
    job = null;
    expect(await tcpHandlesSettle(before)).toBeLessThanOrEqual(before);
  });
});
