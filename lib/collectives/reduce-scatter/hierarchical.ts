import { hierarchicalIdentity, hierarchyOf, reduceAlongRuns } from '../hierarchical-family.js';
import { evenRanges } from '../peer-data.js';
import type { Schedule, ScheduleInput } from '../schedule/schedule.js';
import { elements } from '../schedule/schedule.js';
import { WorldScheduleBuilder } from '../schedule/world-schedule-builder.js';

/**
 * Reduce-scatter over topology groups: each rank's shard (cut into channels) is reduced in rank
 * order along the groups as in the hierarchical all-reduce (`reduceAlongRuns`), its carrier in
 * the owner's group being the owner itself; where the last fold is not at the owner (the owner's
 * group is not the last run's), the last group's carrier sends the owner its shard.
 *
 * Results are the staged path's bits. The price of rank-order folds: every shard's partial
 * crosses each group boundary, so T bytes leave a group where a flat ring sends (W-1)/W T; the
 * hierarchy pays where links between groups are few and slow compared with the ring's W - 1 steps.
 */
export function hierarchicalReduceScatter(input: ScheduleInput): Schedule {
  const { rank, worldSize, count, width, ringChannels } = input;
  const hierarchy = hierarchyOf(input);
  const world = new WorldScheduleBuilder(worldSize, hierarchicalIdentity(hierarchy.groups, ringChannels));
  const shard = count / worldSize;
  const shares = Array.from({ length: worldSize }, (_, owner) =>
    evenRanges(0, shard, ringChannels).map((part, index) => ({
      channel: owner * ringChannels + index,
      start: owner * shard + part.start,
      count: part.count,
      lane: hierarchy.positionOf[owner]!,
      finalRank: owner,
      finalSpan: (at: number) => (at === owner ? elements('output', width, part) : world.at(at).scratch(part.count * width)),
      part,
    })),
  ).flat();
  const reduced = reduceAlongRuns(world, hierarchy, shares, 'input', width, input.op ?? 'sum');
  shares.forEach((share, which) => {
    const final = reduced[which]!;
    if (final.rank !== share.finalRank) world.transfer(final.rank, share.finalRank, final.span, elements('output', width, share.part), final.after, share.channel);
  });
  return world.build(rank);
}
