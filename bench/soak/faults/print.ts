/** The soak's text output: a few lines per epoch as it ends, and the summary. */
import type { EpochResult } from './epoch.js';
import { GROWTH_BOUNDS } from './growth.js';
import { DETECTION_BOUND_MS, type SoakSummary } from './summary.js';

const count = (value: number) => value.toLocaleString('en-US');
const ms = (value: number) => value.toFixed(1);
const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(1);
/** RSS, V8 heap used (MiB), open descriptors. */
const held = (values: { rssBytes: number; heapUsedBytes: number; fds: number }) => `${mib(values.rssBytes)} / ${mib(values.heapUsedBytes)} / ${values.fds}`;

export function epochLines(result: EpochResult, epochs: number): string[] {
  const tallies = [...result.survivors.map((survivor) => survivor.tally), ...(result.killedTally === null ? [] : [result.killedTally])];
  const ops = tallies.reduce((sum, tally) => sum + tally.ops, 0);
  const wrong = tallies.reduce((sum, tally) => sum + tally.wrong, 0);
  return [
    `epoch ${result.epoch}/${epochs} ${result.plane}: rank ${result.killedRank} killed after ${(result.ranMs / 1_000).toFixed(1)} s; ${count(ops)} ops, ${wrong} wrong`,
    ...result.survivors.map((survivor) =>
      survivor.error === null
        ? `  rank ${survivor.rank}: no error (stuck; killed)`
        : `  rank ${survivor.rank}: error after ${ms(survivor.errorAfterMs!)} ms${survivor.namesKilledRank ? '' : ' (does not name the killed rank)'}: ${survivor.error.message}`,
    ),
    `  coordinator: ${result.coordinatorError ?? 'no failure'}`,
    ...tallies.flatMap((tally) => tally.wrongExamples.map((example) => `  WRONG ${example}`)),
  ];
}

export function summaryLines(summary: SoakSummary): string[] {
  const { killToError: times } = summary;
  return [
    `# soak: ${summary.epochs} epochs in ${summary.minutes.toFixed(1)} min, a rank killed and replaced in each`,
    '# plane          epochs          ops   wrong',
    ...summary.perPlane.map((plane) => `  ${plane.plane.padEnd(12)} ${String(plane.epochs).padStart(8)} ${count(plane.ops).padStart(12)} ${String(plane.wrong).padStart(7)}`),
    `# kill to error (ms) over ${times.count} survivors: min ${ms(times.min)}, median ${ms(times.median)}, max ${ms(times.max)} (bound ${DETECTION_BOUND_MS})`,
    `# survivors whose error names the killed rank: ${summary.survivorsNamingKilledRank}/${summary.survivors}; coordinators: ${summary.coordinatorsNamingKilledRank}/${summary.epochs}`,
    '# long-lived processes, RSS MiB / heap used MiB / open fds: at start; highest after the first round of planes; lowest after the last round; at the end',
    `#   (flat: last round's lowest at most ${mib(GROWTH_BOUNDS.rssBytes)} MiB RSS, ${mib(GROWTH_BOUNDS.heapUsedBytes)} MiB heap, ${GROWTH_BOUNDS.fds} fds above the first round's highest)`,
    ...summary.longLived.map(
      (process) => `  ${process.name.padEnd(30)} ${held(process.start).padEnd(20)} ${held(process.firstRound).padEnd(20)} ${held(process.lastRound).padEnd(20)} ${held(process.end)}`,
    ),
    ...summary.wrongExamples.map((example) => `  WRONG ${example}`),
    summary.failures.length === 0 ? '# PASS' : `# FAIL\n${summary.failures.map((failure) => `  ${failure}`).join('\n')}`,
  ];
}
