/**
 * A linearizability checker over a recorded history (Wing & Gong's search with Lowe's memo, as
 * Knossos and Porcupine run it): is there one order of the operations, each taking effect at a
 * moment between its invoke and its return, that the user's sequential model explains? An
 * operation whose outcome is unknown (`info`) may take effect at any moment after its invoke, or
 * never. The search is exponential at worst; the memo (operations done, model state) keeps the
 * histories of a property test (tens of operations) to milliseconds.
 */
import { ConfigurationError } from '../errors.js';
import type { HistoryEvent } from './history.js';

/** One operation of a history, its invoke and completion joined. */
export interface HistoryOperation {
  readonly operation: number;
  readonly rank: number;
  readonly generation: number;
  readonly f: string;
  readonly input: unknown;
  /** The output of an operation that returned (`known`); absent where the outcome is unknown. */
  readonly output?: unknown;
  readonly known: boolean;
  /** History indices of its invoke and its `ok` (null: it never returned, an `info`). */
  readonly invokedAt: number;
  readonly returnedAt: number | null;
}

/**
 * The object's sequential specification: `step(state, operation)` is the state after
 * `operation`, or undefined where the operation cannot happen in `state` (a read whose output the
 * state does not hold). For an operation of unknown outcome, `operation.known` is false and its
 * output is absent: step it as it would have happened. `step` returns a new state and never
 * changes the one it is given: the search comes back to it.
 */
export interface SequentialModel<S> {
  readonly initial: S;
  step(state: S, operation: HistoryOperation): S | undefined;
  /**
   * A key equal for equal states, and only for them. The default reads numbers, strings,
   * bigints, arrays, typed arrays, plain objects, Maps and Sets; a state of another class needs
   * its own key.
   */
  key?(state: S): string;
}

/** What `checkLinearizable` found: an order of the history the model explains, or where every order fails. `text` says it for people. */
export type LinearizabilityVerdict =
  | { readonly linearizable: true; readonly order: readonly HistoryOperation[]; readonly text: string }
  | {
      readonly linearizable: false;
      /** The longest order the model explains. */
      readonly longest: readonly HistoryOperation[];
      /** The operations that could go next after it, none of which the model allows. */
      readonly blocked: readonly HistoryOperation[];
      readonly text: string;
    };

/** Joins each invoke with its completion (the history of `simulateJob`'s result). */
export function operationsOf(history: readonly HistoryEvent[]): HistoryOperation[] {
  const invokes = new Map<number, HistoryEvent>();
  const operations: HistoryOperation[] = [];
  for (const event of history) {
    if (event.type === 'invoke') {
      invokes.set(event.operation, event);
      continue;
    }
    const invoke = invokes.get(event.operation);
    if (invoke === undefined) throw new ConfigurationError(`history event ${event.index} completes operation ${event.operation}, which was never invoked`);
    invokes.delete(event.operation);
    const { operation, rank, generation, f } = invoke;
    const known = event.type === 'ok';
    operations.push({ operation, rank, generation, f, input: invoke.value, ...(known ? { output: event.value } : {}), known, invokedAt: invoke.index, returnedAt: known ? event.index : null });
  }
  // An invoke never completed (a history cut short): unknown outcome, as an info.
  for (const { operation, rank, generation, f, value, index } of invokes.values()) {
    operations.push({ operation, rank, generation, f, input: value, known: false, invokedAt: index, returnedAt: null });
  }
  return operations.sort((a, b) => a.invokedAt - b.invokedAt);
}

/** `rank 1 read() -> 3`, `rank 0 write(3) -> ok` (no output), `rank 0 write(3) -> ?` (unknown outcome). */
export function describeOperation(operation: HistoryOperation): string {
  const input = operation.input === undefined ? '' : show(operation.input);
  return `rank ${operation.rank} ${operation.f}(${input}) -> ${!operation.known ? '?' : operation.output === undefined ? 'ok' : show(operation.output)}`;
}

