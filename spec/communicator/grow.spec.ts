import { afterEach, describe, expect, it } from 'vitest';
import { RankLostError } from '../../lib/errors.js';
import type { Communicator } from '../../lib/session/rank-session.js';
import type { CollectiveTransport } from '../../lib/transport/transport-kind.js';
import { openSession } from '../../lib/launch/open-session.js';
import { disposeGrowableJobs, GROWABLE_SECRET, startGrowableJob } from '../helpers/growable-job.js';
import { rejection, sleep } from '../helpers/job.js';

/**
 * Growth in one process over real sockets (docs/protocol.md 13.9): a process asks to join a
 * running fault-tolerant job, the ranks hear of it, admit it at a step boundary with `grow()`,
 * and go on in a grown job of their own. Process deaths and replacements through `rxccl launch`
 * are in spec/cli/launch.spec.ts (`--replace`) and spec/examples/examples.spec.ts (elastic-train.ts).
 */
const TRANSPORTS: CollectiveTransport[] = ['tcp_host_staged', 'tcp_peer'];
afterEach(disposeGrowableJobs);

async function faultTolerantJob(worldSize: number, transport: CollectiveTransport, maxWorldSize = worldSize) {
  const job = await startGrowableJob(worldSize, transport, { maxWorldSize });
  const sessions = await Promise.all(Array.from({ length: worldSize }, (_, rank) => job.openRank(rank)));
  return { sessions, joiner: job.joiner, coordinator: job.coordinator };
}

/** Resolves once every one of `sessions` heard that `count` processes wait (within the joiners' session timeout). */
async function heard(sessions: readonly Communicator[], count: number): Promise<void> {
  await expect.poll(() => sessions.map((session) => session.joinersWaiting), { timeout: 10_000, interval: 5 }).toEqual(sessions.map(() => count));
}

