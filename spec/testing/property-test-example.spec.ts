/** examples/property-test.ts: the user-level property test finds its seeded bug, shrunk, and passes the fix. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkParameterServer } from '../../examples/property-test.js';

describe('examples/property-test.ts', () => {
  it('finds the seeded bug with a shrunk counterexample whose interleaving swaps two workers', async () => {
    const details = await checkParameterServer(true, 7);
    expect(details.failed).toBe(true);
    const [{ parameters, world }] = details.counterexample!;
    // Shrunk: two workers or a few more (the scheduler's draws, which do not shrink, order a
    // smaller world's deliveries differently), zero parameters, one nonzero gradient entry, batch
    // sizes that tell two workers apart.
    expect(world.worldSize).toBeGreaterThanOrEqual(3);
    expect(parameters.every((value) => value === 0)).toBe(true);
    expect(world.ranks.flatMap((drawn) => drawn.gradient).filter((value) => value !== 0)).toHaveLength(1);
    expect(new Set(world.ranks.slice(1).map((drawn) => drawn.batchSize)).size).toBeGreaterThan(1);
    const report = fc.defaultReportMessage(details)!;
    // The report names the delivery order; a worker's gradient overtakes a lower rank's.
    const arrivals = [...report.matchAll(/promise::(\d+)>0 rail 0 tag 1/g)].map((match) => Number(match[1]));
    expect(arrivals.some((worker, index) => index > 0 && worker < arrivals[index - 1]!)).toBe(true);
  });

  it('replays the same counterexample from the same seed', async () => {
    const [first, second] = [await checkParameterServer(true, 7), await checkParameterServer(true, 7)];
    expect(second.counterexample![0]).toEqual(first.counterexample![0]);
    expect(String(second.counterexample![1])).toBe(String(first.counterexample![1]));
  });

  it('the fix (receive from each worker by rank) holds over every drawn round and interleaving', async () => {
    const details = await checkParameterServer(false, 7);
    expect(details.failed, fc.defaultReportMessage(details)).toBe(false);
  });
});
