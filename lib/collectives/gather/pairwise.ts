import { FROM_OWNER, PAIRWISE, peersFrom } from '../pairwise-family.js';
import type { Schedule, ScheduleInput } from '../schedule/schedule.js';
import { span } from '../schedule/schedule.js';
import { ScheduleBuilder } from '../schedule/schedule-builder.js';

/** Gather in one direct step: every rank sends its tensor to the root, which receives each straight into that rank's slot. */
export function pairwiseGather(input: ScheduleInput): Schedule {
  const { rank, worldSize, count, width } = input;
  const root = input.root ?? 0;
  const schedule = new ScheduleBuilder(PAIRWISE);
  const bytes = count * width;
  if (rank !== root) {
    schedule.send(root, span('input', 0, bytes), FROM_OWNER);
    return schedule.build();
  }
  schedule.copy(span('output', rank * bytes, bytes), span('input', 0, bytes));
  for (const peer of peersFrom(rank, worldSize)) schedule.receive(peer, span('output', peer * bytes, bytes), FROM_OWNER);
  return schedule.build();
}
