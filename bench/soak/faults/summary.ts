/**
 * The soak's verdict over its epochs: operations and wrong results per plane, how fast and how
 * clearly the survivors learnt of each kill, and whether the processes that lived through the
 * whole run (the driver, which hosted every coordinator, and the survivors) held on to memory or
 * descriptors.
 */
import { type EpochResult, REPORT_MS } from './epoch.js';
import type { Plane } from './planes.js';
import { type Growth, type LongLived, growthOf } from './growth.js';

/** A lost connection is seen at once; only a timeout (30 s, worker.ts) would take longer than this. */
export const DETECTION_BOUND_MS = 5_000;

export interface SoakSummary {
  readonly epochs: number;
  readonly minutes: number;
  readonly perPlane: readonly { plane: Plane; epochs: number; ops: number; wrong: number }[];
  readonly wrongExamples: readonly string[];
  /** Kill to each survivor's error, ms. */
  readonly killToError: { readonly count: number; readonly min: number; readonly median: number; readonly max: number };
  readonly survivors: number;
  readonly survivorsNamingKilledRank: number;
  readonly coordinatorsNamingKilledRank: number;
  readonly longLived: readonly Growth[];
  /** Why the soak failed; empty when it passed. */
  readonly failures: readonly string[];
}

function quantiles(values: readonly number[]) {
  const sorted = [...values].sort((a, b) => a - b);
  return { count: sorted.length, min: sorted[0] ?? NaN, median: sorted[Math.floor(sorted.length / 2)] ?? NaN, max: sorted.at(-1) ?? NaN };
}

/**
 * `round`: epochs in a round of planes; `keptAlive`: rank processes that did not exit once
 * released (something of a closed session still held their event loop).
 */
export function summarize(epochs: readonly EpochResult[], minutes: number, round: number, longLived: readonly LongLived[], keptAlive: readonly string[]): SoakSummary {
  const failures = keptAlive.map((name) => `${name} did not exit by itself after its last session was closed`);
  const planes = [...new Set(epochs.map((epoch) => epoch.plane))];
  const tallies = epochs.flatMap((epoch) => [...epoch.survivors.map((survivor) => ({ plane: epoch.plane, tally: survivor.tally })), ...(epoch.killedTally === null ? [] : [{ plane: epoch.plane, tally: epoch.killedTally }])]);
  const perPlane = planes.map((plane) => {
    const mine = tallies.filter((entry) => entry.plane === plane);
    return {
      plane,
      epochs: epochs.filter((epoch) => epoch.plane === plane).length,
      ops: mine.reduce((sum, entry) => sum + entry.tally.ops, 0),
      wrong: mine.reduce((sum, entry) => sum + entry.tally.wrong, 0),
    };
  });
  const wrong = perPlane.reduce((sum, plane) => sum + plane.wrong, 0);
  if (wrong > 0) failures.push(`${wrong} wrong results`);
  const survivors = epochs.flatMap((epoch) => epoch.survivors.map((survivor) => ({ ...survivor, epoch })));
  for (const { epoch, rank, error, errorAfterMs, namesKilledRank } of survivors) {
    const who = `epoch ${epoch.epoch} (${epoch.plane}), rank ${rank}`;
    if (error === null || errorAfterMs === null) failures.push(`${who}: no error reported within ${REPORT_MS / 1_000} s of killing rank ${epoch.killedRank}`);
    else if (errorAfterMs < 0) failures.push(`${who}: its session failed ${(-errorAfterMs).toFixed(0)} ms before the kill: ${error.message}`);
    else if (errorAfterMs > DETECTION_BOUND_MS) failures.push(`${who}: saw the kill of rank ${epoch.killedRank} only after ${errorAfterMs.toFixed(0)} ms: ${error.message}`);
    if (error !== null && !namesKilledRank) failures.push(`${who}: its error does not name the killed rank ${epoch.killedRank}: ${error.message}`);
  }
  const growth = longLived.map((process) => growthOf(process, round));
  for (const { name, grown, firstRound, lastRound } of growth) {
    for (const measure of grown) {
      const text = (value: number) => (measure === 'fds' ? `${value} descriptors` : `${(value / 2 ** 20).toFixed(1)} MiB`);
      failures.push(`${name}: ${measure} grew from ${text(firstRound[measure])} (highest over the first round) to ${text(lastRound[measure])} (lowest over the last)`);
    }
  }
  return {
    epochs: epochs.length,
    minutes,
    perPlane,
    wrongExamples: tallies.flatMap((entry) => entry.tally.wrongExamples).slice(0, 10),
    killToError: quantiles(survivors.flatMap((survivor) => (survivor.errorAfterMs === null || survivor.errorAfterMs < 0 ? [] : [survivor.errorAfterMs]))),
    survivors: survivors.length,
    survivorsNamingKilledRank: survivors.filter((survivor) => survivor.namesKilledRank).length,
    coordinatorsNamingKilledRank: epochs.filter((epoch) => epoch.coordinatorNamesKilledRank).length,
    longLived: growth,
    failures,
  };
}
