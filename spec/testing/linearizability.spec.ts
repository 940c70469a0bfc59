/**
 * checkLinearizable: examples a person can check by eye, and a property against a brute-force
 * reference (every order of every subset of the unknown operations) on small drawn histories.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkLinearizable, type HistoryEvent, type HistoryOperation, operationsOf, type SequentialModel, stateKey } from '../../lib/testing/index.js';

/** A register holding a number: write(v) sets it, read() returns it. */
const register: SequentialModel<number> = {
  initial: 0,
  step: (state, operation) => {
    if (operation.f === 'write') return operation.input as number;
    return !operation.known || operation.output === state ? state : undefined;
  },
};

/** A history from lines `invoke 0 write 1`, `ok 0 write`, `ok 1 read 1`, `info 0 write`. */
function history(...lines: string[]): HistoryEvent[] {
  const open = new Map<number, number>();
  let operations = 0;
  return lines.map((line, index) => {
    const [type, rankText, f, valueText] = line.split(' ') as ['invoke' | 'ok' | 'info', string, string, string | undefined];
    const rank = Number(rankText);
    const value = valueText === undefined ? undefined : Number(valueText);
    if (type === 'invoke') open.set(rank, operations++);
    const operation = open.get(rank)!;
    return { index, operation, type, rank, generation: 0, f, value: type === 'info' ? undefined : value, timeMs: index };
  });
}

describe('checkLinearizable', () => {
  it('a sequential history the model explains is linearizable', () => {
    const verdict = checkLinearizable(history('invoke 0 write 1', 'ok 0 write', 'invoke 1 read', 'ok 1 read 1'), register);
    expect(verdict).toMatchObject({ linearizable: true, text: 'linearizable: 2 operations in one order the model explains' });
  });

  it('a read overlapping a write may see either value', () => {
    for (const seen of [0, 1]) {
      expect(checkLinearizable(history('invoke 0 write 1', 'invoke 1 read', `ok 1 read ${seen}`, 'ok 0 write'), register).linearizable).toBe(true);
    }
  });

  it('a stale read after the write returned is not, and the text says which operations cannot go next', () => {
    const verdict = checkLinearizable(history('invoke 0 write 1', 'ok 0 write', 'invoke 1 read', 'ok 1 read 0'), register);
    expect(verdict).toMatchObject({ linearizable: false, text: 'not linearizable: after rank 0 write(1) -> ok, none of rank 1 read() -> 0 can take effect' });
  });

  it('an operation of unknown outcome may have taken effect, or not, at any moment after its invoke', () => {
    for (const seen of [0, 1]) expect(checkLinearizable(history('invoke 0 write 1', 'info 0 write', 'invoke 1 read', `ok 1 read ${seen}`), register).linearizable).toBe(true);
    // But not before its invoke.
    expect(checkLinearizable(history('invoke 1 read', 'ok 1 read 1', 'invoke 0 write 1', 'info 0 write'), register).linearizable).toBe(false);
  });

  it("the default key tells a Map's states apart (two puts, either order), and asks for a key where it cannot see a state", () => {
    const store: SequentialModel<Map<string, number>> = {
      initial: new Map(),
      step: (state, op) => {
        if (op.f === 'put') return new Map(state).set(...(op.input as [string, number]));
        return !op.known || (state.get(op.input as string) ?? 0) === op.output ? state : undefined;
      },
    };
    const events: HistoryEvent[] = [
      { index: 0, operation: 0, type: 'invoke', rank: 0, generation: 0, f: 'put', value: ['x', 1], timeMs: 0 },
      { index: 1, operation: 1, type: 'invoke', rank: 1, generation: 0, f: 'put', value: ['x', 2], timeMs: 0 },
      { index: 2, operation: 0, type: 'ok', rank: 0, generation: 0, f: 'put', value: undefined, timeMs: 0 },
      { index: 3, operation: 1, type: 'ok', rank: 1, generation: 0, f: 'put', value: undefined, timeMs: 0 },
      { index: 4, operation: 2, type: 'invoke', rank: 1, generation: 0, f: 'get', value: 'x', timeMs: 0 },
      { index: 5, operation: 2, type: 'ok', rank: 1, generation: 0, f: 'get', value: 1, timeMs: 0 },
    ];
    expect(checkLinearizable(events, store).linearizable).toBe(true);
    expect(stateKey(new Map<string, unknown>([['b', 1n], ['a', Float32Array.of(0.5)]]))).toBe(stateKey(new Map<string, unknown>([['a', Float32Array.of(0.5)], ['b', 1n]])));
    expect(stateKey(new Set([1, 2]))).not.toBe(stateKey(new Set([1, 3])));
    // What JSON would write alike stays apart.
    const keys = [NaN, null, Infinity, -Infinity, 0, -0, '1n', 1n, [], [undefined], Float32Array.of(NaN), Float32Array.of(0), new DataView(Uint8Array.of(1).buffer), new DataView(Uint8Array.of(2).buffer)].map(stateKey);
    expect(new Set(keys).size).toBe(keys.length);
    class Account {
      constructor(readonly balance = 0) {}
    }
    expect(() => checkLinearizable(events, { initial: new Account(), step: (state) => state })).toThrow(
      'checkLinearizable: a model state holds a Account, whose contents the default key cannot see; give the model a key(state)',
    );
  });

  it('agrees with a brute-force search on drawn histories of up to 6 operations', () => {
    fc.assert(
      fc.property(arbHistory, (events) => {
        expect(checkLinearizable(events, register).linearizable).toBe(bruteForce(operationsOf(events), register));
      }),
      { numRuns: 400 },
    );
  });
});