describe.each(TRANSPORTS)('grow on %s', (transport) => {
  it('an extra process joins a running job up to its maximum: the ranks admit it, and the grown world computes with it', async () => {
    const { sessions, joiner, coordinator } = await faultTolerantJob(3, transport, 4);
    expect(sessions.map((session) => session.joinersWaiting)).toEqual([0, 0, 0]);
    const joining = joiner();
    await heard(sessions, 1);
    const grown = await Promise.all(sessions.map((session) => session.grow()));
    const newcomer = await joining;
    const world = [...grown, newcomer];
    expect(world.map((session) => [session.rank, session.worldSize])).toEqual([
      [0, 4],
      [1, 4],
      [2, 4],
      [3, 4],
    ]);
    for (const session of world) expect(session.newcomers).toEqual([3]);
    // The grown world is a job of its own: its coordinator is the first one's successor.
    expect(coordinator.successor?.worldSize).toBe(4);
    expect(world.map((session) => session.joinersWaiting)).toEqual([0, 0, 0, 0]);
    const sums = await Promise.all(world.map((session) => session.allReduce(Float64Array.of(session.rank + 1))));
    expect(sums.map((sum) => sum[0])).toEqual([10, 10, 10, 10]);
    // State from a rank that carried the job on reaches the newcomer.
    const states = await Promise.all(world.map((session) => session.broadcastObject(session.rank === 0 ? { step: 7 } : null, 0)));
    expect(states).toEqual([{ step: 7 }, { step: 7 }, { step: 7 }, { step: 7 }]);
    // The first job's sessions were closed by grow(): calls there are refused, named.
    expect((await rejection(sessions[1]!.barrier())).message).toMatch(/rank 1 session closed/);
    await Promise.all(world.map((session) => session.close()));
    await coordinator.finished;
  });

  it('a rank lost, the others shrink, a replacement joins: grow() returns to the full size with it as the last rank', async () => {
    const { sessions, joiner, coordinator } = await faultTolerantJob(3, transport);
    const pending = [sessions[0]!, sessions[2]!].map((session) => rejection(session.allReduce(Float64Array.of(1))));
    await sleep(50);
    await sessions[1]!.close();
    for (const error of await Promise.all(pending)) expect(error).toBeInstanceOf(RankLostError);
    const survivors = [sessions[0]!, sessions[2]!];
    const shrunk = await Promise.all(survivors.map((session) => session.shrink()));
    expect(shrunk.map((communicator) => communicator.worldSize)).toEqual([2, 2]);
    const joining = joiner();
    await heard(survivors, 1);
    // The shrunk communicator grows: it holds every rank the job still has.
    const grown = await Promise.all(shrunk.map((communicator) => communicator.grow()));
    const replacement = await joining;
    const world = [...grown, replacement];
    expect(world.map((session) => [session.rank, session.worldSize])).toEqual([
      [0, 3],
      [1, 3],
      [2, 3],
    ]);
    expect(replacement.newcomers).toEqual([2]);
    const gathered = await Promise.all(world.map((session) => session.allGather(Int32Array.of(session.rank * 10))));
    for (const result of gathered) expect([...result]).toEqual([0, 10, 20]);
    await Promise.all(world.map((session) => session.close()));
    await coordinator.finished;
  });

  it('a job grows twice: a rank of the grown job lost, a second joiner dials the grown job\'s coordinator (as rxccl launch --replace does) and is admitted there', async () => {
    const { sessions, joiner, coordinator } = await faultTolerantJob(2, transport, 3);
    const first = joiner();
    await heard(sessions, 1);
    const grown = [...(await Promise.all(sessions.map((session) => session.grow()))), await first];
    const successor = coordinator.successor!;
    // Rank 1 of the grown job leaves; the others shrink, and a joiner comes to the grown job's coordinator.
    const pending = [grown[0]!, grown[2]!].map((session) => rejection(session.barrier()));
    await sleep(50);
    await grown[1]!.close();
    for (const error of await Promise.all(pending)) expect(error).toBeInstanceOf(RankLostError);
    const shrunk = await Promise.all([grown[0]!, grown[2]!].map((session) => session.shrink()));
    const second = openSession({ coordinator: `127.0.0.1:${successor.address.port}`, uniqueId: successor.uniqueId, secret: GROWABLE_SECRET, transport, faultTolerant: true, timeoutMs: 10_000, join: true });
    await heard([grown[0]!, grown[2]!], 1);
    const again = [...(await Promise.all(shrunk.map((communicator) => communicator.grow()))), await second];
    expect(again.map((session) => [session.rank, session.worldSize])).toEqual([
      [0, 3],
      [1, 3],
      [2, 3],
    ]);
    expect(successor.successor?.worldSize).toBe(3);
    const sums = await Promise.all(again.map((session) => session.allReduce(Int32Array.of(1))));
    expect(sums.map((sum) => sum[0])).toEqual([3, 3, 3]);
    await Promise.all(again.map((session) => session.close()));
    await coordinator.finished;
  });

  it('with no process waiting, grow() returns the communicator itself; a joiner past the maximum is refused, naming it', async () => {
    const { sessions, joiner } = await faultTolerantJob(2, transport);
    const same = await Promise.all(sessions.map((session) => session.grow()));
    expect(same[0]).toBe(sessions[0]);
    expect(same[1]).toBe(sessions[1]);
    const refused = await rejection(joiner());
    expect(refused.code).toBe('INVALID_CONFIGURATION');
    expect(refused.message).toMatch(/refused this process: connection rejected: job [0-9a-f]{32} is at its maximum of 2 ranks \(2 running, 0 waiting to join\)/);
    // The job goes on, untouched by the refused process.
    const sums = await Promise.all(sessions.map((session) => session.allReduce(Int32Array.of(2))));
    expect(sums.map((sum) => sum[0])).toEqual([4, 4]);
  });
});

describe('grow refusals', () => {
  it('a job that is not fault-tolerant refuses a joiner, and its ranks cannot grow', async () => {
    const job = await startGrowableJob(1, 'tcp_host_staged', { faultTolerant: false });
    const session = await job.openRank(0);
    const refused = await rejection(job.joiner());
    expect(refused.message).toMatch(/is not fault-tolerant: a process joins a running job only where the job and its coordinator run with GX1_FAULT_TOLERANT=1/);
    expect((await rejection(session.grow())).message).toMatch(/^grow\(\) needs a fault-tolerant job/);
    expect(session.joinersWaiting).toBe(0);
    expect(session.newcomers).toEqual([]);
  });
});
