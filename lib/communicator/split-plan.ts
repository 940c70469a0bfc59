import { ConfigurationError } from '../errors.js';

/** What each rank says in a split (`session.split`). */
export interface SplitOptions {
  /**
   * The communicator this rank joins: ranks with the same color form one; null joins none (the
   * call still takes part, and returns null). An integer 0..2^31-1.
   */
  readonly color: number | null;
  /** Orders the new communicator's ranks (then the old rank breaks ties); default 0. An integer -2^31..2^31-1. */
  readonly key?: number;
}

/** The layout text of a split's exchange: every rank's agreement names it (docs/protocol.md 13.4). */
export const SPLIT_LAYOUT = 'split';

/** The largest color (MPI's colors are non-negative ints). */
const MAX_COLOR = 2 ** 31 - 1;

/** Checks a split's options; returns them as the exchange carries them (color -1 for none). */
export function splitEntry(options: SplitOptions): { readonly color: number; readonly key: number } {
  if (options === null || typeof options !== 'object') throw new ConfigurationError(`split takes { color, key }, got ${String(options)}`);
  const { color, key = 0 } = options;
  if (color !== null && !(Number.isInteger(color) && color >= 0 && color <= MAX_COLOR)) {
    throw new ConfigurationError(`split color ${String(color)} must be an integer 0..${MAX_COLOR}, or null to join no communicator`);
  }
  if (!(Number.isInteger(key) && key >= -(2 ** 31) && key <= MAX_COLOR)) {
    throw new ConfigurationError(`split key ${String(key)} must be an integer -2^31..2^31-1`);
  }
  return { color: color ?? -1, key };
}

/**
 * The ranks of the communicator `rank` joins, in their new order (by key, then by old rank), from
 * every rank's entry; null for a rank that joins none.
 */
export function splitMembers(entries: readonly { readonly color: number; readonly key: number }[], rank: number): number[] | null {
  const { color } = entries[rank]!;
  if (color < 0) return null;
  return entries
    .flatMap((entry, old) => (entry.color === color ? [{ old, key: entry.key }] : []))
    .sort((a, b) => a.key - b.key || a.old - b.old)
    .map(({ old }) => old);
}

/** Checks `session.group(ranks)`: distinct ranks of the session, this rank among them. */
export function groupMembers(ranks: readonly number[], rank: number, worldSize: number): number[] {
  if (!Array.isArray(ranks) || ranks.length === 0) throw new ConfigurationError(`group takes a non-empty array of ranks, got ${String(ranks)}`);
  const seen = new Set<number>();
  for (const member of ranks) {
    if (!(Number.isInteger(member) && member >= 0 && member < worldSize)) throw new ConfigurationError(`group rank ${String(member)} is outside world size ${worldSize}`);
    if (seen.has(member)) throw new ConfigurationError(`group lists rank ${member} twice`);
    seen.add(member);
  }
  if (!seen.has(rank)) throw new ConfigurationError(`rank ${rank} called group([${ranks.join(',')}]) but is not in it: only the ranks listed call it`);
  return [...ranks];
}
