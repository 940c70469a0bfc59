import { inRankOrder, PAIRWISE, peersFrom, TO_OWNER } from '../pairwise-family.js';
import type { Schedule, ScheduleInput } from '../schedule/schedule.js';
import { span } from '../schedule/schedule.js';
import { ScheduleBuilder } from '../schedule/schedule-builder.js';

/** Reduce in one direct step: every rank sends its tensor to the root, which folds the W tensors in rank order as they arrive (the staged path's bits). */
export function pairwiseReduce(input: ScheduleInput): Schedule {
  const { rank, worldSize, count, width } = input;
  const root = input.root ?? 0;
  const schedule = new ScheduleBuilder(PAIRWISE);
  const bytes = count * width;
  if (rank !== root) {
    schedule.send(root, span('input', 0, bytes), TO_OWNER);
    return schedule.build();
  }
  const peers = peersFrom(rank, worldSize);
  const slots = new Map(peers.map((peer) => [peer, schedule.scratch(bytes)]));
  const arrived = peers.map((peer) => schedule.receive(peer, slots.get(peer)!, TO_OWNER));
  schedule.fold(span('output', 0, bytes), inRankOrder(worldSize, rank, span('input', 0, bytes), (peer) => slots.get(peer)!), arrived, input.op ?? 'sum', worldSize);
  return schedule.build();
}
