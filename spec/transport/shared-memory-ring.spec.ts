/**
 * The shared-memory ring of one data link (native/shared_memory_ring.h), writer and reader in one
 * process's memory: against a reference queue of kRingSlots places, whatever the order of writes,
 * reads and sleeps and whatever the payloads' sizes, every entry comes out whole and in order: a
 * payload of up to 8 KiB in its message's slot; a larger one, where single copy carries it or the
 * ring could not hold it whole (over 32 x 8 KiB), said to follow on the socket; else its first
 * 8 KiB in its message's slot and the rest in fragments of 8 KiB (the last the rest), which put
 * together give the payload back. A write finds the ring full exactly when 32 entries wait, a
 * message waits while the last payload's fragments are due, and each side may sleep exactly when
 * it has nothing to do; a reader expecting another entry than the one in the slot (another length,
 * place, or a fragment for a message) names both, as a data link fails a peer before a byte is copied.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { loadAddon, type SharedMemoryRingRead, type SharedMemoryRingStep } from '../../lib/kernels/addon.js';

const SLOTS = 32;
const SLOT_PAYLOAD_BYTES = 8 << 10;
const SINGLE_COPY_BYTES = 256 << 10;

const trace = (steps: SharedMemoryRingStep[]) => loadAddon().sharedMemoryRingTrace!(steps);

/** What the reference expects of a slot: a message's (header, place, whole length) or a fragment's, and the bytes in it. */
interface Entry {
  readonly header?: Uint8Array;
  readonly where: SharedMemoryRingRead['where'];
  readonly payloadBytes: number;
  readonly payload: Uint8Array;
}

/** The reference: a message's entry, and its fragments, from the payload's size alone. */
function entriesOf(header: Uint8Array, payload: Uint8Array, bySingleCopy: boolean): Entry[] {
  if (payload.length <= SLOT_PAYLOAD_BYTES) return [{ header, where: 'slot', payloadBytes: payload.length, payload }];
  if ((bySingleCopy && payload.length >= SINGLE_COPY_BYTES) || payload.length > SLOTS * SLOT_PAYLOAD_BYTES) {
    return [{ header, where: 'socket', payloadBytes: payload.length, payload: new Uint8Array(0) }];
  }
  const entries: Entry[] = [{ header, where: 'slots', payloadBytes: payload.length, payload: payload.subarray(0, SLOT_PAYLOAD_BYTES) }];
  for (let at = SLOT_PAYLOAD_BYTES; at < payload.length; at += SLOT_PAYLOAD_BYTES) {
    const fragment = payload.subarray(at, Math.min(at + SLOT_PAYLOAD_BYTES, payload.length));
    entries.push({ where: 'fragment', payloadBytes: fragment.length, payload: fragment });
  }
  return entries;
}

/** `n` bytes that differ from one place to the next and from one length to the next. */
function patterned(n: number): Uint8Array {
  const bytes = new Uint8Array(n);
  for (let i = 0; i < n; i++) bytes[i] = (i * 7 + (i >> 8) + n) & 255;
  return bytes;
}

