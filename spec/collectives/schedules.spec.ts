/**
 * Every schedule of the algorithm table, for every rank of worlds 1..16, run together in the
 * schedule model (rxccl/testing `runScheduleModel`), its events in random orders: the invariants
 * every algorithm must keep, whichever plane runs it.
 * - Well formed: spans inside their memories, the messages of each link paired in size and label.
 * - No rank waits on a send that is never made (the native plane's one-message-at-a-time links).
 * - No memory is written while a send still reads it or before a fold that reads it has run.
 * - Every rank gets exactly the contributions it needs: the symbol of each result element names
 *   them; reductions fold in rank order (the staged path's bits), rings in ring order and trees
 *   in tree order with every rank exactly once, avg divides once, at the end, and every rank of an
 *   all-reduce ends with the identical fold.
 * The tree family (log-depth schedules) again at worlds 1..33: powers of two and the ranks folded
 * in around them.
 * All of it again cut into stripes over 2..4 rails (`stripeOverRails`, with units of a few
 * elements rather than a MiB so that small shapes have many stripes), as the native plane runs it.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Dependency, Producers, Schedule, ScheduleInput, ScheduleOf } from '../../lib/collectives/schedule/schedule.js';
import { disseminationBarrier } from '../../lib/collectives/barrier/dissemination.js';
import { withHeaderExchange } from '../../lib/collectives/schedule/header-exchange.js';
import { messageLabel } from '../../lib/collectives/schedule/message-label.js';
import { stripeCuts, stripeOverRails } from '../../lib/collectives/schedule/rail-stripes.js';
import { runScheduleModel, ScheduleModelError, seededRandom } from '../../lib/testing/index.js';
import { arbScheduledCase, expectExactOutputs, SCHEDULED, type ScheduledCase, scheduledCollective } from '../helpers/scheduled-collective.js';

/** A case of any row on 1..`maxWorldSize` ranks (from `minWorldSize`), with the seed of its event order. */
const arbCase = (minWorldSize: number, maxWorldSize: number) =>
  fc.integer({ min: minWorldSize, max: maxWorldSize }).chain((worldSize) => fc.tuple(arbScheduledCase(worldSize), fc.integer()));
const TREES = SCHEDULED.filter(({ family }) => family === 'tree');

