import { log2, lowBit, treeIdentity, wrapRuns } from '../tree-family.js';
import type { Dependency, Schedule, ScheduleInput } from '../schedule/schedule.js';
import { span } from '../schedule/schedule.js';
import { ScheduleBuilder } from '../schedule/schedule-builder.js';

/**
 * Gather up a binomial tree (the binomial reduce's tree, nothing folded): with
 * v = (rank - root) mod W, rank v gathers its subtree's blocks, those of virtual ranks
 * [v, v + low(v)) within the world, and sends them to v minus its lowest set bit in one message
 * (step log2 of that bit), after receiving those of v + 1, v + 2, v + 4, ... below that bit. The
 * root receives ceil(log2 W) messages against pairwise's W-1, in ceil(log2 W) dependent steps.
 *
 * A rank lays its subtree out in scratch in virtual rank order (its own block copied first) and
 * sends it as its blocks and its children's arrive (a send of several producers). The root
 * receives straight into its result, in rank order: so a subtree whose ranks wrap from W - 1 to 0
 * goes as two messages, cut where they wrap (`wrapRuns`), at every rank on its way.
 */
export function binomialGather(input: ScheduleInput): Schedule {
  const { rank, worldSize, count, width } = input;
  const root = input.root ?? 0;
  const schedule = new ScheduleBuilder(treeIdentity('binomial'));
  const bytes = count * width;
  const real = (virtual: number) => (virtual + root) % worldSize;
  const virtual = (rank - root + worldSize) % worldSize;
  const below = lowBit(virtual, worldSize);
  const subtree = (of: number) => Math.min(lowBit(of, worldSize), worldSize - of);
  const children: number[] = [];
  for (let m = 1; m < below && virtual + m < worldSize; m <<= 1) children.push(m);
  const own = span('input', 0, bytes);
  /** Each message of the subtree of virtual rank `of`, as runs of real ranks. */
  const runsOf = (of: number) => wrapRuns(real(of), subtree(of), worldSize);
  if (virtual === 0) {
    schedule.copy(span('output', rank * bytes, bytes), own);
    for (const m of children) {
      for (const run of runsOf(m)) schedule.receive(real(m), span('output', run.start * bytes, run.count * bytes), { step: log2(m), channel: run.channel });
    }
    return schedule.build();
  }
  const parent = real(virtual - below);
  if (children.length === 0) {
    schedule.send(parent, own, { step: log2(below) });
    return schedule.build();
  }
  // The subtree in virtual rank order: a rank `distance` after this one sits at distance x bytes.
  const held = schedule.scratch(subtree(virtual) * bytes);
  const distance = (of: number) => (of - rank + worldSize) % worldSize;
  const at = (first: number, ranks: number) => span('scratch', held.offset + first * bytes, ranks * bytes);
  // What arrived where, by distance: its own block, then each child's runs.
  const pieces: { readonly first: number; readonly made: Dependency }[] = [{ first: 0, made: schedule.copy(at(0, 1), own) }];
  for (const m of children) {
    for (const run of runsOf(virtual + m)) {
      const first = distance(run.start);
      pieces.push({ first, made: schedule.receive(real(virtual + m), at(first, run.count), { step: log2(m), channel: run.channel }) });
    }
  }
  for (const run of runsOf(virtual)) {
    const first = distance(run.start);
    const parts = pieces.filter((piece) => piece.first >= first && piece.first < first + run.count).map((piece) => piece.made);
    schedule.send(parent, at(first, run.count), { step: log2(below), channel: run.channel }, parts);
  }
  return schedule.build();
}
