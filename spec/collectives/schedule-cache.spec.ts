/**
 * A session's schedules by call shape (lib/collectives/schedule/schedule-cache.ts): a call whose
 * shape is the last call's takes that entry without its key (`repeated`); any field of the shape
 * that differs, or a cleared cache, sends the call to the lookup by key.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type CallShape, ScheduleCache } from '../../lib/collectives/schedule/schedule-cache.js';
import type { Schedule } from '../../lib/collectives/schedule/schedule.js';
import { ElementType } from '../../lib/protocol/element-type.js';
import { Opcode } from '../../lib/protocol/opcode.js';

const schedule: Schedule = { algorithm: 'all-pairs', layout: 'all-pairs', tagPrefix: 0, pieceScale: 1, scratchBytes: 0, sends: [], receives: [], folds: [] };

function entryOf(cache: ScheduleCache, key: string) {
  return cache.add(key, { opcode: Opcode.AllReduce, elementType: ElementType.F32, elementCount: 2, reduceOp: 1 }, schedule, { key, schedule: () => schedule, elementType: ElementType.F32 });
}

const SHAPE: CallShape = { collective: 'allReduce', algorithm: 'all-pairs', count: 2, elementType: ElementType.F32, op: 'sum', root: null, inPlace: true };

describe('the schedule cache', () => {
  it("gives the last call's entry to a call of exactly its shape, none to a call that differs in any field, and none once cleared", () => {
    const variants: Partial<CallShape>[] = [
      { collective: 'broadcast' },
      { algorithm: 'pairwise' },
      { count: 3 },
      { elementType: ElementType.F64 },
      { op: 'max' },
      { root: 0 },
      { inPlace: false },
    ];
    fc.assert(
      fc.property(fc.constantFrom(...variants), (change) => {
        const cache = new ScheduleCache();
        expect(cache.repeated(SHAPE)).toBeUndefined();
        const entry = entryOf(cache, 'a');
        cache.remember(SHAPE, entry);
        // A shape made anew per call, equal field by field.
        expect(cache.repeated({ ...SHAPE })).toBe(entry);
        expect(cache.repeated({ ...SHAPE, ...change })).toBeUndefined();
        // The other shape becomes the last: the first one is looked up by key again.
        const other = entryOf(cache, 'b');
        cache.remember({ ...SHAPE, ...change }, other);
        expect(cache.repeated({ ...SHAPE, ...change })).toBe(other);
        expect(cache.repeated(SHAPE)).toBeUndefined();
        expect(cache.get('a')).toBe(entry);
        cache.clear();
        expect(cache.repeated({ ...SHAPE, ...change })).toBeUndefined();
      }),
    );
  });
});
