import { log2, lowBit, treeFold, treeIdentity } from '../tree-family.js';
import type { Dependency, Schedule, ScheduleInput } from '../schedule/schedule.js';
import { span } from '../schedule/schedule.js';
import { ScheduleBuilder } from '../schedule/schedule-builder.js';

/**
 * Reduce up a binomial tree, for small tensors (the binomial broadcast run backwards): with
 * v = (rank - root) mod W, rank v receives the partials of v + 1, v + 2, v + 4, ... (those below
 * its lowest set bit and the world), folds each after its own (its block of virtual ranks comes
 * first), and sends its partial to v minus its lowest set bit. ceil(log2 W) dependent steps; the
 * root receives ceil(log2 W) messages against pairwise's W-1.
 *
 * The fold order is a tree over the ranks from the root on (root, root + 1, ..., W - 1, 0, ...):
 * deterministic for a root and a world, and every contribution once; avg divides once, at the
 * root's last fold. A rank receives each child into a slot of its own (children send at once)
 * and folds each partial into scratch of its own: only the root's last fold writes a result.
 */
export function binomialReduce(input: ScheduleInput): Schedule {
  const { rank, worldSize, count, width } = input;
  const op = input.op ?? 'sum';
  const root = input.root ?? 0;
  const schedule = new ScheduleBuilder(treeIdentity('binomial'));
  const real = (virtual: number) => (virtual + root) % worldSize;
  const virtual = (rank - root + worldSize) % worldSize;
  const below = lowBit(virtual, worldSize);
  const bytes = count * width;
  const children = [];
  for (let m = 1; m < below && virtual + m < worldSize; m <<= 1) children.push(m);
  const own = span('input', 0, bytes);
  if (children.length === 0) {
    if (virtual === 0) schedule.copy(span('output', 0, bytes), own);
    else schedule.send(real(virtual - below), own, { step: log2(below) });
    return schedule.build();
  }
  const slots = children.map(() => schedule.scratch(bytes));
  let partial = own;
  let folded: Dependency | null = null;
  children.forEach((m, index) => {
    const arrived = schedule.receive(real(virtual + m), slots[index]!, { step: log2(m) });
    const last = index === children.length - 1;
    const { op: stepOp, divisor } = treeFold(op, virtual === 0 && last, worldSize);
    const target = last && virtual === 0 ? span('output', 0, bytes) : schedule.scratch(bytes);
    folded = schedule.fold(target, [partial, slots[index]!], folded === null ? [arrived] : [arrived, folded], stepOp, divisor);
    partial = target;
  });
  if (virtual !== 0) schedule.send(real(virtual - below), partial, { step: log2(below) }, folded);
  return schedule.build();
}
