import { evenRanges } from '../peer-data.js';
import { ringIdentity, ringPlace } from '../ring-family.js';
import type { Dependency, Schedule, ScheduleInput } from '../schedule/schedule.js';
import { elements, span } from '../schedule/schedule.js';
import { ScheduleBuilder } from '../schedule/schedule-builder.js';

/**
 * All-gather as a ring (the all-gather half of the ring all-reduce): the result holds every rank's
 * tensor in rank order. This rank's goes into its slot; at step t = 0..W-2 position p sends the
 * slot of the rank at p - t (first its own, from the tensor) and receives the slot of the rank at
 * p - t - 1 straight into the result, passing each on as it arrives. Every rank sends and receives
 * (W-1)/W of the result; each slot is cut into `ringChannels` parts going round at once.
 */
export function ringAllGather(input: ScheduleInput): Schedule {
  const { rank, count, width, ringOrder, ringChannels, inPlace } = input;
  const { size, position, next, previous, at } = ringPlace(ringOrder, rank);
  const schedule = new ScheduleBuilder(ringIdentity(ringOrder, ringChannels));
  if (!inPlace) schedule.copy(span('output', rank * count * width, count * width), span('input', 0, count * width));
  evenRanges(0, count, ringChannels).forEach((part, channel) => {
    const slot = (owner: number) => elements('output', width, { start: owner * count + part.start, count: part.count });
    let passed: Dependency | null = null;
    for (let t = 0; t < size - 1; t++) {
      schedule.send(next, t === 0 ? elements('input', width, part) : slot(at(position - t)), { step: t, channel }, passed);
      passed = schedule.receive(previous, slot(at(position - t - 1)), { step: t, channel });
    }
  });
  return schedule.build();
}
