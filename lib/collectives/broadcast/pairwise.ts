import { FROM_OWNER, PAIRWISE, peersFrom } from '../pairwise-family.js';
import type { Schedule, ScheduleInput } from '../schedule/schedule.js';
import { span } from '../schedule/schedule.js';
import { ScheduleBuilder } from '../schedule/schedule-builder.js';

/**
 * Broadcast in one direct step (step 1 of the pairwise algorithms, from the root alone): the root
 * sends its tensor to every other rank at once, each receives it straight into its result. The
 * chain's bytes with no rank forwarding: where ranks share cores, a middle rank of a chain has to
 * be scheduled for everything it passes on.
 */
export function pairwiseBroadcast(input: ScheduleInput): Schedule {
  const { rank, worldSize, count, width, inPlace } = input;
  const root = input.root ?? 0;
  const schedule = new ScheduleBuilder(PAIRWISE);
  const result = span('output', 0, count * width);
  if (rank !== root) {
    schedule.receive(root, result, FROM_OWNER);
    return schedule.build();
  }
  if (!inPlace) schedule.copy(result, span('input', 0, count * width));
  for (const peer of peersFrom(rank, worldSize)) schedule.send(peer, span('input', 0, count * width), FROM_OWNER);
  return schedule.build();
}
