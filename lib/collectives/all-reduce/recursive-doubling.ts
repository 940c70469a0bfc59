import { doublingPlace, log2, treeFold, treeIdentity } from '../tree-family.js';
import type { Dependency, Schedule, ScheduleInput, Span } from '../schedule/schedule.js';
import { span } from '../schedule/schedule.js';
import { ScheduleBuilder } from '../schedule/schedule-builder.js';

/**
 * All-reduce by recursive doubling, for small tensors: log2 P steps (P the largest power of two at
 * most W), at step k each rank exchanging its whole partial result with the rank whose virtual
 * rank differs in bit k and folding the two, lower virtual rank first (`doublingPlace`). Ranks
 * beyond P are folded in before (step 0: an even rank below 2E sends its tensor to the odd rank
 * above it) and handed the result after (the last step), so the latency is log2 P + 2 messages
 * against the ring's 2(W-1), and each rank sends one message per step.
 *
 * Every rank ends with identical bits: the partners of a fold hold identical partials (by
 * induction) and fold them in the same order, so the result is one balanced tree over the ranks in
 * rank order, the same on every rank. avg sums on the way and divides once, at the last step.
 *
 * Each message is received into a scratch slot of its own (log2 P + 1 of the tensor's size at
 * most, for tensors that are small): a partner's next message may arrive before this rank's fold
 * of the last one has run. A fold overwrites the partial it read only once that partial's send has
 * left.
 */
export function recursiveDoublingAllReduce(input: ScheduleInput): Schedule {
  const { rank, worldSize, count, width, inPlace } = input;
  const op = input.op ?? 'sum';
  const schedule = new ScheduleBuilder(treeIdentity('recursive-doubling'));
  const whole = (memory: Span['memory']) => span(memory, 0, count * width);
  const result = whole('output');
  const own = whole(inPlace ? 'output' : 'input');
  if (worldSize === 1) {
    if (!inPlace) schedule.copy(result, own);
    return schedule.build();
  }
  const place = doublingPlace(rank, worldSize);
  const steps = log2(place.power);
  const handBack = { step: steps + 1 };
  if (place.virtual === null) {
    schedule.send(place.extra!, own, { step: 0 });
    schedule.receive(place.extra!, result, handBack);
    return schedule.build();
  }
  const slot = () => schedule.scratch(count * width);
  // What this rank holds so far, what produced it (null: its tensor), and the send that read its tensor.
  let partial = own;
  let folded: Dependency | null = null;
  let ownSent: Dependency | null = null;
  if (place.extra !== null) {
    const handed = slot();
    const arrived = schedule.receive(place.extra, handed, { step: 0 });
    partial = slot();
    folded = schedule.fold(partial, [handed, own], [arrived], treeFold(op, false, worldSize).op);
  }
  for (let k = 0; k < steps; k++) {
    const partnerVirtual = place.virtual ^ (1 << k);
    const partner = place.real(partnerVirtual);
    const sent = schedule.send(partner, partial, { step: k + 1 }, folded);
    if (partial === own) ownSent = sent;
    const received = slot();
    const arrived = schedule.receive(partner, received, { step: k + 1 });
    const last = k === steps - 1;
    const { op: stepOp, divisor } = treeFold(op, last, worldSize);
    const after = [arrived, ...(folded === null ? [] : [folded])];
    // In place the result overwrites the tensor: only once the tensor has left.
    if (last && own.memory === 'output' && ownSent !== null) after.push(ownSent);
    const target = last ? result : slot();
    folded = schedule.fold(target, partnerVirtual < place.virtual ? [received, partial] : [partial, received], after, stepOp, divisor);
    partial = target;
  }
  if (place.extra !== null) schedule.send(place.extra, result, handBack, folded);
  return schedule.build();
}
