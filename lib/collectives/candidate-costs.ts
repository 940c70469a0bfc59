import { ConfigurationError } from '../errors.js';
import type { CollectiveTopology } from '../topology/collective-topology.js';
import { groupsText, type TopologyGroups } from '../topology/topology-groups.js';
import type { CollectiveName } from './algorithm.js';
import { estimateOf, type LinkFacts, plannedSchedules, shapeCost, type ShapeCost } from './choice-cost.js';
import type { ScheduleInput, ScheduleOf } from './schedule/schedule.js';

/** What of a row the model prices: its schedule (a staged row has none). */
export interface PricedRow {
  readonly name: string;
  readonly plane: 'native' | 'js' | 'coordinator';
  readonly family: string;
  readonly schedule?: ScheduleOf;
  readonly rotated?: true;
}

/** What of a call's situation the model weighs (the `Situation` of ./select.ts has it all). */
export interface PricedSituation {
  readonly worldSize: number;
  readonly bytes: number;
  readonly ranksShareHost: boolean;
  readonly groups: TopologyGroups | null;
  readonly topology: CollectiveTopology | null;
  readonly ringOrder: readonly number[];
  readonly tuning: { readonly ringChannels: number };
}

/** Collectives whose schedules take a root: the model writes them for root 0. */
const ROOTED: ReadonlySet<CollectiveName> = new Set(['broadcast', 'reduce', 'gather']);

/**
 * The size the shapes are reckoned at: divisible by any world and every channel count, more
 * elements than any schedule has shares (so no share is empty). A barrier moves no bytes.
 */
export function referenceBytes(collective: CollectiveName, worldSize: number, channels: number): number {
  return collective === 'barrier' ? 0 : worldSize * 64 * channels * 1024;
}

/**
 * Every link costs the same and the ring is the ranks in order: no topology, no groups (one host,
 * or a host each), so a rotated row's rank 0 stands for every rank.
 */
function everyLinkAlike({ topology, groups, ringOrder }: PricedSituation): boolean {
  return topology === null && groups === null && ringOrder.every((rank, position) => rank === position);
}

/**
 * A row's shape cost: its schedule's on its plane, the agreement's headers alone counted as
 * messages (`plannedSchedules`); null where the model cannot price it (a link missing, a schedule
 * the job's tags cannot number, a staged row).
 */
function priced(collective: CollectiveName, row: PricedRow, situation: PricedSituation): ShapeCost | null {
  if (row.plane === 'coordinator' || row.schedule === undefined) return null;
  const { worldSize, ranksShareHost, groups, topology, ringOrder, tuning } = situation;
  const facts: LinkFacts = { worldSize, plane: row.plane, topology, ranksShareHost, groups };
  const bytes = referenceBytes(collective, worldSize, tuning.ringChannels);
  const input: Omit<ScheduleInput, 'rank'> = {
    worldSize,
    count: bytes,
    width: 1,
    op: 'sum',
    root: ROOTED.has(collective) ? 0 : null,
    ringOrder,
    ringChannels: tuning.ringChannels,
    inPlace: false,
    ...(groups === null ? {} : { groups }),
  };
  try {
    return shapeCost(plannedSchedules(row.schedule, input, row.plane), facts, bytes, row.rotated === true && everyLinkAlike(situation));
  } catch (error) {
    // More messages on a link than its labels can number: not an algorithm for this job. Nothing
    // else is caught: a rank that dropped a row for a reason of its own (its stack, say) would
    // choose apart from the others.
    if (error instanceof ConfigurationError) return null;
    throw error;
  }
}

/** Small numbers for the objects a situation shares between calls (the table's rows, a topology). */
const identities = new WeakMap<object, number>();
let identified = 0;
function identity(of: object | null): number {
  if (of === null) return 0;
  let known = identities.get(of);
  if (known === undefined) identities.set(of, (known = ++identified));
  return known;
}

/** Not priced yet. */
const UNPRICED = undefined;

/**
 * The shape costs of a collective's rows (the table's list) on one plane, by situation, each
 * priced the first time a call asks (a row that never fits is never priced): a session prices
 * each shape once, then each call only multiplies. Keyed by value, so ranks of one process (tests)
 * share them.
 */
const remembered = new Map<string, (ShapeCost | null | typeof UNPRICED)[]>();
const REMEMBERED_SHAPES = 1024;
let lastPriced: {
  readonly rows: readonly PricedRow[];
  readonly plane: string;
  readonly worldSize: number;
  readonly channels: number;
  readonly ranksShareHost: boolean;
  readonly groups: TopologyGroups | null;
  readonly topology: CollectiveTopology | null;
  readonly ringOrder: readonly number[];
  readonly costs: (ShapeCost | null | typeof UNPRICED)[];
} | null = null;

function costsOf(collective: CollectiveName, rows: readonly PricedRow[], plane: 'native' | 'js', situation: PricedSituation): (ShapeCost | null | typeof UNPRICED)[] {
  const { worldSize, ranksShareHost, groups, topology, ringOrder, tuning } = situation;
  const last = lastPriced;
  // Most calls repeat the last call's shape: the same objects, nothing to look up.
  if (
    last !== null &&
    last.rows === rows &&
    last.plane === plane &&
    last.worldSize === worldSize &&
    last.channels === tuning.ringChannels &&
    last.ranksShareHost === ranksShareHost &&
    last.groups === groups &&
    last.topology === topology &&
    last.ringOrder === ringOrder
  ) {
    return last.costs;
  }
  const key = `${collective} ${identity(rows)} ${plane} ${worldSize} ${tuning.ringChannels} ${ranksShareHost} ${groups === null ? '-' : groupsText(groups)} ${identity(topology)} ${ringOrder.join(',')}`;
  let costs = remembered.get(key);
  if (costs === undefined) {
    if (remembered.size >= REMEMBERED_SHAPES) remembered.clear();
    remembered.set(key, (costs = rows.map(() => UNPRICED)));
  }
  lastPriced = { rows, plane, worldSize, channels: tuning.ringChannels, ranksShareHost, groups, topology, ringOrder, costs };
  return costs;
}

/** The shape cost of `rows[index]` on `plane` (null where the model cannot price it); `estimateOf(cost, bytes)` is a call's estimate. */
export function shapeCostOf(collective: CollectiveName, rows: readonly PricedRow[], index: number, plane: 'native' | 'js', situation: PricedSituation): ShapeCost | null {
  const costs = costsOf(collective, rows, plane, situation);
  let cost = costs[index];
  if (cost === UNPRICED) costs[index] = cost = priced(collective, rows[index]!, situation);
  return cost;
}

/** The model's estimate (ns) of one call of `situation.bytes` by `row`, one of `rows`; null where it has none. */
export function rowEstimate(collective: CollectiveName, rows: readonly PricedRow[], row: PricedRow, situation: PricedSituation): number | null {
  const index = rows.indexOf(row);
  if (row.plane === 'coordinator' || index === -1) return null;
  const cost = shapeCostOf(collective, rows, index, row.plane, situation);
  return cost === null ? null : estimateOf(cost, situation.bytes);
}
