/**
 * A collective of the algorithm table as the schedule model runs it (rxccl/testing
 * `runScheduleModel`, `runConcurrentScheduleModel`): a case drawn by fast-check (a scheduled row,
 * its shape, ring, topology and rails), every rank's schedule of it, and the check that each
 * rank's output holds exactly the contributions the collective must deliver. Shared by
 * spec/collectives/schedules.spec.ts (one collective at a time) and
 * spec/collectives/concurrent-schedules.spec.ts (several at once on communicators).
 */
import fc from 'fast-check';
import { expect } from 'vitest';
import type { CollectiveName } from '../../lib/collectives/algorithm.js';
import { stripeOverRails } from '../../lib/collectives/schedule/rail-stripes.js';
import type { Schedule, ScheduleInput, ScheduleOf } from '../../lib/collectives/schedule/schedule.js';
import { ALGORITHMS } from '../../lib/collectives/select.js';
import type { ReduceOp } from '../../lib/protocol/reduce-op.js';
import { arbRingOrder, arbTopologyGroups, type ModelMemory } from '../../lib/testing/index.js';

/** Every (collective, algorithm) with a schedule, once (a schedule serving both planes is one). */
export const SCHEDULED = (Object.keys(ALGORITHMS) as CollectiveName[]).flatMap((collective) => {
  const seen = new Set<ScheduleOf>();
  return ALGORITHMS[collective].flatMap((row) => {
    if (row.schedule === undefined || seen.has(row.schedule)) return [];
    seen.add(row.schedule);
    return [{ collective, name: row.name, family: row.family, schedule: row.schedule }];
  });
});

const REDUCING = new Set<CollectiveName>(['allReduce', 'reduce', 'reduceScatter']);
const SHARDED = new Set<CollectiveName>(['reduceScatter', 'allToAll']);
const IN_PLACE: Partial<Record<CollectiveName, ModelMemory['inPlace']>> = {
  allReduce: 'same',
  broadcast: 'same',
  allGather: 'input is output slot',
  reduceScatter: 'output is input slot',
};

/** One scheduled collective on `worldSize` ranks, as drawn. */
export interface ScheduledCase {
  readonly worldSize: number;
  readonly scheduled: (typeof SCHEDULED)[number];
  /** Elements per rank (times the world for a sharded collective; none for a barrier). */
  readonly count: number;
  readonly width: number;
  readonly op: ReduceOp;
  readonly root: number;
  readonly order: number[];
  readonly channels: number;
  readonly inPlace: boolean;
  readonly groups: number[][];
  readonly rails: number;
  readonly railsReversed: boolean;
  readonly stripeUnit: number;
}

/** A case of any row of `rows` (default: every scheduled row) on `worldSize` ranks: counts 0..23, widths 1..8, every op, root, ring order, 1..3 channels, in place or not, 1..4 rails. */
export function arbScheduledCase(worldSize: number, rows: readonly (typeof SCHEDULED)[number][] = SCHEDULED): fc.Arbitrary<ScheduledCase> {
  return fc.record({
    groups: arbTopologyGroups(worldSize),
    worldSize: fc.constant(worldSize),
    scheduled: fc.constantFrom(...rows),
    count: fc.integer({ min: 0, max: 23 }),
    width: fc.constantFrom(1, 2, 4, 8),
    op: fc.constantFrom<ReduceOp>('sum', 'avg', 'max'),
    root: fc.integer({ min: 0, max: worldSize - 1 }),
    order: arbRingOrder(worldSize),
    channels: fc.integer({ min: 1, max: 3 }),
    inPlace: fc.boolean(),
    rails: fc.integer({ min: 1, max: 4 }),
    railsReversed: fc.boolean(),
    stripeUnit: fc.constantFrom(8, 32),
  });
}

/** The count a case's ranks each pass: none for a barrier, a whole number of shards for a sharded collective. */
function countOf({ scheduled: { collective }, count, worldSize }: ScheduledCase): number {
  return collective === 'barrier' ? 0 : SHARDED.has(collective) ? count * worldSize : count;
}

/** The result elements rank `rank` must hold, as symbols, folded in rank order. */
function expected(collective: CollectiveName, rank: number, worldSize: number, count: number, root: number, op: ReduceOp): string[] {
  const ranks = Array.from({ length: worldSize }, (_, r) => r);
  const fold = (element: number) => {
    const folded = ranks.map((r) => `${r}@${element}`).reduce((left, right) => `(${left}+${right})`);
    return op === 'avg' && worldSize > 1 ? `${folded}/${worldSize}` : folded;
  };
  const shard = count / worldSize;
  const indices = (length: number) => Array.from({ length }, (_, i) => i);
  switch (collective) {
    case 'barrier':
      return [];
    case 'allReduce':
      return indices(count).map(fold);
    case 'reduce':
      return rank === root ? indices(count).map(fold) : [];
    case 'reduceScatter':
      return indices(shard).map((j) => fold(rank * shard + j));
    case 'broadcast':
      return indices(count).map((i) => `${root}@${i}`);
    case 'allGather':
      return indices(count * worldSize).map((i) => `${Math.floor(i / count)}@${i % count}`);
    case 'gather':
      return rank === root ? indices(count * worldSize).map((i) => `${Math.floor(i / count)}@${i % count}`) : [];
    case 'allToAll':
      return indices(count).map((i) => `${Math.floor(i / shard)}@${rank * shard + (i % shard)}`);
    default:
      throw new Error(`${collective} has no schedule`);
  }
}