describe('every schedule of the table, in the model (lib/testing/schedule-model.ts)', () => {
  it('covers every collective but scatter and all-to-all-v, with its ring, pairwise, all-pairs, hierarchical and tree forms', () => {
    expect(SCHEDULED.map(({ collective, name }) => `${collective} ${name}`).sort()).toEqual(
      [
        'allGather bruck',
        'allGather hierarchical',
        'allGather pairwise',
        'allGather ring',
        'allReduce all-pairs',
        'allReduce hierarchical',
        'allReduce pairwise',
        'allReduce ring',
        'allReduce rabenseifner',
        'allReduce recursive-doubling',
        'allToAll pairwise',
        'barrier dissemination',
        'barrier pairwise',
        'broadcast binomial',
        'broadcast chain',
        'broadcast pairwise',
        'gather binomial',
        'gather pairwise',
        'reduce binomial',
        'reduce pairwise',
        'reduceScatter hierarchical',
        'reduceScatter pairwise',
        'reduceScatter ring',
      ].sort(),
    );
  });

  /** Every rank's schedule of a drawn case run in the model, and every result checked. */
  const modelled = ([c, seed]: [ScheduledCase, number]) => {
    const { schedules, input, memory } = scheduledCollective(c);
    expectExactOutputs(c, runScheduleModel(schedules, input, memory, seededRandom(seed)).outputs);
  };

  it('is well formed, never waits on itself, races no memory, and delivers exactly every contribution (rank order, or ring or tree order once each), worlds 1..16, with the native plane\'s headers on the ring of successors', () => {
    fc.assert(fc.property(arbCase(1, 16), modelled), { numRuns: 300 });
  }, 120_000);

  it('the same at worlds 17..33, fewer cases (each a world of all-pairs schedules is slow to model)', () => {
    fc.assert(fc.property(arbCase(17, 33), modelled), { numRuns: 30 });
  }, 120_000);

  it('the tree family again at worlds 1..33 (non-powers of two folded in and handed back)', () => {
    const trees = fc.integer({ min: 1, max: 33 }).chain((worldSize) => fc.tuple(arbScheduledCase(worldSize, TREES), fc.integer()));
    fc.assert(fc.property(trees, modelled), { numRuns: 100 });
  }, 120_000);

  it('the model finds a deadlock, a race and a malformed link, and lets messages on different rails overtake each other', () => {
    const run = (write: ScheduleOf, worldSize = 2, seed = 1) =>
      runScheduleModel(
        Array.from({ length: worldSize }, (_, rank) => write({ rank, worldSize, count: 4, width: 1, op: 'sum', root: 0, ringOrder: [0, 1], ringChannels: 1, inPlace: false })),
        (rank) => ({ rank, worldSize, count: 4, width: 1, op: 'sum', root: 0, ringOrder: [0, 1], ringChannels: 1, inPlace: false }),
        { inputElements: 4, outputElements: 4, inPlace: 'none' },
        seededRandom(seed),
      );
    const base = { algorithm: 'test', layout: 'test', tagPrefix: 0, pieceScale: 1, scratchBytes: 0 };
    const whole = (memory: 'input' | 'output') => ({ memory, offset: 0, bytes: 4 });
    // Each rank sends only once it has received: nobody goes first.
    const waiting: ScheduleOf = ({ rank }) => ({
      ...base,
      sends: [{ peer: 1 - rank, span: whole('output'), step: 0, channel: 0, after: { receive: 0 } }],
      receives: [{ peer: 1 - rank, span: whole('output'), step: 0, channel: 0 }],
      folds: [],
    });
    expect(() => run(waiting)).toThrow(ScheduleModelError);
    // Message 0 is the header alone that goes first on each link of the ring (withHeaderExchange).
    expect(() => run(waiting)).toThrow(/deadlock: rank 0 waits for message 1 from rank 1, which never comes/);
    // The same on rail 1: the link is named with its rail.
    const onRailOne: ScheduleOf = (input) => {
      const plain = waiting(input);
      return { ...plain, sends: plain.sends.map((send) => ({ ...send, rail: 1 })), receives: plain.receives.map((receive) => ({ ...receive, rail: 1 })) };
    };
    expect(() => run(onRailOne)).toThrow(/deadlock: rank 0 waits for message 0 from rank 1 rail 1, which never comes/);
    // Rank 0 sends on rail 1 what rank 1 receives on rail 0: two links, each with one side only.
    const crossedRails: ScheduleOf = ({ rank }) => ({
      ...base,
      sends: rank === 0 ? [{ peer: 1, span: whole('input'), step: 0, channel: 0, rail: 1, after: null }] : [],
      receives: rank === 1 ? [{ peer: 0, span: whole('output'), step: 0, channel: 0 }] : [],
      folds: [],
    });
    // (Rail 0 carries the header alone that opens each link of the ring, then rank 1 waits there for the data.)
    expect(() => run(crossedRails)).toThrow('rank 0 sends rank 1 1 messages, rank 1 receives 2');
    // Receiving into the memory a send is still reading.
    const overwriting: ScheduleOf = ({ rank }) => ({
      ...base,
      sends: [{ peer: 1 - rank, span: whole('output'), step: 0, channel: 0, after: null }],
      receives: [{ peer: 1 - rank, span: whole('output'), step: 0, channel: 0 }],
      folds: [],
    });
    expect(() => {
      for (let seed = 0; seed < 20; seed++) {
        runScheduleModel([overwriting, overwriting].map((write, rank) => write({ rank, worldSize: 2, count: 4, width: 1, op: null, root: null, ringOrder: [0, 1], ringChannels: 1, inPlace: false })), (rank) => ({ rank, worldSize: 2, count: 4, width: 1, op: null, root: null, ringOrder: [0, 1], ringChannels: 1, inPlace: false }), { inputElements: 4, outputElements: 4, inPlace: 'none' }, seededRandom(seed));
      }
    }).toThrow(/race: rank \d receive 0 writes output\[0, 4\) while its send of output\[0, 4\) to rank \d is in flight/);
    // A message of 4 bytes received as 2.
    const mismatched: ScheduleOf = ({ rank }) => ({
      ...base,
      sends: rank === 0 ? [{ peer: 1, span: whole('input'), step: 0, channel: 0, after: null }] : [],
      receives: rank === 1 ? [{ peer: 0, span: { memory: 'output', offset: 0, bytes: 2 }, step: 0, channel: 0 }] : [],
      folds: [],
    });
    expect(() => run(mismatched)).toThrow("rank 0's message 0 to rank 1 has 4 bytes, rank 1 receives 2");
    // Messages on different rails travel on different data links and may overtake each other: a
    // fold that waits for the rail-1 message alone reads the rail-0 one's span before it lands (a
    // '?' in the output) where the rail-1 message comes first, and is named as a race otherwise.
    const overtaking: ScheduleOf = ({ rank }) =>
      rank === 0
        ? {
            ...base,
            sends: [
              { peer: 1, span: { memory: 'input', offset: 0, bytes: 2 }, step: 0, channel: 0, rail: 0, after: null },
              { peer: 1, span: { memory: 'input', offset: 2, bytes: 2 }, step: 1, channel: 0, rail: 1, after: null },
            ],
            receives: [],
            folds: [],
          }
        : {
            ...base,
            scratchBytes: 4,
            sends: [],
            receives: [
              { peer: 0, span: { memory: 'scratch', offset: 0, bytes: 2 }, step: 0, channel: 0, rail: 0 },
              { peer: 0, span: { memory: 'scratch', offset: 2, bytes: 2 }, step: 1, channel: 0, rail: 1 },
            ],
            folds: [{ target: { memory: 'output', offset: 0, bytes: 2 }, sources: [{ memory: 'scratch', offset: 0, bytes: 2 }], after: [{ receive: 1 }], op: 'sum', divisor: 1 }],
          };
    const seen = new Set<string>();
    for (let seed = 0; seed < 40; seed++) {
      try {
        seen.add(run(overtaking, 2, seed).outputs[1]![0]!);
      } catch (error) {
        seen.add((error as Error).message);
      }
    }
    expect([...seen].sort()).toEqual(['?', 'race: rank 1 receive 0 writes scratch[0, 2) before fold 0, which reads it and does not wait for it, has run']);
  });
});

