import { evenRanges } from '../peer-data.js';
import { ringFold, ringIdentity, ringPlace } from '../ring-family.js';
import type { Dependency, Schedule, ScheduleInput } from '../schedule/schedule.js';
import { elements, span } from '../schedule/schedule.js';
import { ScheduleBuilder } from '../schedule/schedule-builder.js';

/**
 * Reduce-scatter as a ring (the reduce-scatter half of the ring all-reduce): shard d of every
 * rank's tensor is reduced at rank d. At step t = 0..W-2 position p sends the partial sum of the
 * shard of the rank at p - t - 1 (at step 0 straight from its tensor) and receives the one of the
 * rank at p - t - 2, folding its own values into it (own op received); at the last step that is
 * its own shard, folded into the result (avg divides there). Each rank sends and receives (W-1)/W
 * of its tensor; each shard is cut into `ringChannels` parts going round at once.
 *
 * Partial sums are received into a scratch slot per step and folded there, then sent on from it.
 */
export function ringReduceScatter(input: ScheduleInput): Schedule {
  const { rank, count, width, ringOrder, ringChannels, inPlace } = input;
  const op = input.op ?? 'sum';
  const { size, position, next, previous, at } = ringPlace(ringOrder, rank);
  const schedule = new ScheduleBuilder(ringIdentity(ringOrder, ringChannels));
  const shard = count / size;
  if (size === 1) {
    if (!inPlace) schedule.copy(span('output', 0, count * width), span('input', 0, count * width));
    return schedule.build();
  }
  evenRanges(0, shard, ringChannels).forEach((part, channel) => {
    const contribution = (owner: number) => elements('input', width, { start: owner * shard + part.start, count: part.count });
    let folded: Dependency | null = null;
    let partial = contribution(at(position - 1));
    for (let t = 0; t < size - 1; t++) {
      schedule.send(next, partial, { step: t, channel }, folded);
      const slot = schedule.scratch(part.count * width);
      const arrived = schedule.receive(previous, slot, { step: t, channel });
      const last = t === size - 2;
      const target = last ? elements('output', width, part) : slot;
      const { op: stepOp, divisor } = ringFold(op, last, size);
      folded = schedule.fold(target, [contribution(at(position - t - 2)), slot], [arrived], stepOp, divisor);
      partial = slot;
    }
  });
  return schedule.build();
}
