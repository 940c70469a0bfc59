/**
 * A world and what each of its ranks brings, drawn together so that fast-check shrinks the world
 * itself. A world size drawn first and the ranks' data chained from it (`fc.integer().chain(...)`)
 * does not shrink: fast-check shrinks a chain's source only by drawing the chained data afresh, which
 * for a smaller world is other data that usually passes, and once it has shrunk the chained data it
 * never returns to the source. Nor does a plain array of the ranks' values shrink fully: fast-check
 * shortens an array from its front, and removes an item further in only while the items after it
 * still number minLength. Here each rank is a slot that may be empty, and an empty slot is no rank:
 * a slot shrinks to empty first, so any one rank can go while the others keep their values, and a
 * counterexample comes back in the smallest world that still fails.
 */
import fc from 'fast-check';
import { ConfigurationError } from '../../errors.js';

/** An empty slot: a rank shrunk away (or drawn absent, one slot in SLOTS_PER_EMPTY_SLOT). */
const NO_RANK: unique symbol = Symbol('no rank');
const SLOTS_PER_EMPTY_SLOT = 10;

/** The bounds of the world size `arbWorld` draws. */
export interface ArbWorldOptions {
  /** Fewest ranks (default 1). */
  readonly minWorldSize?: number;
  /** Most ranks (default 8). */
  readonly maxWorldSize?: number;
}

/** A drawn world: its size, and rank r's drawn value at `ranks[r]`. */
export interface DrawnWorld<T> {
  readonly worldSize: number;
  readonly ranks: readonly T[];
}

/**
 * A world of `minWorldSize..maxWorldSize` ranks, each with a value of `perRank`. Whatever names a
 * rank (a vote, a kill, a batch size) belongs in that rank's value, so that it goes when the rank goes.
 */
export function arbWorld<T>(perRank: fc.Arbitrary<T>, options: ArbWorldOptions = {}): fc.Arbitrary<DrawnWorld<T>> {
  const minWorldSize = options.minWorldSize ?? 1;
  const maxWorldSize = options.maxWorldSize ?? 8;
  if (!Number.isSafeInteger(minWorldSize) || minWorldSize < 1 || !Number.isSafeInteger(maxWorldSize) || maxWorldSize < minWorldSize) {
    throw new ConfigurationError(`arbWorld: minWorldSize ${String(minWorldSize)} and maxWorldSize ${String(maxWorldSize)} must be whole numbers with 1 <= minWorldSize <= maxWorldSize`);
  }
  return fc
    .array(fc.option(perRank, { nil: NO_RANK, freq: SLOTS_PER_EMPTY_SLOT }), { minLength: minWorldSize, maxLength: maxWorldSize })
    .map((slots) => slots.filter((slot): slot is T => slot !== NO_RANK))
    .filter((ranks) => ranks.length >= minWorldSize)
    .map((ranks) => ({ worldSize: ranks.length, ranks }));
}
