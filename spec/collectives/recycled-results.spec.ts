/**
 * Fresh results on recycled memory (native/result_pool.h; docs/architecture.md "Fresh results"):
 * a result of 64 KiB or more may be a mapping a freed result left, still holding its bytes, so
 * every collective must write every byte of its result. Each collective runs twice with fresh
 * results on both of tcp_peer's planes; between the rounds every result is filled with 0xff,
 * dropped and collected, so the second round's results start on those dirty mappings; its results
 * must be exact.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { dataPlaneEngine, loadAddon } from '../../lib/kernels/addon.js';
import type { RankSession } from '../../lib/session/rank-session.js';
import { collect } from '../helpers/collector.js';
import { startCoordinator, type TestJob } from '../helpers/job.js';

const native = dataPlaneEngine() !== null;
if (!native) console.warn('spec/collectives/recycled-results.spec.ts: skipped: the native addon is not built here (results are ordinary typed arrays)');

const jobs: TestJob[] = [];
afterEach(async () => {
  await Promise.all(jobs.splice(0).map((job) => job.dispose()));
});

const WORLD = 3;
/** i32 per rank: every result at least 80 KiB (the small algorithms), then 1 MiB (the ring and pairwise families). */
const COUNTS = [20 * 1024, 256 * 1024];
const element = (round: number, rank: number, index: number) => round * 1_000_000 + rank * 1000 + (index % 997);

/** Every collective with a fresh result, on this rank, for `round`; the results, by name. */
async function collectives(session: RankSession, round: number, COUNT: number): Promise<Record<string, Int32Array | null>> {
  const r = session.rank;
  const mine = Int32Array.from({ length: COUNT }, (_, index) => element(round, r, index));
  return {
    allReduce: await session.allReduce(mine, 'sum'),
    broadcast: await session.broadcast(mine, 1),
    allGather: await session.allGather(mine),
    reduceScatter: await session.reduceScatter(Int32Array.from({ length: COUNT * WORLD }, (_, index) => element(round, r, index)), 'sum'),
    allToAll: await session.allToAll(Int32Array.from({ length: COUNT * WORLD }, (_, index) => element(round, r, index))),
    reduce: await session.reduce(mine, 'max', 2),
    gather: await session.gather(mine, 0),
  };
}

/** What rank `rank` must get from `collectives` in `round`. */
function expected(round: number, rank: number, COUNT: number): Record<string, number[] | null> {
  const sum = (index: number) => Array.from({ length: WORLD }, (_, peer) => element(round, peer, index)).reduce((a, b) => a + b, 0);
  const all = (count: number, value: (index: number) => number) => Array.from({ length: count }, (_, index) => value(index));
  return {
    allReduce: all(COUNT, sum),
    broadcast: all(COUNT, (index) => element(round, 1, index)),
    allGather: all(COUNT * WORLD, (index) => element(round, Math.floor(index / COUNT), index % COUNT)),
    reduceScatter: all(COUNT, (index) => sum(rank * COUNT + index)),
    allToAll: all(COUNT * WORLD, (index) => element(round, Math.floor(index / COUNT), rank * COUNT + (index % COUNT))),
    reduce: rank === 2 ? all(COUNT, (index) => element(round, WORLD - 1, index)) : null,
    gather: rank === 0 ? all(COUNT * WORLD, (index) => element(round, Math.floor(index / COUNT), index % COUNT)) : null,
  };
}

describe.skipIf(!native)('fresh results on recycled memory', () => {
  for (const [dataPlane, COUNT] of (['native', 'js'] as const).flatMap((plane) => COUNTS.map((count) => [plane, count] as const))) {
    it(`tcp_peer, the ${dataPlane} plane, 3 ranks, ${COUNT} i32: every collective writes every byte of a result that starts dirty`, async () => {
      const job = await startCoordinator(WORLD, { timeoutMs: 10_000, transport: 'tcp_peer' });
      jobs.push(job);
      const sessions = await Promise.all(Array.from({ length: WORLD }, (_, rank) => job.openRank(rank, { dataPlane })));
      const first = await Promise.all(sessions.map((session) => collectives(session, 1, COUNT)));
      for (const results of first) for (const result of Object.values(results)) result?.fill(-1);
      first.length = 0;
      const pool = loadAddon();
      // Collected until the pool stops growing: results of earlier tests (the other plane's) freed
      // during the second round would grow the pool it takes from, hiding what it took.
      for (let round = 0, before = -1; round < 20 && (pool.resultPoolBytes() < 20 * COUNT * 4 || pool.resultPoolBytes() !== before); round++) {
        before = pool.resultPoolBytes();
        collect();
        await new Promise((resolve) => setImmediate(resolve));
      }
      // The dirty mappings wait in the pool: the next results take them.
      const kept = pool.resultPoolBytes();
      expect(kept).toBeGreaterThanOrEqual(20 * COUNT * 4);
      const second = await Promise.all(sessions.map((session) => collectives(session, 2, COUNT)));
      // Both planes' schedules take their fresh results from the pool.
      expect(pool.resultPoolBytes()).toBeLessThan(kept);
      second.forEach((results, rank) => {
        const want = expected(2, rank, COUNT);
        for (const [name, result] of Object.entries(results)) {
          const wanted = want[name]!;
          if (wanted === null || result === null) {
            expect(result, `rank ${rank} ${name}`).toBe(wanted);
            continue;
          }
          expect(result.length, `rank ${rank} ${name}`).toBe(wanted.length);
          // The first wrong element, if any (a whole-array diff of a megabyte says nothing more).
          const wrong = wanted.findIndex((value, index) => result[index] !== value);
          expect(wrong < 0 ? null : { index: wrong, got: result[wrong], want: wanted[wrong] }, `rank ${rank} ${name}`).toBeNull();
        }
      });
    });
  }
});
