import type { Dependency, Producers, Schedule, ScheduledMessage, ScheduledSend } from './schedule.js';
import { span } from './schedule.js';

/**
 * The label of a header-only message (step 4095, channel 16383: docs/protocol.md 9.9), which no
 * schedule's message takes, so that it is never taken for one.
 */
export const HEADER_ONLY = { step: 0xfff, channel: 0x3fff } as const;

/**
 * The native plane's agreement for a collective (docs/protocol.md 9.9): every message starts with
 * the collective's header, which its receiver compares with its own, and on every link of the ring
 * of successors (rank r to r + 1 mod W, rail 0) the first message leaves at once. Where the
 * schedule's first message on that link is absent or waits for a peer, a header-only message goes
 * before it. So
 * - ranks that agree all along the ring agree all: the compared pairs include the ring, which
 *   joins every rank;
 * - ranks that do not (different collectives, roots, rail orders, a skipped call) are named at
 *   once: two neighbours on the ring differ somewhere, and the first message of their link, which
 *   nothing holds back, reaches a receiver that expects a message of its own collective there
 *   (one always does) and compares.
 * The receiver mirrors the sender's choice from the sender's schedule as its own call writes it
 * (`scheduleOf(predecessor)`): where both agree they choose alike; where they do not, whatever
 * comes first on the link is a mismatch. A schedule whose first message to the successor leaves at
 * once adds nothing (every unrooted row of the table at two ranks, a ring in rank order, the
 * pairwise barrier); a rank sends and expects at most one header alone.
 */
export function withHeaderExchange(scheduleOf: (rank: number) => Schedule, worldSize: number, rank: number): Schedule {
  const own = scheduleOf(rank);
  if (worldSize === 1) return own;
  const successor = (rank + 1) % worldSize;
  const predecessor = (rank + worldSize - 1) % worldSize;
  const sends = opensWithHeader(own, successor);
  const receives = opensWithHeader(scheduleOf(predecessor), rank);
  return withHeadersFirst(own, sends ? [successor] : [], receives ? [predecessor] : []);
}

/**
 * `schedule` with a header alone (no bytes, labelled `HEADER_ONLY`, waiting for nothing) to each
 * of `to` and from each of `from` before its own messages, its dependencies moved to match.
 */
export function withHeadersFirst(schedule: Schedule, to: readonly number[], from: readonly number[]): Schedule {
  if (to.length === 0 && from.length === 0) return schedule;
  const none = span('input', 0, 0);
  const movedOne = (dependency: Dependency): Dependency => {
    if ('send' in dependency) return { send: dependency.send + to.length };
    if ('receive' in dependency) return { receive: dependency.receive + from.length };
    return dependency;
  };
  const moved = (after: Dependency | Producers): Dependency | Producers => ('parts' in after ? { ...after, parts: after.parts.map(movedOne) } : movedOne(after));
  const header = (peer: number) => ({ peer, span: none, ...HEADER_ONLY });
  return {
    ...schedule,
    sends: [...to.map((peer): ScheduledSend => ({ ...header(peer), after: null })), ...schedule.sends.map((send): ScheduledSend => (send.after === null ? send : { ...send, after: moved(send.after) }))],
    receives: [...from.map(header), ...schedule.receives],
    folds: schedule.folds.map((fold) => ({ ...fold, after: fold.after.map(moved) })),
  };
}

/**
 * Whether `schedule` sends `successor` a header-only message first: its first message to it on
 * rail 0 is absent, or waits (through its folds) for a message to come or to leave. A send that
 * waits only for local folds (a copy of the input) leaves at once all the same; so an in-place
 * call and one that is not, which the descriptor does not tell apart, choose alike.
 */
export function opensWithHeader(schedule: Schedule, successor: number): boolean {
  const first = schedule.sends.find((send: ScheduledMessage) => send.peer === successor && (send.rail ?? 0) === 0);
  return first === undefined || waitsForPeer(schedule, first.after, new Map());
}

function waitsForPeer(schedule: Schedule, after: Dependency | Producers | null, folds: Map<number, boolean>): boolean {
  if (after === null) return false;
  if ('parts' in after) return after.parts.some((part) => waitsForPeer(schedule, part, folds));
  const dependency = after;
  if (!('fold' in dependency)) return true;
  const known = folds.get(dependency.fold);
  if (known !== undefined) return known;
  folds.set(dependency.fold, false);
  const waits = schedule.folds[dependency.fold]!.after.some((after) => waitsForPeer(schedule, after, folds));
  folds.set(dependency.fold, waits);
  return waits;
}