/**
 * Up to 6 operations on 3 ranks, each rank's one after another: writes of 1..2 and reads that
 * return 0..2, some of unknown outcome, their invokes and returns interleaved in any order.
 */
const arbHistory = fc
  .array(fc.record({ rank: fc.integer({ min: 0, max: 2 }), write: fc.boolean(), value: fc.integer({ min: 0, max: 2 }), known: fc.boolean() }), { maxLength: 6 })
  .chain((operations) => fc.shuffledSubarray(operations.flatMap((_, index) => [index, index]), { minLength: operations.length * 2, maxLength: operations.length * 2 }).map((order) => ({ operations, order })))
  .map(({ operations, order }) => {
    // The first time an operation's number comes up it is invoked, the second time it ends; a
    // rank's next operation waits for its last to end (a rank does one thing at a time).
    const started = new Set<number>();
    const rankBusyUntil = new Map<number, number>();
    const events: HistoryEvent[] = [];
    const pending = [...order];
    while (pending.length > 0) {
      const at = pending.findIndex((index) => started.has(index) || rankBusyUntil.get(operations[index]!.rank) === undefined);
      const [index] = pending.splice(at === -1 ? 0 : at, 1) as [number];
      const { rank, write, value, known } = operations[index]!;
      const f = write ? 'write' : 'read';
      if (!started.has(index)) {
        started.add(index);
        rankBusyUntil.set(rank, index);
        events.push({ index: events.length, operation: index, type: 'invoke', rank, generation: 0, f, value: write ? value : undefined, timeMs: events.length });
      } else {
        rankBusyUntil.delete(rank);
        events.push({ index: events.length, operation: index, type: known ? 'ok' : 'info', rank, generation: 0, f, value: known && !write ? value : undefined, timeMs: events.length });
      }
    }
    return events;
  });

/** Every subset of the unknown operations, every order that keeps real time: does the model explain one? */
function bruteForce<S>(operations: readonly HistoryOperation[], model: SequentialModel<S>): boolean {
  const unknown = operations.filter((operation) => !operation.known);
  for (let mask = 0; mask < 1 << unknown.length; mask++) {
    const chosen = operations.filter((operation) => operation.known || (mask & (1 << unknown.indexOf(operation))) !== 0);
    if (permutations(chosen).some((order) => keepsRealTime(order) && explains(order, model))) return true;
  }
  return false;
}

/** No operation is ordered before one that returned before it was invoked. */
function keepsRealTime(order: readonly HistoryOperation[]): boolean {
  return order.every((operation, i) => order.slice(i + 1).every((after) => after.returnedAt === null || after.returnedAt > operation.invokedAt));
}

function explains<S>(order: readonly HistoryOperation[], model: SequentialModel<S>): boolean {
  let state: S | undefined = model.initial;
  for (const operation of order) {
    state = model.step(state, operation);
    if (state === undefined) return false;
  }
  return true;
}

function permutations<T>(items: readonly T[]): T[][] {
  if (items.length <= 1) return [[...items]];
  return items.flatMap((item, index) => permutations([...items.slice(0, index), ...items.slice(index + 1)]).map((rest) => [item, ...rest]));
}