describe('a send of several producers (Producers, docs/protocol.md 9.6.1) in the model', () => {
  const base = { algorithm: 'test', layout: 'test', tagPrefix: 0, pieceScale: 1, scratchBytes: 4 };
  const bytes = (memory: 'input' | 'output' | 'scratch', offset: number, length: number) => ({ memory, offset, bytes: length });
  /** Rank 0 copies its input's halves into scratch (folds 0 and 1, each after `after[k]`) and sends scratch whole to rank 1 as the two of them produce it. */
  const twoParts = (after: [(Dependency | Producers)[], (Dependency | Producers)[]]): ScheduleOf => ({ rank }) =>
    rank === 0
      ? {
          ...base,
          sends: [{ peer: 1, span: bytes('scratch', 0, 4), step: 0, channel: 0, after: { parts: [{ fold: 0 }, { fold: 1 }], skip: 0 } }],
          receives: [],
          folds: [0, 1].map((half) => ({ target: bytes('scratch', 2 * half, 2), sources: [bytes('input', 2 * half, 2)], after: after[half]!, op: 'sum' as const, divisor: 1 })),
        }
      : { ...base, sends: [], receives: [{ peer: 0, span: bytes('output', 0, 4), step: 0, channel: 0 }], folds: [] };
  const run = (write: ScheduleOf, seed: number) => {
    const input = (rank: number): ScheduleInput => ({ rank, worldSize: 2, count: 4, width: 1, op: 'sum', root: 0, ringOrder: [0, 1], ringChannels: 1, inPlace: false });
    return runScheduleModel([0, 1].map((rank) => write(input(rank))), input, { inputElements: 4, outputElements: 4, inPlace: 'none' }, seededRandom(seed));
  };

  it('passes no part before its producer made it: the receiver gets exactly what the two folds wrote, in every order', () => {
    for (let seed = 0; seed < 40; seed++) expect(run(twoParts([[], []]), seed).outputs[1]).toEqual(['0@0', '0@1', '0@2', '0@3']);
  });

  it('passes the first producer\'s bytes before the second\'s exist, and never the first\'s before they do', () => {
    // The second half is made only once the send has landed (the first 2 of its 4 bytes, a part of
    // a larger producer): its first part goes, the second never does. (The send waits for folds, so
    // the ring's header alone goes first on the link: the data is its message 1.)
    const landed = { parts: [{ send: 0 }], skip: 0 };
    expect(() => run(twoParts([[], [landed]]), 1)).toThrow('deadlock: rank 0 never sends message 1 to rank 1: it waits for fold 1');
    // The first half made only once the send has landed: nothing goes, though the second half is there.
    expect(() => run(twoParts([[landed], []]), 1)).toThrow('deadlock: rank 0 never sends message 1 to rank 1: it waits for fold 0');
  });

  it('finds a write over a part already on its way, and a send whose producers hold fewer bytes than it sends', () => {
    // Fold 2 rewrites the first half once fold 0 made it, without waiting for the send: a race in some order.
    const rewriting: ScheduleOf = (input) => {
      const plain = twoParts([[], []])(input);
      return input.rank === 0 ? { ...plain, folds: [...plain.folds, { target: bytes('scratch', 0, 2), sources: [bytes('input', 2, 2)], after: [{ fold: 0 }], op: 'sum', divisor: 1 }] } : plain;
    };
    const seen = new Set<string>();
    for (let seed = 0; seed < 40; seed++) {
      try {
        seen.add(run(rewriting, seed).outputs[1]!.join(' '));
      } catch (error) {
        seen.add((error as Error).message);
      }
    }
    expect(seen).toContain('race: rank 0 fold 2 writes scratch[0, 2) while its send of scratch[0, 4) to rank 1 is in flight');
    const short: ScheduleOf = (input) => {
      const plain = twoParts([[], []])(input);
      return input.rank === 0 ? { ...plain, sends: [{ ...plain.sends[0]!, after: { parts: [{ fold: 0 }, { fold: 1 }], skip: 1 } }] } : plain;
    };
    expect(() => run(short, 1)).toThrow('rank 0 send 0 of 4 bytes waits for fold 0, fold 1 from byte 1, of 4 bytes in all');
    // Enough bytes, but from byte 2 the first part (fold 0's 2) holds none of them: refused, as the native decoder does.
    const leading: ScheduleOf = (input) => {
      const plain = twoParts([[], []])(input);
      return input.rank === 0 ? { ...plain, sends: [{ ...plain.sends[0]!, after: { parts: [{ fold: 0 }, { fold: 1 }, { fold: 1 }], skip: 2 } }] } : plain;
    };
    expect(() => run(leading, 1)).toThrow('rank 0 send 0 waits for fold 0 wholly before its bytes (from byte 2)');
  });
});

