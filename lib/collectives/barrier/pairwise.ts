import { PAIRWISE } from '../pairwise-family.js';
import type { Schedule, ScheduleInput } from '../schedule/schedule.js';
import { span } from '../schedule/schedule.js';
import { ScheduleBuilder } from '../schedule/schedule-builder.js';

/**
 * Barrier: every rank sends every other a message of no bytes (its header alone on the native
 * plane) and leaves once every other's has come, so once every rank has entered: one step, W - 1
 * messages per rank. (The native plane's agreement no longer has every pair meet:
 * ./schedule/header-exchange.ts.)
 */
export function pairwiseBarrier({ rank, worldSize }: ScheduleInput): Schedule {
  const schedule = new ScheduleBuilder(PAIRWISE);
  const nothing = span('input', 0, 0);
  for (let peer = 0; peer < worldSize; peer++) {
    if (peer === rank) continue;
    schedule.send(peer, nothing, { step: 0 });
    schedule.receive(peer, nothing, { step: 0 });
  }
  return schedule.build();
}
