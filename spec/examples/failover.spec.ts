/** examples/failover.ts: partitions find the seeded split brain, shrunk to a readable case; the fix holds. */
import { describe, expect, it } from 'vitest';
import { checkFailover } from '../../examples/failover.js';

describe('examples/failover.ts', () => {
  it('finds the split brain, shrunk to two ranks with rank 1 cut off from the start for good', async () => {
    const details = await checkFailover(false, 7);
    expect(details.failed).toBe(true);
    const [{ worldSize, partition }] = details.counterexample!;
    expect({ worldSize, partition }).toEqual({ worldSize: 2, partition: { kind: 'partition', side: [1], fromMs: 0 } });
    expect(String(details.errorInstance)).toMatch(/^Error: split brain: ranks \[0,1\] each ended as the primary/);
  }, 120_000);

  it('the fix (acknowledged updates, one successor) holds over every drawn partition and interleaving', async () => {
    const details = await checkFailover(true, 7);
    expect(details.failed, String(details.errorInstance)).toBe(false);
  }, 120_000);
});
