import { FROM_OWNER, PAIRWISE, peersFrom } from '../pairwise-family.js';
import type { Schedule, ScheduleInput } from '../schedule/schedule.js';
import { span } from '../schedule/schedule.js';
import { ScheduleBuilder } from '../schedule/schedule-builder.js';

/**
 * All-gather in one direct step (the second step of the pairwise all-reduce): every rank sends its
 * tensor to every other rank at once and receives theirs straight into their slots of the result.
 * The ring's bytes ((W-1)/W of the result each way) in one dependent step instead of W-1.
 */
export function pairwiseAllGather(input: ScheduleInput): Schedule {
  const { rank, worldSize, count, width, inPlace } = input;
  const schedule = new ScheduleBuilder(PAIRWISE);
  const bytes = count * width;
  const slot = (owner: number) => span('output', owner * bytes, bytes);
  if (!inPlace) schedule.copy(slot(rank), span('input', 0, bytes));
  const peers = peersFrom(rank, worldSize);
  for (const peer of peers) schedule.send(peer, span('input', 0, bytes), FROM_OWNER);
  for (const peer of peers) schedule.receive(peer, slot(peer), FROM_OWNER);
  return schedule.build();
}