/**
 * For each rank, the ranks whose entering its schedule waits for: a receive carries what its
 * sender's send waited for, plus the sender; a send or fold what it waits for.
 */
function heardFrom(schedules: readonly Schedule[]): Set<number>[] {
  const worldSize = schedules.length;
  const memo = new Map<string, Set<number>>();
  const origins = (rank: number, dependency: Dependency | Producers | null): Set<number> => {
    if (dependency === null) return new Set([rank]);
    if ('parts' in dependency) return new Set([rank, ...dependency.parts.flatMap((part) => [...origins(rank, part)])]);
    const key = `${rank} ${JSON.stringify(dependency)}`;
    const known = memo.get(key);
    if (known !== undefined) return known;
    const schedule = schedules[rank]!;
    let found: Set<number>;
    if ('fold' in dependency) found = new Set([rank, ...schedule.folds[dependency.fold]!.after.flatMap((after) => [...origins(rank, after)])]);
    else if ('send' in dependency) found = new Set([rank, ...origins(rank, schedule.sends[dependency.send]!.after)]);
    else {
      const receive = schedule.receives[dependency.receive]!;
      const k = schedule.receives.slice(0, dependency.receive).filter((one) => one.peer === receive.peer).length;
      const sender = schedules[receive.peer]!;
      const send = sender.sends.filter((one) => one.peer === rank)[k]!;
      found = new Set([rank, ...origins(receive.peer, send.after), receive.peer]);
    }
    memo.set(key, found);
    return found;
  };
  return Array.from({ length: worldSize }, (_, rank) => new Set([rank, ...schedules[rank]!.receives.flatMap((_, receive) => [...origins(rank, { receive })])]));
}

