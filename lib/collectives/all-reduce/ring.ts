import { evenRanges } from '../peer-data.js';
import { ringFold, ringIdentity, ringPlace } from '../ring-family.js';
import type { Dependency, Schedule, ScheduleInput } from '../schedule/schedule.js';
import { elements, span } from '../schedule/schedule.js';
import { ScheduleBuilder } from '../schedule/schedule-builder.js';

/**
 * All-reduce as a ring (reduce-scatter, then all-gather), the bandwidth-optimal schedule NCCL and
 * Gloo use for large tensors: each rank sends and receives 2(W-1)/W of the tensor.
 *
 * - The tensor is cut into `ringChannels` parts, each going round the ring at once; a part into W
 *   segments (as even as possible, the first ones get the rest), numbered by ring position.
 * - Reduce-scatter, steps t = 0..W-2: position p sends segment p - t to the next position and
 *   receives segment p - t - 1 from the previous one (into a scratch slot of that step), folding it
 *   into its own values of that segment in the result: own op received. After the last step p
 *   owns the reduced segment p + 1, divided by W there for avg (before it travels, so every rank
 *   divides the same bits once).
 * - All-gather, steps W-1..2W-3 (t from 0): position p sends segment p - t + 1 (first its owned
 *   one) and receives segment p - t straight into the result.
 * - What a rank sends at a step is what it folded or received at the step before, so each part
 *   of a message goes on as soon as its predecessor has arrived: steps overlap.
 * - Memory stays safe without copies: a segment is written again (by the all-gather) only by a
 *   message whose sending required this rank's fold and send of it to have gone round the ring;
 *   each step receives into a slot of its own, since the previous rank's next message does not
 *   wait for this rank's fold.
 * - Every rank ends with identical bits; the fold order is the ring's, so floating-point sums may
 *   differ from the staged path's rank order in the last bits (as across NCCL algorithms).
 */
export function ringAllReduce(input: ScheduleInput): Schedule {
  const { rank, count, width, ringOrder, ringChannels, inPlace } = input;
  const op = input.op ?? 'sum';
  const ring = ringPlace(ringOrder, rank);
  const { size, position, next, previous } = ring;
  const schedule = new ScheduleBuilder(ringIdentity(ringOrder, ringChannels));
  // The values this rank brings: the tensor, which in place is the result itself.
  const own = inPlace ? 'output' : 'input';
  if (size === 1) {
    if (!inPlace) schedule.copy(span('output', 0, count * width), span('input', 0, count * width));
    return schedule.build();
  }
  evenRanges(0, count, ringChannels).forEach((part, channel) => {
    const segments = evenRanges(part.start, part.count, size);
    let folded: Dependency | null = null;
    for (let t = 0; t < size - 1; t++) {
      const sent = segments[(position - t + size) % size]!;
      const received = segments[(position - t - 1 + size) % size]!;
      schedule.send(next, elements(t === 0 ? own : 'output', width, sent), { step: t, channel }, folded);
      const slot = schedule.scratch(received.count * width);
      const arrived = schedule.receive(previous, slot, { step: t, channel });
      const { op: stepOp, divisor } = ringFold(op, t === size - 2, size);
      folded = schedule.fold(elements('output', width, received), [elements(own, width, received), slot], [arrived], stepOp, divisor);
    }
    let passed: Dependency | null = folded;
    for (let t = 0; t < size - 1; t++) {
      const sent = segments[(position - t + 1 + size) % size]!;
      const received = segments[(position - t + size) % size]!;
      schedule.send(next, elements('output', width, sent), { step: size - 1 + t, channel }, passed);
      passed = schedule.receive(previous, elements('output', width, received), { step: size - 1 + t, channel });
    }
  });
  return schedule.build();
}