/** The case's wanted output at `rank`. */
function expectedAt(c: ScheduledCase, rank: number): string[] {
  return expected(c.scheduled.collective, rank, c.worldSize, countOf(c), c.root, c.op);
}

/**
 * Every rank's schedule of the case, cut into stripes over its rails (as the native plane runs
 * it), with what the model takes beside them: each rank's input, and one memory description.
 */
export function scheduledCollective(c: ScheduledCase): { schedules: Schedule[]; input: (rank: number) => ScheduleInput; memory: ModelMemory } {
  const { worldSize, scheduled, width, op, root, order, channels, groups, rails, railsReversed, stripeUnit } = c;
  const { collective, schedule } = scheduled;
  const count = countOf(c);
  const placement = c.inPlace ? (IN_PLACE[collective] ?? 'none') : 'none';
  const input = (rank: number): ScheduleInput => ({
    rank,
    worldSize,
    count,
    width,
    op: REDUCING.has(collective) ? op : null,
    root: collective === 'broadcast' || collective === 'gather' || collective === 'reduce' ? root : null,
    ringOrder: order,
    ringChannels: channels,
    inPlace: placement !== 'none',
    groups,
  });
  const railOrder = railsReversed ? Array.from({ length: rails }, (_, rail) => rails - 1 - rail) : null;
  const schedules = Array.from({ length: worldSize }, (_, rank) => stripeOverRails(schedule(input(rank)), rails, railOrder, stripeUnit));
  for (const message of schedules.flatMap((striped) => [...striped.sends, ...striped.receives])) expect(message.rail ?? 0).toBeLessThan(rails);
  // Ranks whose outputs differ in length (a root's) run with the widest: the model takes one
  // description of every rank's memory (only the input's length and the in-place form describe
  // them all alike), and each rank's result is read to its own length (`expectExactOutputs`).
  const outputElements = Math.max(...schedules.map((_, rank) => expectedAt(c, rank).length));
  return { schedules, input, memory: { inputElements: count, outputElements, inPlace: placement } };
}

/** Families whose reductions fold in an order of their own, not rank order. */
const REORDERING = new Set(['ring', 'tree']);

/** A ring's or a tree's fold: every rank's contribution exactly once, avg's division once, at the end. */
function expectReorderedFold(actual: string, wanted: string, worldSize: number, op: ReduceOp): void {
  const divisor = `/${worldSize}`;
  const divides = op === 'avg' && worldSize > 1;
  const strip = (symbol: string) => (divides ? symbol.slice(0, -divisor.length) : symbol);
  if (divides) expect(actual.endsWith(divisor) && actual.indexOf('/') === actual.length - divisor.length).toBe(true);
  const leaves = (symbol: string) => strip(symbol).replace(/[()]/g, '').split('+').sort();
  expect(leaves(actual)).toEqual(leaves(wanted));
}

/**
 * Element `element`'s fold of a tree all-reduce (recursive doubling's and Rabenseifner's alike,
 * docs/protocol.md 9.6.7): with P the largest power of two at most W and E = W - P, virtual rank
 * v < E holds (x(2v) + x(2v+1)), the others x(v + E); then one balanced tree over the virtual
 * ranks, each pair's lower half first; avg divides once, at the root.
 */
function doublingTree(element: number, worldSize: number, op: ReduceOp): string {
  const power = 1 << (31 - Math.clz32(worldSize));
  const extras = worldSize - power;
  const leaf = (v: number) => (v < extras ? `(${2 * v}@${element}+${2 * v + 1}@${element})` : `${v + extras}@${element}`);
  const tree = (lo: number, hi: number): string => (hi - lo === 1 ? leaf(lo) : `(${tree(lo, (lo + hi) / 2)}+${tree((lo + hi) / 2, hi)})`);
  return op === 'avg' && worldSize > 1 ? `${tree(0, power)}/${worldSize}` : tree(0, power);
}

/**
 * Every rank got exactly the contributions it needs: in rank order, or for a ring- or
 * tree-family reduction every rank's once (avg divided once, at the end), every rank of a ring or
 * tree all-reduce with the identical fold (a tree all-reduce's exactly `doublingTree`, whether
 * recursive doubling or Rabenseifner's computed it).
 */
export function expectExactOutputs(c: ScheduledCase, outputs: readonly string[][], what = ''): void {
  const { collective, family, name } = c.scheduled;
  outputs.forEach((result, rank) => {
    const wanted = expectedAt(c, rank);
    const actual = result.slice(0, wanted.length);
    if (!REORDERING.has(family) || !REDUCING.has(collective)) {
      expect(actual, `${what}${collective} ${name} rank ${rank}`).toEqual(wanted);
      return;
    }
    actual.forEach((symbol, element) => expectReorderedFold(symbol, wanted[element]!, c.worldSize, c.op));
    if (collective === 'allReduce') expect(actual).toEqual(outputs[0]!.slice(0, wanted.length));
    if (family === 'tree' && collective === 'allReduce') actual.forEach((symbol, element) => expect(symbol, `${name} element ${element}`).toBe(doublingTree(element, c.worldSize, c.op)));
  });
}
