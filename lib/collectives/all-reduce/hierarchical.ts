import { carrierOf, type Held, type Hierarchy, hierarchicalIdentity, hierarchyOf, reduceAlongRuns } from '../hierarchical-family.js';
import { evenRanges } from '../peer-data.js';
import type { Schedule, ScheduleInput } from '../schedule/schedule.js';
import { elements } from '../schedule/schedule.js';
import { WorldScheduleBuilder } from '../schedule/world-schedule-builder.js';

/**
 * All-reduce over topology groups (GX1_TOPOLOGY_GROUPS: ranks of one host, say), crossing between
 * groups as little as the staged path's bits allow:
 *
 * - The tensor is cut into shares, one per lane (the largest group's size) and channel; in each
 *   group a share has one carrier, member lane mod size, so every member carries part of the
 *   traffic between groups.
 * - Reduce (`reduceAlongRuns`): each member sends its values of a share to its group's carrier;
 *   the carrier folds them, in rank order, onto the partial of the groups before, received from
 *   the previous group's carrier, and sends the new partial on. The last group's carrier makes the
 *   final fold into its result. With groups of consecutive ranks the partial crosses each group
 *   boundary once: T bytes leave a group where a flat ring sends 2(W-1)/W T over its links.
 * - Distribute: the final values go back along the other groups' carriers (a chain, each group
 *   receiving the share once, in the reverse of the order the reduction left them: each boundary
 *   the partial crossed one way, the result crosses the other), and each carrier sends them to
 *   the rest of its group.
 *
 * Results are the staged path's bits (rank-order folds), identical on every rank.
 */
/** The groups by the last run each has, latest first: the last fold's group, then back along the reduction. */
function groupsBack(hierarchy: Hierarchy): number[] {
  const lastRun = new Map<number, number>();
  hierarchy.runs.forEach((run, index) => lastRun.set(run.group, index));
  return [...lastRun].sort((a, b) => b[1] - a[1]).map(([group]) => group);
}

export function hierarchicalAllReduce(input: ScheduleInput): Schedule {
  const { rank, count, width, ringChannels, inPlace } = input;
  const hierarchy = hierarchyOf(input);
  const world = new WorldScheduleBuilder(input.worldSize, hierarchicalIdentity(hierarchy.groups, ringChannels));
  const lanes = Math.max(...hierarchy.groups.map((members) => members.length));
  const shares = evenRanges(0, count, lanes * ringChannels).map((range, index) => ({
    ...range,
    lane: index % lanes,
    channel: index,
    finalSpan: () => elements('output', width, range),
  }));
  const reduced = reduceAlongRuns(world, hierarchy, shares, inPlace ? 'output' : 'input', width, input.op ?? 'sum');
  // Back to every other group along a chain of its carriers, the reduction's way in reverse.
  const holders: Held[][] = reduced.map((final) => [final]);
  const back = groupsBack(hierarchy);
  for (const group of back.slice(1)) {
    shares.forEach((share, which) => {
      const from = holders[which]!.at(-1)!;
      const to = carrierOf(hierarchy, group, share.lane);
      const into = elements('output', width, share);
      holders[which]!.push({ rank: to, span: into, after: world.transfer(from.rank, to, from.span, into, from.after, share.channel) });
    });
  }
  // Inside each group, from its holder to every other member.
  shares.forEach((share, which) => {
    for (const holder of holders[which]!) {
      for (const member of hierarchy.groups[hierarchy.groupOf[holder.rank]!]!) {
        if (member !== holder.rank) world.transfer(holder.rank, member, holder.span, elements('output', width, share), holder.after, share.channel);
      }
    }
  });
  return world.build(rank);
}
