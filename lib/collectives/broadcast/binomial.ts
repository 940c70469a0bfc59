import { log2, lowBit, treeIdentity } from '../tree-family.js';
import type { Schedule, ScheduleInput } from '../schedule/schedule.js';
import { span } from '../schedule/schedule.js';
import { ScheduleBuilder } from '../schedule/schedule-builder.js';

/**
 * Broadcast down a binomial tree, for small tensors: with v = (rank - root) mod W, rank v receives
 * the tensor from v minus its lowest set bit and forwards it to v + m for every power of two m
 * below that bit (largest subtree first), so every rank has it after ceil(log2 W) dependent
 * steps against the chain's W-1, and the root sends ceil(log2 W) messages against pairwise's W-1.
 * A message is labelled with its level, log2 m.
 */
export function binomialBroadcast(input: ScheduleInput): Schedule {
  const { rank, worldSize, count, width, inPlace } = input;
  const root = input.root ?? 0;
  const schedule = new ScheduleBuilder(treeIdentity('binomial'));
  const real = (virtual: number) => (virtual + root) % worldSize;
  const virtual = (rank - root + worldSize) % worldSize;
  const below = lowBit(virtual, worldSize);
  const result = span('output', 0, count * width);
  let tensor = span('input', 0, count * width);
  let arrived = null;
  if (virtual === 0) {
    if (!inPlace) schedule.copy(result, tensor);
  } else {
    arrived = schedule.receive(real(virtual - below), result, { step: log2(below) });
    tensor = result;
  }
  for (let m = below >> 1; m >= 1; m >>= 1) {
    if (virtual + m < worldSize) schedule.send(real(virtual + m), tensor, { step: log2(m) }, arrived);
  }
  return schedule.build();
}
