/** Tags as people read them: a collective's own pieces say which collective, step and piece. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { describeTag } from '../../lib/collectives/describe-tag.js';
import { PAIRWISE_TAG_PREFIX } from '../../lib/collectives/pairwise-family.js';
import { pieceTag } from '../../lib/collectives/peer-data.js';
import { RING_TAG_PREFIX } from '../../lib/collectives/ring-family.js';
import { headerTag } from '../../lib/collectives/schedule/link-agreement.js';
import { simulateJob } from '../../lib/testing/simulate-job.js';

describe('describeTag', () => {
  it("names a collective's piece by family, collective, channel, step and piece; a user's tag is its number", () => {
    expect(describeTag(headerTag(1n))).toBe('tag 5207287070220877824 (header of collective 1, step 0, piece 0)');
    expect(describeTag(pieceTag(RING_TAG_PREFIX, 5n, 2, 3, 7))).toBe(`tag ${pieceTag(RING_TAG_PREFIX, 5n, 2, 3, 7)} (ring of collective 5, channel 2, step 3, piece 7)`);
    expect(describeTag(pieceTag(PAIRWISE_TAG_PREFIX, 262_143n, 0, 4095, 4095))).toMatch(/\(pairwise of collective 262143, step 4095, piece 4095\)$/);
    expect(describeTag(7n)).toBe('tag 7');
  });

  it("a simulated job's deliveries name each collective message, not only its tag, with its index on its link and its payload", async () => {
    await fc.assert(
      fc.asyncProperty(fc.scheduler(), async (scheduler) => {
        const result = await simulateJob({ worldSize: 2, transport: 'tcp_peer', dataPlane: 'js', algorithm: 'ring', scheduler }, async (rank) =>
          Array.from(await rank.allReduce(Int32Array.of(rank.rank + 1))),
        );
        expect(result.ranks.map((outcome) => outcome.status === 'returned' && outcome.value)).toEqual([[3], [3]]);
        expect(result.traffic.deliveries.length).toBeGreaterThan(0);
        for (const delivery of result.traffic.deliveries) expect(delivery).toMatch(/^[01]>[01] rail 0 tag \d+ \((ring|header) of collective 0, step \d+, piece \d+\) #\d+ (i32|u8) \[[-\d, …]*\]( \(\d+ elements\))?$/);
      }),
      { numRuns: 3 },
    );
  });
});
