import { inRankOrder, peersFrom } from '../pairwise-family.js';
import type { Schedule, ScheduleInput } from '../schedule/schedule.js';
import { span } from '../schedule/schedule.js';
import { ScheduleBuilder } from '../schedule/schedule-builder.js';

/** All-pairs messages carry tags under this prefix ("AP") on the JS plane. */
export const ALL_PAIRS_TAG_PREFIX = 0x4150;

/**
 * All-reduce of a small tensor in one step: every rank sends its whole tensor to every other rank
 * and folds the W tensors in rank order (the staged path's bits; avg divides in the same pass).
 * W-1 times the bytes of the pairwise all-reduce, but the latency of one message.
 */
export function allPairsAllReduce(input: ScheduleInput): Schedule {
  const { rank, worldSize, count, width, inPlace } = input;
  const schedule = new ScheduleBuilder({ algorithm: 'all-pairs', layout: 'all-pairs', tagPrefix: ALL_PAIRS_TAG_PREFIX });
  const bytes = count * width;
  const tensor = span('input', 0, bytes);
  const peers = peersFrom(rank, worldSize);
  const sent = peers.map((peer) => schedule.send(peer, tensor, { step: 0 }));
  const slots = new Map(peers.map((peer) => [peer, schedule.scratch(bytes)]));
  const arrived = peers.map((peer) => schedule.receive(peer, slots.get(peer)!, { step: 0 }));
  // In place the result overwrites the tensor: only once it has left for every peer.
  const after = inPlace ? [...arrived, ...sent] : arrived;
  schedule.fold(span('output', 0, bytes), inRankOrder(worldSize, rank, tensor, (peer) => slots.get(peer)!), after, input.op ?? 'sum', worldSize);
  return schedule.build();
}
