/**
 * The shared-memory ring of one data link (native/shared_memory_ring.h), writer and reader in one
 * process's memory: against a reference queue of kRingSlots places, whatever the order of writes,
 * reads and sleeps and whatever the payloads' sizes, every message comes out whole and in order, a
 * payload of up to 8 KiB in its slot and a larger one said to follow on the socket, a write finds
 * the ring full exactly when 16 messages wait, and each side may sleep exactly when it has nothing
 * to do.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { loadAddon, type SharedMemoryRingRead, type SharedMemoryRingStep } from '../../lib/kernels/addon.js';

const SLOTS = 16;
const SLOT_PAYLOAD_BYTES = 8 << 10;

const trace = (steps: SharedMemoryRingStep[]) => loadAddon().sharedMemoryRingTrace!(steps);

describe('the shared-memory ring', () => {
  it('agrees with a reference queue of 16 places under any order of writes, reads and sleeps', () => {
    const message = fc.record({
      header: fc.uint8Array({ minLength: 32, maxLength: 32 }),
      // Mostly small, now and then around the slot's size or far past it.
      payload: fc.oneof(
        { weight: 6, arbitrary: fc.uint8Array({ maxLength: 64 }) },
        { weight: 2, arbitrary: fc.integer({ min: SLOT_PAYLOAD_BYTES - 2, max: SLOT_PAYLOAD_BYTES + 2 }).map((n) => Uint8Array.from({ length: n }, (_, i) => (i * 7 + n) & 255)) },
        { weight: 1, arbitrary: fc.integer({ min: 0, max: 40_000 }).map((n) => new Uint8Array(n).fill(n & 255)) },
      ),
    });
    const step: fc.Arbitrary<SharedMemoryRingStep> = fc.oneof(
      { weight: 4, arbitrary: message },
      { weight: 4, arbitrary: fc.constant('read' as const) },
      { weight: 1, arbitrary: fc.constantFrom('reader sleeps' as const, 'writer sleeps' as const) },
    );
    fc.assert(
      fc.property(fc.array(step, { maxLength: 120 }), (steps) => {
        const answers = trace(steps);
        const queue: { header: Uint8Array; payload: Uint8Array }[] = [];
        steps.forEach((s, i) => {
          const answer = answers[i];
          if (s === 'reader sleeps') return expect(answer).toBe(queue.length === 0);
          if (s === 'writer sleeps') return expect(answer).toBe(queue.length === SLOTS);
          if (s !== 'read') {
            expect(answer).toBe(queue.length < SLOTS);
            if (queue.length < SLOTS) queue.push(s);
            return;
          }
          const expected = queue.shift();
          if (expected === undefined) return expect(answer).toBeNull();
          const read = answer as SharedMemoryRingRead;
          expect(Uint8Array.from(read.header)).toEqual(expected.header);
          expect(read.payloadBytes).toBe(expected.payload.length);
          if (expected.payload.length <= SLOT_PAYLOAD_BYTES) {
            expect(read.where).toBe('slot');
            expect(Uint8Array.from(read.payload!)).toEqual(expected.payload);
          } else {
            expect(read.where).toBe('socket');
            expect(read.payload).toBeUndefined();
          }
        });
      }),
      { numRuns: 200 },
    );
  });

  it('names a step it cannot take', () => {
    expect(() => trace([{ header: new Uint8Array(31), payload: new Uint8Array(0) }])).toThrow(/header must be 32 bytes/);
    expect(() => trace(['peek' as SharedMemoryRingStep])).toThrow(/unknown step "peek"/);
  });
});
