import type { Schedule, ScheduledMessage } from './schedule.js';
import { span } from './schedule.js';

/**
 * The native plane's rule for a collective: every pair of ranks exchanges at least one message
 * each way on rail 0, and every message starts with the collective's header, which its receiver
 * compares with its own (docs/protocol.md 9.9). So a pair the schedule gives nothing to say on
 * rail 0 exchanges a header alone there, and every rank meets every other at a comparison on a
 * link both read: ranks in different collectives, with different roots or different rail orders
 * (one sending on rail 1 what the other awaits on rail 0) are named, never left waiting on each
 * other.
 */
export function withHeaderExchange(schedule: Schedule, worldSize: number, rank: number): Schedule {
  const none = span('input', 0, 0);
  const peers = Array.from({ length: worldSize }, (_, peer) => peer).filter((peer) => peer !== rank);
  const onRailZero = (message: ScheduledMessage, peer: number) => message.peer === peer && (message.rail ?? 0) === 0;
  const silentTo = peers.filter((peer) => !schedule.sends.some((send) => onRailZero(send, peer)));
  const silentFrom = peers.filter((peer) => !schedule.receives.some((receive) => onRailZero(receive, peer)));
  if (silentTo.length === 0 && silentFrom.length === 0) return schedule;
  return {
    ...schedule,
    sends: [...schedule.sends, ...silentTo.map((peer) => ({ peer, span: none, step: 0, channel: 0, after: null }))],
    receives: [...schedule.receives, ...silentFrom.map((peer) => ({ peer, span: none, step: 0, channel: 0 }))],
  };
}
