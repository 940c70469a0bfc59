import { evenRanges } from '../peer-data.js';
import { FROM_OWNER, inRankOrder, PAIRWISE, peersFrom, TO_OWNER } from '../pairwise-family.js';
import type { Schedule, ScheduleInput } from '../schedule/schedule.js';
import { elements } from '../schedule/schedule.js';
import { ScheduleBuilder } from '../schedule/schedule-builder.js';

/**
 * All-reduce in two direct steps (MPI's pairwise-exchange reduce-scatter, then a direct
 * all-gather): rank r owns segment r of the tensor (W segments as even as possible, the first
 * ones get the rest). Every rank sends each owner that owner's segment at once; the owner folds
 * the W contributions in rank order (the staged path's bits; avg divides in the same pass) and
 * sends the reduced segment to every rank, as far as it is reduced.
 *
 * The ring's bytes (each rank sends and receives 2(W-1)/W of the tensor) in two dependent steps
 * instead of 2(W-1): where ranks share cores, a ring step waits for its one sender to be
 * scheduled, and here every rank has work at once. On one link a rank's second message follows
 * its first.
 *
 * Memory stays safe in place: a segment sent in the first step is overwritten only by the owner's
 * reduced values, which the owner sends once it has received this rank's contribution.
 */
export function pairwiseAllReduce(input: ScheduleInput): Schedule {
  const { rank, worldSize, count, width, inPlace } = input;
  const schedule = new ScheduleBuilder(PAIRWISE);
  const own = inPlace ? 'output' : 'input';
  const segments = evenRanges(0, count, worldSize);
  const peers = peersFrom(rank, worldSize);
  const mine = segments[rank]!;
  for (const peer of peers) schedule.send(peer, elements(own, width, segments[peer]!), TO_OWNER);
  const slots = new Map(peers.map((peer) => [peer, schedule.scratch(mine.count * width)]));
  const arrived = peers.map((peer) => schedule.receive(peer, slots.get(peer)!, TO_OWNER));
  const sources = inRankOrder(worldSize, rank, elements(own, width, mine), (peer) => slots.get(peer)!);
  const result = elements('output', width, mine);
  const reduced = schedule.fold(result, sources, arrived, input.op ?? 'sum', worldSize);
  for (const peer of peers) schedule.send(peer, result, FROM_OWNER, reduced);
  for (const peer of peers) schedule.receive(peer, elements('output', width, segments[peer]!), FROM_OWNER);
  return schedule.build();
}