describe('barriers', () => {
  it('every rank of a dissemination barrier hears, through some chain of its messages, from every rank, at worlds 1..33, header exchange or not; a round that did not wait would not', () => {
    for (let worldSize = 1; worldSize <= 33; worldSize++) {
      const input = (rank: number): ScheduleInput => ({ rank, worldSize, count: 0, width: 1, op: null, root: null, ringOrder: [], ringChannels: 1, inPlace: false });
      const plain = Array.from({ length: worldSize }, (_, rank) => disseminationBarrier(input(rank)));
      for (const heard of heardFrom(plain)) expect(heard.size, `${worldSize} ranks`).toBe(worldSize);
      const withHeaders = plain.map((_, rank) => withHeaderExchange((of) => plain[of]!, worldSize, rank));
      for (const heard of heardFrom(withHeaders)) expect(heard.size).toBe(worldSize);
      // Without the waits, each rank hears only from its ceil(log2 W) senders.
      const unchained = plain.map((schedule) => ({ ...schedule, sends: schedule.sends.map((send) => ({ ...send, after: null })) }));
      if (worldSize >= 4) for (const heard of heardFrom(unchained)) expect(heard.size).toBeLessThan(worldSize);
    }
  });
});

describe('stripes over rails (the native plane with GX1_P2P_RAILS > 1)', () => {
  it('cut a message into min(rails, its MiB units) stripes on unit boundaries, one at the least, covering it exactly', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 40 }), fc.integer({ min: 1, max: 64 }), fc.constantFrom(8, 1 << 20), (units, rails, unit) => {
        for (const bytes of [units * unit, Math.max(0, units * unit - 3)]) {
          const cuts = stripeCuts(bytes, rails, unit);
          expect(cuts[0]).toBe(0);
          expect(cuts.at(-1)).toBe(bytes);
          expect(cuts.length - 1).toBe(Math.max(1, Math.min(rails, Math.ceil(bytes / unit))));
          cuts.slice(1, -1).forEach((cut, stripe) => {
            expect(cut % unit).toBe(0);
            expect(cut).toBeGreaterThan(cuts[stripe]!);
          });
        }
      }),
    );
  });

  it('send stripe k on rail order[(channel + k) mod rails], each waiting for stripe k of its producer, in the message order of every link', () => {
    const MiB = 1 << 20;
    const message = { peer: 1, step: 0, channel: 1 };
    const schedule = {
      algorithm: 'test',
      layout: 'test',
      tagPrefix: 0,
      pieceScale: 1,
      scratchBytes: 0,
      receives: [{ ...message, span: { memory: 'output' as const, offset: 0, bytes: 3 * MiB + 5 } }],
      sends: [{ ...message, span: { memory: 'output' as const, offset: 0, bytes: 3 * MiB + 5 }, after: { receive: 0 } }],
      folds: [],
    };
    const striped = stripeOverRails(schedule, 3, [2, 0, 1]);
    expect(striped.receives.map(({ span, rail }) => [span.offset, span.bytes, rail])).toEqual([
      [0, MiB, 0],
      [MiB, MiB, 1],
      [2 * MiB, MiB + 5, 2],
    ]);
    expect(striped.sends.map(({ after, rail }) => [after, rail])).toEqual([
      [{ receive: 0 }, 0],
      [{ receive: 1 }, 1],
      [{ receive: 2 }, 2],
    ]);
    // docs/protocol.md 9.9's example: each stripe's header is labelled with its stripe, send and receive alike.
    for (const stripes of [striped.sends, striped.receives]) expect(stripes.map(messageLabel)).toEqual([0x1000, 0x41000, 0x81000]);
    expect(stripeOverRails(schedule, 1, null)).toBe(schedule);
    expect(() => stripeOverRails({ ...schedule, sends: [{ ...schedule.sends[0]!, span: { memory: 'output', offset: 0, bytes: MiB } }] }, 2, null)).toThrow(
      'schedule test: receive 0 (3145733 bytes) is a dependency of 1048576 bytes',
    );
  });
});
