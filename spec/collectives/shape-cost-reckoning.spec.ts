/**
 * The pricing's reckoning (lib/collectives/choice-cost.ts `shapeCost`) gives exactly the numbers of
 * the straightforward one it replaced (./straightforward-shape-cost.ts), so every estimate, and so
 * every choice, is unchanged: every scheduled row (the agreement's headers alone included), over worlds 1..33, both planes,
 * one host or several (groups), any size.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { CollectiveName } from '../../lib/collectives/algorithm.js';
import { referenceBytes } from '../../lib/collectives/candidate-costs.js';
import { estimateOf, type LinkFacts, plannedSchedules, shapeCost, type ShapeCost } from '../../lib/collectives/choice-cost.js';
import type { Schedule, ScheduleOf } from '../../lib/collectives/schedule/schedule.js';
import { ALGORITHMS } from '../../lib/collectives/select.js';
import { straightforwardShapeCost } from './straightforward-shape-cost.js';

const COLLECTIVES: readonly CollectiveName[] = ['barrier', 'allReduce', 'reduce', 'broadcast', 'allGather', 'gather', 'reduceScatter', 'allToAll'];
const ROOTED: readonly CollectiveName[] = ['broadcast', 'reduce', 'gather'];

/** What a reckoning gives: its cost, or that it throws (a label the job cannot number, a send without a receive). */
function outcome(reckon: () => ShapeCost | null): ShapeCost | null | 'throws' {
  try {
    return reckon();
  } catch {
    return 'throws';
  }
}

const arbCase = fc.record({
  collective: fc.constantFrom(...COLLECTIVES),
  plane: fc.constantFrom('native' as const, 'js' as const),
  worldSize: fc.integer({ min: 1, max: 33 }),
  // Ranks per host: 0 puts every rank on one host, 1 each on its own (no groups); else groups of that many (the last may hold fewer).
  perHost: fc.integer({ min: 0, max: 8 }),
  channels: fc.integer({ min: 1, max: 4 }),
  root: fc.nat(),
  bytes: fc.oneof(fc.constantFrom(0, 8, 1024, 1 << 20), fc.integer({ min: 0, max: 1 << 26 })),
});

describe("the pricing's reckoning", () => {
  it('gives exactly the estimates of the straightforward reckoning, for every row, world 1..33, plane, hosts and size', () => {
    fc.assert(
      fc.property(arbCase, ({ collective, plane, worldSize, perHost, channels, root, bytes }) => {
        const ranks = [...Array(worldSize).keys()];
        const groups = perHost <= 1 || perHost >= worldSize ? null : Array.from({ length: Math.ceil(worldSize / perHost) }, (_, host) => ranks.slice(host * perHost, (host + 1) * perHost));
        const facts: LinkFacts = { worldSize, plane, topology: null, ranksShareHost: perHost !== 1 && groups === null, groups };
        // A rotated row is reckoned from rank 0 alone where every link is alike (no groups), as the choice does.
        const alike = groups === null;
        const reference = referenceBytes(collective, worldSize, channels);
        const shapes: [(rank: number) => Schedule, boolean][] = [];
        const rows = ALGORITHMS[collective] as readonly { readonly plane: string; readonly schedule?: ScheduleOf; readonly rotated?: true }[];
        for (const row of rows) {
          if (row.plane !== plane || row.schedule === undefined) continue;
          const input = { worldSize, count: reference, width: 1, op: 'sum' as const, root: ROOTED.includes(collective) ? root % worldSize : null, ringOrder: ranks, ringChannels: channels, inPlace: false, ...(groups === null ? {} : { groups }) };
          shapes.push([plannedSchedules(row.schedule, input, plane), alike && row.rotated === true]);
        }
        for (const [scheduleOf, rotated] of shapes) {
          const expected = outcome(() => straightforwardShapeCost(scheduleOf, facts, reference));
          const actual = outcome(() => shapeCost(scheduleOf, facts, reference, rotated));
          expect(actual).toEqual(expected);
          if (expected !== null && expected !== 'throws') expect(estimateOf(actual as ShapeCost, bytes)).toBe(estimateOf(expected, bytes));
        }
      }),
      { numRuns: 120 },
    );
  });
});
