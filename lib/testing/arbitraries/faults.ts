/** Faults as fast-check draws them: any rank or link of a world, any step or message, shrinking towards none. */
import fc from 'fast-check';
import type { Fault } from '../faults.js';

/** Bounds of the faults `arbFault` draws. */
export interface ArbFaultOptions {
  /** Steps (rank faults) and messages (link faults) are drawn below this (default 8). */
  readonly maxStep?: number;
  /** Longest stall or delay, in virtual ms (default twice a minute's timeout). */
  readonly maxMs?: number;
}

/** One fault in a world of `worldSize` ranks (link faults need 2 ranks). */
export function arbFault(worldSize: number, options: ArbFaultOptions = {}): fc.Arbitrary<Fault> {
  const rank = fc.integer({ min: 0, max: worldSize - 1 });
  const step = fc.integer({ min: 0, max: (options.maxStep ?? 8) - 1 });
  const ms = fc.integer({ min: 1, max: options.maxMs ?? 120_000 });
  const rankFaults = [
    fc.record({ kind: fc.constant('kill' as const), rank, atStep: step }),
    fc.record({ kind: fc.constant('abort' as const), rank, atStep: step }),
    fc.record({ kind: fc.constant('stall' as const), rank, atStep: step, ms }),
  ];
  if (worldSize < 2) return fc.oneof(...rankFaults);
  const link = fc.record({ from: rank, hop: fc.integer({ min: 1, max: worldSize - 1 }) }).map(({ from, hop }) => ({ from, to: (from + hop) % worldSize }));
  return fc.oneof(
    ...rankFaults,
    fc.record({ link, message: step }).map(({ link: { from, to }, message }) => ({ kind: 'drop' as const, from, to, message })),
    fc.record({ link, ms }).map(({ link: { from, to }, ms: delay }) => ({ kind: 'delay' as const, from, to, ms: delay })),
    fc.record({ link, message: step, bit: fc.nat() }).map(({ link: { from, to }, message, bit }) => ({ kind: 'corrupt' as const, from, to, message, bit })),
  );
}