/** Checks `history` against `model`; the verdict's text names what cannot be ordered. */
export function checkLinearizable<S>(history: readonly HistoryEvent[], model: SequentialModel<S>): LinearizabilityVerdict {
  const operations = operationsOf(history);
  const keyOf = model.key ?? stateKey;
  const bits = operations.map((_, index) => 1n << BigInt(index));
  const mustDo = operations.reduce((mask, operation, index) => (operation.known ? mask | bits[index]! : mask), 0n);
  const seen = new Set<string>();
  const order: HistoryOperation[] = [];
  let longest: HistoryOperation[] = [];
  let blocked: HistoryOperation[] = [];

  const search = (done: bigint, state: S): boolean => {
    if ((done & mustDo) === mustDo) return true;
    const pending = bits.flatMap((bit, index) => ((done & bit) === 0n ? [index] : []));
    // Only an operation invoked before every pending one returned may go next.
    const firstReturn = Math.min(...pending.map((index) => operations[index]!.returnedAt ?? Infinity));
    const candidates = pending.filter((index) => operations[index]!.invokedAt < firstReturn);
    if (order.length > longest.length || order.length === 0) {
      longest = [...order];
      blocked = candidates.map((index) => operations[index]!);
    }
    for (const index of candidates) {
      const next = model.step(state, operations[index]!);
      if (next === undefined) continue;
      const reached = done | bits[index]!;
      const key = `${reached.toString(36)}|${keyOf(next)}`;
      if (seen.has(key)) continue;
      seen.add(key);
      order.push(operations[index]!);
      if (search(reached, next)) return true;
      order.pop();
    }
    return false;
  };

  if (search(0n, model.initial)) return { linearizable: true, order, text: `linearizable: ${operations.length} operations in one order the model explains` };
  const after = longest.length === 0 ? 'from the initial state' : `after ${longest.map(describeOperation).join(', ')}`;
  return {
    linearizable: false,
    longest,
    blocked,
    text: `not linearizable: ${after}, none of ${blocked.map(describeOperation).join(', ')} can take effect`,
  };
}

/** A key that tells states apart by their contents (see `SequentialModel.key`). */
export function stateKey(state: unknown): string {
  if (state === null || typeof state !== 'object') {
    if (typeof state === 'bigint') return `${state}n`;
    // NaN, Infinity and -0 apart (JSON writes them all as null or 0); strings are quoted.
    if (typeof state === 'number') return Object.is(state, -0) ? '-0' : String(state);
    if (typeof state === 'function' || typeof state === 'symbol') throw new ConfigurationError(`checkLinearizable: a model state holds a ${typeof state}; give the model a key(state)`);
    return state === undefined ? 'undefined' : JSON.stringify(state);
  }
  // Array.from: holes read as undefined, so [,] and [] differ.
  if (Array.isArray(state)) return `[${Array.from(state, stateKey).join(',')}]`;
  if (state instanceof DataView) return `DataView[${Buffer.from(state.buffer, state.byteOffset, state.byteLength).toString('hex')}]`;
  if (ArrayBuffer.isView(state)) return `${state.constructor.name}[${Array.from(state as unknown as ArrayLike<unknown>, stateKey).join(',')}]`;
  if (state instanceof Map) return `Map{${[...state].map(([key, value]) => `${stateKey(key)}:${stateKey(value)}`).sort().join(',')}}`;
  if (state instanceof Set) return `Set{${[...state].map(stateKey).sort().join(',')}}`;
  const prototype = Object.getPrototypeOf(state) as unknown;
  if (prototype !== Object.prototype && prototype !== null) {
    throw new ConfigurationError(`checkLinearizable: a model state holds a ${state.constructor.name}, whose contents the default key cannot see; give the model a key(state)`);
  }
  return `{${Object.keys(state).sort().map((key) => `${JSON.stringify(key)}:${stateKey((state as Record<string, unknown>)[key])}`).join(',')}}`;
}

function show(value: unknown): string {
  if (typeof value === 'bigint') return `${value}n`;
  if (ArrayBuffer.isView(value)) return `[${Array.from(value as unknown as ArrayLike<unknown>).join(', ')}]`;
  return JSON.stringify(value) ?? String(value);
}
