import { FROM_OWNER, PAIRWISE, peersFrom } from '../pairwise-family.js';
import type { Schedule, ScheduleInput } from '../schedule/schedule.js';
import { span } from '../schedule/schedule.js';
import { ScheduleBuilder } from '../schedule/schedule-builder.js';

/** All-to-all in one direct step: shard p of this rank's tensor goes to rank p, which receives it straight into its shard of the result for this rank. */
export function pairwiseAllToAll(input: ScheduleInput): Schedule {
  const { rank, worldSize, count, width } = input;
  const schedule = new ScheduleBuilder(PAIRWISE);
  const shardBytes = (count / worldSize) * width;
  const shard = (memory: 'input' | 'output', index: number) => span(memory, index * shardBytes, shardBytes);
  schedule.copy(shard('output', rank), shard('input', rank));
  const peers = peersFrom(rank, worldSize);
  for (const peer of peers) schedule.send(peer, shard('input', peer), FROM_OWNER);
  for (const peer of peers) schedule.receive(peer, shard('output', peer), FROM_OWNER);
  return schedule.build();
}
