import { treeIdentity, wrapRuns } from '../tree-family.js';
import type { Dependency, Schedule, ScheduleInput } from '../schedule/schedule.js';
import { span } from '../schedule/schedule.js';
import { ScheduleBuilder } from '../schedule/schedule-builder.js';

/**
 * All-gather by Bruck's algorithm, for small tensors: in step k = 0..ceil(log2 W)-1, with
 * d = 2^k and n = min(d, W - d), rank r sends the blocks of ranks r, r + 1, ..., r + n - 1 (mod W;
 * what it holds so far, in that order) to r - d and receives those of r + d, ..., r + d + n - 1
 * from r + d. After the last step it holds all W: ceil(log2 W) dependent steps against the ring's
 * W-1, one message per step (two where the blocks wrap from rank W - 1 to 0).
 *
 * The blocks land straight in their slots of the result, in rank order: a message is one run of
 * consecutive ranks (`wrapRuns`), so the receiver's slots and the sender's are the same slots, and
 * a send goes as what it forwards arrives (a send of several producers: its own block, then each
 * earlier step's message; at the last step of a world that is not a power of two, the first part
 * of the last of them). Its own block is copied into its slot first (in place, onto itself, which
 * both planes skip: the producer its sends wait for).
 */
export function bruckAllGather(input: ScheduleInput): Schedule {
  const { rank, worldSize, count, width } = input;
  const schedule = new ScheduleBuilder(treeIdentity('bruck'));
  const bytes = count * width;
  const slots = (start: number, ranks: number) => span('output', start * bytes, ranks * bytes);
  const distance = (of: number) => (of - rank + worldSize) % worldSize;
  // The runs this rank holds, by distance from it, and what made each.
  const held: { readonly first: number; readonly made: Dependency }[] = [{ first: 0, made: schedule.copy(slots(rank, 1), span('input', 0, bytes)) }];
  for (let k = 0, d = 1; d < worldSize; k++, d <<= 1) {
    const n = Math.min(d, worldSize - d);
    for (const run of wrapRuns(rank, n, worldSize)) {
      const first = distance(run.start);
      // Every run held that starts within this one: the last may reach past it.
      const parts = held.filter((piece) => piece.first >= first && piece.first < first + run.count).map((piece) => piece.made);
      schedule.send((rank - d + worldSize) % worldSize, slots(run.start, run.count), { step: k, channel: run.channel }, parts);
    }
    const from = (rank + d) % worldSize;
    for (const run of wrapRuns(from, n, worldSize)) {
      held.push({ first: distance(run.start), made: schedule.receive(from, slots(run.start, run.count), { step: k, channel: run.channel }) });
    }
  }
  return schedule.build();
}