describe('the shared-memory ring', () => {
  it('agrees with a reference queue of 32 places under any order of writes, fragments, reads and sleeps', () => {
    // A message by its payload's size (the bytes follow from it: a counterexample stays short).
    const message = fc.record({
      header: fc.uint8Array({ minLength: 32, maxLength: 32 }),
      // Mostly small, now and then around the slot's size, its multiples, the ring's size or single
      // copy's threshold.
      payload: fc.oneof(
        { weight: 5, arbitrary: fc.nat(64) },
        { weight: 2, arbitrary: fc.constantFrom(1, 2, 3, 16, 17, 31, 32, 33).chain((k) => fc.integer({ min: k * SLOT_PAYLOAD_BYTES - 2, max: k * SLOT_PAYLOAD_BYTES + 2 })) },
        { weight: 1, arbitrary: fc.integer({ min: SINGLE_COPY_BYTES - 2, max: SINGLE_COPY_BYTES + 2 }) },
        { weight: 1, arbitrary: fc.nat(60_000) },
      ),
      bySingleCopy: fc.boolean(),
    });
    const step = fc.oneof(
      { weight: 2, arbitrary: message },
      { weight: 4, arbitrary: fc.constant('fragment' as const) },
      { weight: 5, arbitrary: fc.constant('read' as const) },
      { weight: 1, arbitrary: fc.constantFrom('reader sleeps' as const, 'writer sleeps' as const) },
    );
    fc.assert(
      fc.property(fc.array(step, { maxLength: 160 }), (sized) => {
        const steps: Exclude<SharedMemoryRingStep, { readonly expect: unknown }>[] = sized.map((s) => (typeof s === 'string' ? s : { ...s, payload: patterned(s.payload) }));
        const answers = trace(steps);
        // Entries in the ring, and the fragments the writer still owes (the reference's writer).
        const queue: Entry[] = [];
        let owed: Entry[] = [];
        // What the reader put together: each message's payload from its entries.
        const written: Uint8Array[] = [];
        const assembled: Uint8Array[][] = [];
        steps.forEach((s, i) => {
          const answer = answers[i];
          if (s === 'reader sleeps') return expect(answer).toBe(queue.length === 0);
          if (s === 'writer sleeps') return expect(answer).toBe(queue.length === SLOTS);
          if (s === 'fragment') {
            if (owed.length === 0) return expect(answer).toBeNull();
            expect(answer).toBe(queue.length < SLOTS);
            if (queue.length < SLOTS) queue.push(owed.shift()!);
            return;
          }
          if (s !== 'read') {
            const fits = queue.length < SLOTS && owed.length === 0;
            expect(answer).toBe(fits);
            if (!fits) return;
            const [first, ...rest] = entriesOf(s.header, s.payload, s.bySingleCopy ?? false);
            queue.push(first!);
            owed = rest;
            written.push(s.payload);
            return;
          }
          const expected = queue.shift();
          if (expected === undefined) return expect(answer).toBeNull();
          const read = answer as SharedMemoryRingRead;
          expect(read.where).toBe(expected.where);
          expect(read.payloadBytes).toBe(expected.payloadBytes);
          // Byte arrays compared whole (Buffer.equals): toEqual goes element by element.
          expect(Buffer.from(read.payload).equals(expected.payload), `${expected.where} of ${expected.payloadBytes} bytes`).toBe(true);
          if (expected.where === 'fragment') {
            expect(read.header).toBeUndefined();
            assembled.at(-1)!.push(read.payload);
          } else {
            expect(Uint8Array.from(read.header!)).toEqual(expected.header);
            assembled.push([expected.where === 'socket' ? written[assembled.length]! : read.payload]);
          }
        });
        // Every payload read to its end came back whole.
        assembled.forEach((bytes, m) => {
          const payload = written[m]!;
          const whole = m < assembled.length - 1 || (queue.length === 0 && owed.length === 0);
          if (whole) expect(Buffer.concat(bytes).equals(payload), `message ${m}'s payload put together`).toBe(true);
        });
      }),
      { numRuns: 200 },
    );
  });

  it('carries a payload of 32 slots through a full ring and back to empty, its fragments in order', () => {
    const payload = patterned(32 * SLOT_PAYLOAD_BYTES);
    const header = new Uint8Array(32).fill(9);
    const filling: SharedMemoryRingStep[] = [{ header, payload }, ...Array<SharedMemoryRingStep>(SLOTS - 1).fill('fragment'), 'fragment', 'writer sleeps'];
    const answers = trace([...filling, ...Array<SharedMemoryRingStep>(SLOTS).fill('read'), 'read', 'reader sleeps']);
    // The message and 31 fragments fill the ring: no fragment is due after them, the writer may sleep.
    expect(answers.slice(0, SLOTS)).toEqual(Array(SLOTS).fill(true));
    expect(answers[SLOTS]).toBeNull();
    expect(answers[SLOTS + 1]).toBe(true);
    const reads = answers.slice(SLOTS + 2, 2 * SLOTS + 2) as SharedMemoryRingRead[];
    expect(reads[0]!.where).toBe('slots');
    expect(reads[0]!.payloadBytes).toBe(payload.length);
    expect(reads.slice(1).every((r) => r.where === 'fragment' && r.payloadBytes === SLOT_PAYLOAD_BYTES)).toBe(true);
    expect(answers.slice(2 * SLOTS + 2)).toEqual([null, true]);
    expect(Buffer.concat(reads.map((r) => r.payload)).equals(payload)).toBe(true);
  });

  it('carries a payload of 20 slots plus 5 bytes through a ring already half full, waiting for a slot', () => {
    const payload = patterned(20 * SLOT_PAYLOAD_BYTES + 5);
    const small = { header: new Uint8Array(32).fill(1), payload: new Uint8Array(3) };
    const steps: SharedMemoryRingStep[] = [...Array<SharedMemoryRingStep>(12).fill(small), { header: new Uint8Array(32), payload }, ...Array<SharedMemoryRingStep>(20).fill('fragment')];
    const answers = trace([...steps, 'read', 'fragment', ...Array<SharedMemoryRingStep>(SLOTS).fill('read')]);
    // 12 messages and the payload's slot, then 19 fragments fill the 32 slots: the 20th (5 bytes) waits.
    expect(answers.slice(0, 32)).toEqual(Array(32).fill(true));
    expect(answers[32]).toBe(false);
    expect((answers[33] as SharedMemoryRingRead).payloadBytes).toBe(3);
    expect(answers[34]).toBe(true);
    const reads = answers.slice(35) as SharedMemoryRingRead[];
    expect(reads.slice(0, 11).every((r) => r.where === 'slot')).toBe(true);
    const parts = reads.slice(11);
    expect(parts.map((r) => r.where)).toEqual(['slots', ...Array(20).fill('fragment')]);
    expect(parts.at(-1)!.payloadBytes).toBe(5);
    expect(Buffer.concat(parts.map((r) => r.payload)).equals(payload)).toBe(true);
  });

  it("a reader expecting another entry than the writer's names both before copying a byte, as a data link fails a peer", () => {
    const header = new Uint8Array(32);
    const message = (n: number, bySingleCopy = false): SharedMemoryRingStep => ({ header, payload: patterned(n), bySingleCopy });
    const answers = trace([
      message(20_000),
      { expect: 'message', payloadBytes: 20_000 },
      'fragment',
      { expect: 'fragment', payloadBytes: 8000 },
      'fragment',
      { expect: 'message', payloadBytes: 3616 },
      message(100),
      { expect: 'message', payloadBytes: 101 },
      message(262_144, true),
      { expect: 'message', payloadBytes: 262_144 },
      message(300_000),
      { expect: 'message', payloadBytes: 300_000 },
      message(200_000),
      { expect: 'message', payloadBytes: 200_000, bySingleCopy: true },
    ]);
    expect((answers[1] as SharedMemoryRingRead).where).toBe('slots');
    expect(answers[3]).toBe('ring slot of a 8192-byte fragment where a fragment of 8000 bytes is due');
    expect(answers[5]).toBe('ring slot of a 3616-byte fragment where a message of 3616 bytes is due in the slot');
    expect(answers[7]).toBe('ring slot of a 100-byte payload in the slot where 101 bytes are due in the slot');
    // Single copy on at the writer, not at the reader; the ring too small at both; below single copy's size at both.
    expect(answers[9]).toBe('ring slot of a 262144-byte payload on the socket where 262144 bytes are due in the slots');
    expect((answers[11] as SharedMemoryRingRead).where).toBe('socket');
    expect((answers[13] as SharedMemoryRingRead).where).toBe('slots');
  });

  it('names a step it cannot take', () => {
    expect(() => trace([{ header: new Uint8Array(31), payload: new Uint8Array(0) }])).toThrow(/header must be 32 bytes/);
    expect(() => trace(['peek' as SharedMemoryRingStep])).toThrow(/unknown step "peek"/);
  });
});
