import { evenRanges } from '../peer-data.js';
import { doublingPlace, log2, treeFold, treeIdentity } from '../tree-family.js';
import type { Dependency, Producers, Schedule, ScheduleInput, Span } from '../schedule/schedule.js';
import { producedFrom, span } from '../schedule/schedule.js';
import { ScheduleBuilder } from '../schedule/schedule-builder.js';

/**
 * All-reduce by Rabenseifner's algorithm, for large tensors: a reduce-scatter by recursive halving
 * then an all-gather by recursive doubling, over P (the largest power of two at most W) virtual
 * ranks, the extra ranks folded in before and handed the result after as recursive doubling does
 * (`doublingPlace`). The tensor is cut into P blocks (`evenRanges`). In halving step k (mask 2^k,
 * k = 0..log2 P - 1) a rank and the one whose virtual rank differs in bit k split the blocks they
 * both hold: the lower one keeps the lower half, each sends the other the half it gives up and
 * folds the half it keeps with the one received, lower virtual rank first; after the last step
 * each holds one block, reduced, in its result. The doubling steps then exchange what each holds
 * with the same partners in the opposite order (mask P/2 first), so each message doubles it.
 * 2 log2 P steps (plus 2 with extra ranks) and 2(P-1)/P of the tensor sent per rank, against
 * recursive doubling's log2 P whole tensors.
 *
 * The folds are recursive doubling's, element for element: halving pairs bit 0 first, so every
 * element of the result is one balanced tree over the ranks in rank order, folded on the one rank
 * that owns its block and copied to the others, the same bits everywhere, and the same bits as
 * recursive doubling's. avg sums on the way and divides once, at the last halving fold.
 *
 * A half goes as its fold produces it (a part of that fold), and what a doubling step or the
 * handing back sends goes as each of its blocks arrives (a send of several producers).
 */
export function rabenseifnerAllReduce(input: ScheduleInput): Schedule {
  const { rank, worldSize, count, width, inPlace } = input;
  const op = input.op ?? 'sum';
  const schedule = new ScheduleBuilder(treeIdentity('rabenseifner'));
  const result = span('output', 0, count * width);
  const own = span(inPlace ? 'output' : 'input', 0, count * width);
  if (worldSize === 1) {
    if (!inPlace) schedule.copy(result, own);
    return schedule.build();
  }
  const place = doublingPlace(rank, worldSize);
  const steps = log2(place.power);
  const handBack = { step: 2 * steps + 1 };
  if (place.virtual === null) {
    schedule.send(place.extra!, own, { step: 0 });
    schedule.receive(place.extra!, result, handBack);
    return schedule.build();
  }
  const virtual = place.virtual;
  const blocks = evenRanges(0, count, place.power);
  const offsetOf = (block: number) => (block === blocks.length ? count : blocks[block]!.start) * width;
  const blocksOf = (memory: Span['memory'], lo: number, hi: number) => span(memory, offsetOf(lo), offsetOf(hi) - offsetOf(lo));
  // Blocks [lo, hi) this rank reduces so far: where they are, and what produced them (null: its tensor).
  let [lo, hi] = [0, place.power];
  let partial = own;
  let folded: Dependency | null = null;
  if (place.extra !== null) {
    const handed = schedule.scratch(count * width);
    const arrived = schedule.receive(place.extra, handed, { step: 0 });
    partial = schedule.scratch(count * width);
    folded = schedule.fold(partial, [handed, own], [arrived], treeFold(op, false, worldSize).op);
  }
  /** Blocks [from, to) of the partial, and the part of its fold they wait for. */
  const within = (from: number, to: number): { span: Span; after: Producers | null } => ({
    span: span(partial.memory, partial.offset + offsetOf(from) - offsetOf(lo), offsetOf(to) - offsetOf(from)),
    after: folded === null ? null : producedFrom(folded, offsetOf(from) - offsetOf(lo)),
  });
  for (let k = 0; k < steps; k++) {
    const partnerVirtual = virtual ^ (1 << k);
    const partner = place.real(partnerVirtual);
    const mid = (lo + hi) >> 1;
    const upper = partnerVirtual < virtual;
    const give = upper ? within(lo, mid) : within(mid, hi);
    const keep = upper ? within(mid, hi) : within(lo, mid);
    schedule.send(partner, give.span, { step: k + 1 }, give.after);
    const received = schedule.scratch(keep.span.bytes);
    const arrived = schedule.receive(partner, received, { step: k + 1 });
    const last = k === steps - 1;
    const { op: stepOp, divisor } = treeFold(op, last, worldSize);
    [lo, hi] = upper ? [mid, hi] : [lo, mid];
    const target = last ? blocksOf('output', lo, hi) : schedule.scratch(keep.span.bytes);
    folded = schedule.fold(target, upper ? [received, keep.span] : [keep.span, received], keep.after === null ? [arrived] : [arrived, keep.after], stepOp, divisor);
    partial = target;
  }
  // What this rank holds of the result, in block order, each run with what produced it.
  let held: Dependency[] = [folded!];
  for (let k = steps - 1; k >= 0; k--) {
    const partner = place.real(virtual ^ (1 << k));
    const size = hi - lo;
    const theirs = virtual & (1 << k) ? lo - size : hi;
    const label = { step: 2 * steps - k };
    schedule.send(partner, blocksOf('output', lo, hi), label, held);
    const arrived = schedule.receive(partner, blocksOf('output', theirs, theirs + size), label);
    held = theirs < lo ? [arrived, ...held] : [...held, arrived];
    [lo, hi] = [Math.min(lo, theirs), Math.max(hi, theirs + size)];
  }
  if (place.extra !== null) schedule.send(place.extra, result, handBack, held);
  return schedule.build();
}
