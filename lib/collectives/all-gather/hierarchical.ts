import { carrierOf, hierarchicalIdentity, hierarchyOf } from '../hierarchical-family.js';
import { evenRanges } from '../peer-data.js';
import type { Dependency, Schedule, ScheduleInput } from '../schedule/schedule.js';
import { elements } from '../schedule/schedule.js';
import { WorldScheduleBuilder } from '../schedule/world-schedule-builder.js';

/**
 * All-gather over topology groups: each rank sends its block (cut into channels) to the other
 * members of its group and, once, to one member of every other group (the member at its own
 * position, mod that group's size: member i of each group talks to member i of the others, so
 * every member carries part of the traffic between groups), which passes it on inside its group.
 * Each block crosses into each other group once.
 */
export function hierarchicalAllGather(input: ScheduleInput): Schedule {
  const { rank, worldSize, count, width, ringChannels, inPlace } = input;
  const hierarchy = hierarchyOf(input);
  const world = new WorldScheduleBuilder(worldSize, hierarchicalIdentity(hierarchy.groups, ringChannels));
  const parts = evenRanges(0, count, ringChannels);
  const slot = (owner: number, part: { start: number; count: number }) => elements('output', width, { start: owner * count + part.start, count: part.count });
  const block = (owner: number, part: { start: number; count: number }) => (inPlace ? slot(owner, part) : elements('input', width, part));
  const relays: { carrier: number; owner: number; part: { start: number; count: number }; channel: number; after: Dependency }[] = [];
  for (let owner = 0; owner < worldSize; owner++) {
    const home = hierarchy.groupOf[owner]!;
    if (!inPlace) world.at(owner).copy(elements('output', width, { start: owner * count, count }), elements('input', width, { start: 0, count }));
    parts.forEach((part, index) => {
      const channel = owner * ringChannels + index;
      for (const member of hierarchy.groups[home]!) if (member !== owner) world.transfer(owner, member, block(owner, part), slot(owner, part), null, channel);
      hierarchy.groups.forEach((_, group) => {
        if (group === home) return;
        const carrier = carrierOf(hierarchy, group, hierarchy.positionOf[owner]!);
        relays.push({ carrier, owner, part, channel, after: world.transfer(owner, carrier, block(owner, part), slot(owner, part), null, channel) });
      });
    });
  }
  for (const { carrier, owner, part, channel, after } of relays) {
    for (const member of hierarchy.groups[hierarchy.groupOf[carrier]!]!) if (member !== carrier) world.transfer(carrier, member, slot(owner, part), slot(owner, part), after, channel);
  }
  return world.build(rank);
}
