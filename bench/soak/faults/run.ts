/**
 * Soak and faults (#33): rank processes (worker.ts) run a mix of collectives and point-to-point
 * messages, every result checked, in one job after another on the native, JS and coordinator
 * planes in turn; after each `--kill-every` seconds the driver SIGKILLs one rank (a different
 * rank each epoch), forks a replacement and starts the next job. Communicators do not shrink, so
 * a lost rank ends its job, and the survivors must see that promptly, with an error naming the
 * rank; they close their session and join the next job in the same process, so their memory and
 * descriptors over the run show what a failed session leaves behind. bench/README.md has the
 * method and results.
 *
 *   npx tsx bench/soak/faults/run.ts [--minutes 30] [--kill-every 60] [--ranks 4] [--planes native,js,coordinator] [--json]
 *
 * Exits 1 on any wrong result, a survivor that did not see the kill within the bound or whose
 * error does not name the killed rank, or growth of a long-lived process past the bounds
 * (summary.ts).
 */
import { setTimeout as delay } from 'node:timers/promises';
import { runEpoch, type EpochResult } from './epoch.js';
import { epochCount, parseSoakOptions } from './options.js';
import { epochLines, summaryLines } from './print.js';
import { RankProcess } from './rank-process.js';
import { type Resources, sampleResources } from './resources.js';
import type { LongLived } from './growth.js';
import { summarize } from './summary.js';

/** Time for the coordinator's sockets to be released before the driver counts its descriptors. */
const SETTLE_MS = 250;

/** A released rank process with nothing left open exits at once. */
const EXIT_MS = 10_000;

interface Slot {
  process: RankProcess;
  /** Forked at the start (not a replacement): it lived through every epoch so far. */
  fromStart: boolean;
  start: Resources;
  afterEpochs: Resources[];
}

const options = parseSoakOptions(process.argv.slice(2));
const epochs = epochCount(options);
const say = (line: string) => (options.json ? process.stderr : process.stdout).write(`${line}\n`);
const started = Date.now();

const slots: Slot[] = await Promise.all(
  Array.from({ length: options.ranks }, async (_, slot) => {
    const { rank, resources } = await RankProcess.fork(slot);
    return { process: rank, fromStart: true, start: resources, afterEpochs: [] };
  }),
);
// After the forks: the driver's descriptors then include its IPC channel to each rank process.
const driver = { start: sampleResources(), afterEpochs: [] as Resources[] };
say(
  `# soak: ${options.ranks} ranks, ${epochs} epochs on ${options.planes.join(', ')} in turn, a rank killed ${options.killEverySeconds} s into each; ` +
    `rank processes ${slots.map((slot) => slot.process.pid).join(', ')}, the last one replaced after every kill`,
);

const results: EpochResult[] = [];
try {
  for (let epoch = 1; epoch <= epochs; epoch++) {
    const plane = options.planes[(epoch - 1) % options.planes.length]!;
    const result = await runEpoch(epoch, plane, slots.map((slot) => slot.process), (epoch - 1) % options.ranks, options.killEverySeconds * 1_000);
    results.push(result);
    for (const line of epochLines(result, epochs)) say(line);
    for (const survivor of result.survivors) if (survivor.resources !== null) slots[survivor.slot]!.afterEpochs.push(survivor.resources);
    for (const lost of result.lost) {
      const { rank, resources } = await RankProcess.fork(lost);
      slots[lost] = { process: rank, fromStart: false, start: resources, afterEpochs: [] };
    }
    await delay(SETTLE_MS);
    driver.afterEpochs.push(sampleResources());
  }
} catch (error) {
  say(`# FAIL: ${error instanceof Error ? error.message : String(error)}`);
  await Promise.all(slots.map((slot) => slot.process.kill()));
  process.exit(1);
}

const keptAlive: string[] = [];
await Promise.all(
  slots.map(async (slot) => {
    if (!(await slot.process.release(EXIT_MS))) keptAlive.push(`rank process ${slot.process.pid} (slot ${slot.process.slot})`);
  }),
);
const longLived: LongLived[] = [
  { name: `driver ${process.pid} (coordinators)`, ...driver },
  ...slots.flatMap((slot) => (slot.fromStart ? [{ name: `rank process ${slot.process.pid}`, start: slot.start, afterEpochs: slot.afterEpochs }] : [])),
];
const summary = summarize(results, (Date.now() - started) / 60_000, options.planes.length, longLived, keptAlive);
if (options.json) process.stdout.write(`${JSON.stringify({ options, summary, epochs: results, longLived }, null, 2)}\n`);
else for (const line of summaryLines(summary)) say(line);
process.exitCode = summary.failures.length === 0 ? 0 : 1;
