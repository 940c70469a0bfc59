import type { Schedule, ScheduleInput } from '../schedule/schedule.js';
import { span } from '../schedule/schedule.js';
import { ScheduleBuilder } from '../schedule/schedule-builder.js';

/** Chain messages carry tags under this prefix ("BC") on the JS plane. */
export const CHAIN_TAG_PREFIX = 0x4243;

/**
 * Broadcast as a pipelined chain, for large tensors: the ranks form a line in ring order starting
 * at the root, and every rank but the last forwards the tensor to its successor as it arrives, so
 * every link carries it once and all links work at the same time (time ~ size / bandwidth, plus
 * a little per rank, against W-1 copies leaving the root). The line is in the layout: ranks with
 * different rings are named at the agreement.
 */
export function chainBroadcast(input: ScheduleInput): Schedule {
  const { rank, count, width, ringOrder, inPlace } = input;
  const root = input.root ?? 0;
  const start = ringOrder.indexOf(root);
  const line = [...ringOrder.slice(start), ...ringOrder.slice(0, start)];
  const schedule = new ScheduleBuilder({ algorithm: 'chain', layout: `chain ${line.join(',')}`, tagPrefix: CHAIN_TAG_PREFIX });
  const tensor = span('input', 0, count * width);
  const result = span('output', 0, count * width);
  const position = line.indexOf(rank);
  const next = line[position + 1];
  if (rank === root) {
    if (!inPlace) schedule.copy(result, tensor);
    if (next !== undefined) schedule.send(next, tensor, { step: 0 });
    return schedule.build();
  }
  const arrived = schedule.receive(line[position - 1]!, result, { step: 0 });
  if (next !== undefined) schedule.send(next, result, { step: 0 }, arrived);
  return schedule.build();
}
