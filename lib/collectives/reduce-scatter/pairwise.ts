import { inRankOrder, PAIRWISE, peersFrom, TO_OWNER } from '../pairwise-family.js';
import type { Schedule, ScheduleInput } from '../schedule/schedule.js';
import { span } from '../schedule/schedule.js';
import { ScheduleBuilder } from '../schedule/schedule-builder.js';

/**
 * Reduce-scatter in one direct step (the first step of the pairwise all-reduce): every rank sends
 * each rank d shard d of its tensor at once, and folds the W shards of its own in rank order into
 * the result, as far as they have arrived (avg divides in the same pass). The ring's bytes
 * ((W-1)/W of the tensor each way) in one dependent step instead of W-1.
 */
export function pairwiseReduceScatter(input: ScheduleInput): Schedule {
  const { rank, worldSize, count, width } = input;
  const schedule = new ScheduleBuilder(PAIRWISE);
  const shardBytes = (count / worldSize) * width;
  const shard = (owner: number) => span('input', owner * shardBytes, shardBytes);
  const peers = peersFrom(rank, worldSize);
  for (const peer of peers) schedule.send(peer, shard(peer), TO_OWNER);
  const slots = new Map(peers.map((peer) => [peer, schedule.scratch(shardBytes)]));
  const arrived = peers.map((peer) => schedule.receive(peer, slots.get(peer)!, TO_OWNER));
  schedule.fold(span('output', 0, shardBytes), inRankOrder(worldSize, rank, shard(rank), (peer) => slots.get(peer)!), arrived, input.op ?? 'sum', worldSize);
  return schedule.build();
}
