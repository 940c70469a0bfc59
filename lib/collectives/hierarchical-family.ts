import type { ReduceOp } from '../protocol/reduce-op.js';
import type { TopologyGroups } from '../topology/topology-groups.js';
import { groupsText } from '../topology/topology-groups.js';
import { ringFold } from './ring-family.js';
import type { Dependency, MemoryName, Span } from './schedule/schedule.js';
import { elements } from './schedule/schedule.js';
import type { ScheduleIdentity } from './schedule/schedule-builder.js';
import type { WorldScheduleBuilder } from './schedule/world-schedule-builder.js';

/** Hierarchical messages carry tags under this prefix ("HI") on the JS plane. */
export const HIERARCHICAL_TAG_PREFIX = 0x4849;

/**
 * What the hierarchical algorithms (all-reduce, all-gather, reduce-scatter) share: the topology
 * groups (ranks on one host, or behind one switch), fast inside and slow between, and the lanes
 * that spread the traffic between groups over every member (a share of the tensor has one
 * "carrier" per group, member lane mod size, as NCCL's rail-aligned rings give each GPU its own
 * part of the inter-node traffic). The layout names the groups and the channels, so ranks
 * configured with different groups are named at the agreement instead of waiting on each other.
 */
export function hierarchicalIdentity(groups: TopologyGroups, channels: number): ScheduleIdentity {
  return { algorithm: 'hierarchical', layout: `hierarchical groups ${groupsText(groups)} channels ${channels}`, tagPrefix: HIERARCHICAL_TAG_PREFIX };
}

/** A job's groups as the algorithms walk them. */
export interface Hierarchy {
  readonly groups: TopologyGroups;
  /** Each rank's group index. */
  readonly groupOf: readonly number[];
  /** Each rank's position in its group. */
  readonly positionOf: readonly number[];
  /**
   * The ranks 0..W-1 cut into maximal runs of consecutive ranks of one group: a reduction folds in
   * rank order (the staged path's bits), so its partial result visits the runs in this order.
   * Groups of consecutive ranks ("0,1;2,3") have one run each.
   */
  readonly runs: readonly { readonly group: number; readonly ranks: readonly number[] }[];
}

/** The hierarchy of `input`'s groups (absent: one group of every rank). */
export function hierarchyOf(input: { readonly worldSize: number; readonly groups?: TopologyGroups | null }): Hierarchy {
  const { worldSize } = input;
  const groups = input.groups ?? [Array.from({ length: worldSize }, (_, rank) => rank)];
  const groupOf: number[] = [];
  const positionOf: number[] = [];
  groups.forEach((members, group) =>
    members.forEach((rank, position) => {
      groupOf[rank] = group;
      positionOf[rank] = position;
    }),
  );
  const runs: { group: number; ranks: number[] }[] = [];
  for (let rank = 0; rank < worldSize; rank++) {
    const last = runs.at(-1);
    if (last !== undefined && last.group === groupOf[rank]) last.ranks.push(rank);
    else runs.push({ group: groupOf[rank]!, ranks: [rank] });
  }
  return { groups, groupOf, positionOf, runs };
}

/** The member of `group` that carries lane `lane` of the traffic between groups. */
export function carrierOf(hierarchy: Hierarchy, group: number, lane: number): number {
  const members = hierarchy.groups[group]!;
  return members[lane % members.length]!;
}

/** Where a share's partial or final values are: the rank, its span there and what produces it. */
export interface Held {
  readonly rank: number;
  readonly span: Span;
  readonly after: Dependency | null;
}

/** One share of a reduction: the elements it covers in every rank's tensor, its lane, and the channel its messages are labelled with. */
export interface ReducedShare {
  readonly start: number;
  readonly count: number;
  readonly lane: number;
  readonly channel: number;
  /** Where the final fold writes at the rank that makes it. */
  readonly finalSpan: (rank: number) => Span;
  /** The rank that must make the final fold, where one must (the owner of a reduce-scatter shard); else the last run's carrier. */
  readonly finalRank?: number;
}

/**
 * Reduces every share in rank order, as the staged path does: inside each run the members send
 * their values of the share to the run's group carrier, which folds them onto the partial result
 * of the runs before (received from the previous run's carrier) in one fold, sources in rank
 * order, so the bits are the staged path's. The partial crosses between groups once per run
 * boundary; avg sums on the way and divides once, in the last fold. Returns where each share's
 * reduced values end.
 *
 * Transfers are listed phase by phase (every contribution, then each run's folds in turn) so that
 * on a link the messages of every share of one phase come before those of the next.
 */
export function reduceAlongRuns(world: WorldScheduleBuilder, hierarchy: Hierarchy, shares: readonly ReducedShare[], own: MemoryName, width: number, op: ReduceOp): Held[] {
  const { runs } = hierarchy;
  const worldSize = hierarchy.groupOf.length;
  const foldsAt = (share: ReducedShare, run: number) => {
    const last = run === runs.length - 1;
    const group = runs[run]!.group;
    if (last && share.finalRank !== undefined && hierarchy.groupOf[share.finalRank] === group) return share.finalRank;
    return carrierOf(hierarchy, group, share.lane);
  };
  const ownSpan = (share: ReducedShare) => elements(own, width, share);
  // The first run's only member, not the last run, starts its share's partial without a fold.
  const foldsFirst = runs.length === 1 || runs[0]!.ranks.length > 1;
  const contributions = shares.map((share) =>
    runs.map((run, index) => {
      if (index === 0 && !foldsFirst) return [];
      const at = foldsAt(share, index);
      return run.ranks.map((rank) => {
        if (rank === at) return { span: ownSpan(share), after: null };
        const slot = world.at(at).scratch(share.count * width);
        return { span: slot, after: world.transfer(rank, at, ownSpan(share), slot, null, share.channel) };
      });
    }),
  );
  let held: Held[] = shares.map((share) => ({ rank: runs[0]!.ranks[0]!, span: ownSpan(share), after: null }));
  runs.forEach((_, index) => {
    if (index === 0 && !foldsFirst) return;
    held = shares.map((share, which) => {
      const at = foldsAt(share, index);
      const sources = [...contributions[which]![index]!];
      if (index > 0) {
        const previous = held[which]!;
        const slot = world.at(at).scratch(share.count * width);
        sources.unshift({ span: slot, after: world.transfer(previous.rank, at, previous.span, slot, previous.after, share.channel) });
      }
      const last = index === runs.length - 1;
      const target = last ? share.finalSpan(at) : world.at(at).scratch(share.count * width);
      const { op: foldOp, divisor } = ringFold(op, last, worldSize);
      const after = sources.flatMap((source) => (source.after === null ? [] : [source.after]));
      const spans = sources.map((source) => source.span);
      const alreadyThere = spans.length === 1 && sameSpan(spans[0]!, target) && divisor === 1;
      return { rank: at, span: target, after: alreadyThere ? null : world.at(at).fold(target, spans, after, foldOp, divisor) };
    });
  });
  return held;
}

function sameSpan(first: Span, second: Span): boolean {
  return first.memory === second.memory && first.offset === second.offset && first.bytes === second.bytes;
}
