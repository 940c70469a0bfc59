import { log2, treeIdentity, treeSpan } from '../tree-family.js';
import type { Dependency, Schedule, ScheduleInput } from '../schedule/schedule.js';
import { ScheduleBuilder } from '../schedule/schedule-builder.js';

/**
 * Barrier by dissemination (Hensgen, Finkel and Manber): in round k = 0..ceil(log2 W)-1 each rank
 * sends a token to rank + 2^k and receives one from rank - 2^k, sending round k + 1's only once
 * every token of rounds 0..k has come. After the last round every rank has heard, through some
 * chain, from every other one that had entered: ceil(log2 W) dependent steps, one message per
 * rank per round.
 *
 * A send waits only for the producers of its own bytes, so round k's token is "joined" once it
 * has come: a copy of it onto itself that waits for it and for the join of round k - 1; round
 * k + 1 sends that token once joined. The tokens are one element of scratch each and their content is never read: the
 * native plane follows a dependency byte by byte, so a token of no bytes would not hold its send
 * back.
 */
export function disseminationBarrier(input: ScheduleInput): Schedule {
  const { rank, worldSize, width } = input;
  const schedule = new ScheduleBuilder(treeIdentity('dissemination'));
  const rounds = log2(treeSpan(worldSize));
  if (rounds === 0) return schedule.build();
  let token = schedule.scratch(width);
  let joined: Dependency | null = null;
  for (let k = 0; k < rounds; k++) {
    const distance = 1 << k;
    schedule.send((rank + distance) % worldSize, token, { step: k }, joined);
    token = schedule.scratch(width);
    const arrived = schedule.receive((rank - distance + worldSize) % worldSize, token, { step: k });
    joined = schedule.copy(token, token, joined === null ? [arrived] : [arrived, joined]);
  }
  return schedule.build();
}
