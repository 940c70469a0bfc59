import { lastValueFrom, range, toArray } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { elastic, type ElasticChange } from '../../lib/session/operators/elastic.js';
import type { Communicator } from '../../lib/session/rank-session.js';
import type { CollectiveTransport } from '../../lib/transport/transport-kind.js';
import { disposeGrowableJobs, startGrowableJob } from '../helpers/growable-job.js';
import { rejection, sleep } from '../helpers/job.js';

/**
 * `elastic` in one process over real sockets: a training loop whose result does not depend on
 * the world size (each value is a global batch, split over the ranks there are) loses a rank,
 * goes on shrunk from its last snapshot, admits a replacement at a commit, and ends where an
 * uninterrupted run ends. Processes killed and replaced through `rxccl launch --replace` are in
 * spec/examples/examples.spec.ts (elastic-train.ts) and spec/cli/launch.spec.ts.
 */
const STEPS = 16;
/** Items per global batch: every world size here divides it unevenly or evenly alike. */
const BATCH = 12;

afterEach(disposeGrowableJobs);

/** The contribution of item `item` of batch `value` at parameter `x`: a gradient of a quadratic. */
const gradient = (value: number, item: number, x: number) => x - Math.sin(value * BATCH + item);

/** The parameter after `steps` uninterrupted steps (one rank). */
function reference(steps: number): number {
  let x = 0;
  for (let value = 0; value < steps; value++) {
    let sum = 0;
    for (let item = 0; item < BATCH; item++) sum += gradient(value, item, x);
    x -= 0.1 * (sum / BATCH);
  }
  return x;
}

/** One rank's training loop: its share of each batch, summed over the ranks, averaged by the batch. */
function train(world: Communicator, state: { x: number }, hooks: { beforeStep?: (communicator: Communicator, value: number) => Promise<void>; changes: ElasticChange[] }) {
  return range(0, STEPS).pipe(
    elastic(
      world,
      async (communicator, value) => {
        await hooks.beforeStep?.(communicator, value);
        let sum = 0;
        for (let item = communicator.rank; item < BATCH; item += communicator.worldSize) sum += gradient(value, item, state.x);
        const [total] = await communicator.allReduce(Float64Array.of(sum));
        state.x -= 0.1 * (total! / BATCH);
        return value;
      },
      { commit: () => state.x, restore: (x: number) => void (state.x = x), onResize: (_communicator, change) => hooks.changes.push(change) },
    ),
    toArray(),
  );
}

describe.each<CollectiveTransport>(['tcp_peer', 'tcp_host_staged'])('elastic on %s', (transport) => {
  it('a rank lost at step 5: the others go on from their last snapshot; a replacement joins and the job ends where an uninterrupted one does', async () => {
    const job = await startGrowableJob(3, transport);
    const worlds = await Promise.all([0, 1, 2].map((rank) => job.openRank(rank)));
    const states = [{ x: 0 }, { x: 0 }, { x: 0 }, { x: 0 }];
    const changes: ElasticChange[][] = [[], [], [], []];
    let replacement: Promise<number[]> | null = null;
    let joinerWaiting: Promise<void> | null = null;
    const runs = worlds.map((world, rank) =>
      lastValueFrom(
        train(world, states[rank]!, {
          changes: changes[rank]!,
          beforeStep: async (communicator, value) => {
            // Rank 2 dies at step 5 (its session closes: the coordinator reports it lost).
            if (rank === 2 && value === 5) await world.close();
            // After the loss, the replacement starts; rank 0 waits at step 9 until it has heard of it.
            if (rank === 0 && value === 8 && replacement === null) {
              replacement = job.joiner().then((session) => lastValueFrom(train(session, states[3]!, { changes: changes[3]! })));
              joinerWaiting = (async () => {
                while (communicator.joinersWaiting === 0) await sleep(5);
              })();
            }
            if (rank === 0 && value === 9) await joinerWaiting;
          },
        }),
      ),
    );
    const died = await rejection(runs[2]!);
    expect(died.message).toMatch(/rank 2 session closed/);
    const [done0, done1] = await Promise.all([runs[0]!, runs[1]!]);
    const joined = await replacement!;
    // Each rank emits each value it completed, once; the replacement from the snapshot it joined at.
    expect(done0).toEqual(Array.from({ length: STEPS }, (_, value) => value));
    expect(done1).toEqual(done0);
    // It joined at the commit after step 8 or after step 9 (rank 0 waits at step 9 until it heard of it).
    const joinedAt = joined[0]!;
    expect([9, 10]).toContain(joinedAt);
    expect(joined).toEqual(Array.from({ length: STEPS - joinedAt }, (_, index) => joinedAt + index));
    const expected = reference(STEPS);
    for (const state of [states[0]!, states[1]!, states[3]!]) expect(state.x).toBeCloseTo(expected, 12);
    expect(changes[0]!.map((change) => change.kind)).toEqual(['shrink', 'grow']);
    expect(changes[0]![1]).toEqual({ kind: 'grow', newcomers: [2] });
    expect(changes[3]).toEqual([]);
  });
});

describe('elastic options', () => {
  it('refuses a commitEvery that is not a positive integer', () => {
    expect(() => elastic(null as unknown as Communicator, () => [], { commit: () => 0, restore: () => undefined, commitEvery: 0 })).toThrow(/commitEvery must be a positive integer, got 0/);
  });

  it('outside a fault-tolerant job, the first commit refuses to grow, naming why', async () => {
    const world = await (await startGrowableJob(1, 'tcp_host_staged', { faultTolerant: false })).openRank(0);
    const error = await rejection(lastValueFrom(range(0, 2).pipe(elastic(world, async (_communicator, value) => value, { commit: () => 0, restore: () => undefined }))));
    expect(error.message).toMatch(/^grow\(\) needs a fault-tolerant job/);
  });
});
