import { PAIRWISE } from '../pairwise-family.js';
import type { Schedule } from '../schedule/schedule.js';
import { ScheduleBuilder } from '../schedule/schedule-builder.js';

/**
 * Barrier: no data at all. What makes it a barrier is the agreement every scheduled collective
 * starts with: on the native plane every pair exchanges a header (an all-reduce of nothing), on
 * the JS plane every rank's descriptor is checked before the collective ends.
 */
export function pairwiseBarrier(): Schedule {
  return new ScheduleBuilder(PAIRWISE).build();
}
