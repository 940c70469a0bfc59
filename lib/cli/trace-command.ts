import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { chromeTrace } from '../diagnostics/chrome-trace.js';
import { type FlightRecordJson, mergeFlightRecords, readFlightRecords } from '../diagnostics/flight-timeline.js';
import { defineCommand } from './command.js';
import { UsageError } from './usage-error.js';

/** The timeline's tail that is printed unless --all: enough to see every rank's last steps. */
const DEFAULT_EVENTS = 40;

export const traceCommand = defineCommand(
  {
    name: 'trace',
    brief: "Merge the ranks' flight records into one timeline, or a Chrome trace",
    synopsis: '[--all] [--json] merge DIR | [--out FILE] chrome DIR',
    summary: [
      "Reads every rank's flight records in DIR (GX1_FLIGHT_RECORDER=DIR writes them on a failure,",
      'a timeout and SIGUSR1; rxccl launch passes SIGUSR1 on to its ranks), prints their events as',
      `one timeline (the last ${DEFAULT_EVENTS}, or --all), and ends with one line that says which rank is`,
      'behind and where, which ranks called different collectives at one sequence, or which ranks',
      'wrote no record. Keep one DIR per run: records carry no job id, so those of an earlier',
      'run would be merged too. Exits 0, or 1 when DIR holds no record.',
      '',
      "chrome writes the records (GX1_TIMELINE=DIR writes every rank's whole run at close) as",
      "Chrome's trace-event JSON, which https://ui.perfetto.dev and chrome://tracing open: one",
      'process per rank, a slice per collective (algorithm, plane, bytes, how long it waited for the',
      'last rank) and per send or receive. To FILE with --out, else to standard output.',
    ].join('\n'),
    trailing: 'merge DIR | chrome DIR',
    flags: {
      all: { kind: 'boolean', help: 'merge: print every event, not only the last ones' },
      json: { kind: 'boolean', help: 'merge: print the merged timeline and the verdict as JSON' },
      out: { kind: 'string', short: 'o', value: 'FILE', help: 'chrome: write the trace to FILE (default standard output)' },
    },
  },
  async (values, rest) => {
    const [verb, directory, ...extra] = rest;
    if ((verb !== 'merge' && verb !== 'chrome') || directory === undefined || extra.length > 0) {
      throw new UsageError('expected: rxccl trace [--all] [--json] merge DIR, or rxccl trace [--out FILE] chrome DIR');
    }
    const records = flightRecordsIn(directory);
    if (records === null) return 1;
    if (verb === 'chrome') {
      const trace = chromeTrace(records);
      const text = `${JSON.stringify(trace)}\n`;
      if (values.out === undefined) process.stdout.write(text);
      else writeFileSync(values.out, text);
      const slices = trace.traceEvents.filter((event) => event.ph === 'X').length;
      const where = values.out === undefined ? 'standard output' : resolve(values.out);
      process.stderr.write(`rxccl trace: ${slices} slices of ranks [${trace.otherData.ranks.join(',')}] written to ${where}; open it in https://ui.perfetto.dev or chrome://tracing\n`);
      return 0;
    }
    const merged = mergeFlightRecords(records);
    if (values.json) {
      process.stdout.write(`${JSON.stringify(merged, null, 2)}\n`);
      return 0;
    }
    const shown = values.all ? merged.events : merged.events.slice(-DEFAULT_EVENTS);
    const lines = [
      `# ${records.length} records of ranks [${merged.ranks.join(',')}] (world size ${merged.worldSize}), ${merged.events.length} events${shown.length < merged.events.length ? `, the last ${shown.length}` : ''}`,
      ...shown.map((entry) => `${entry.at}  rank ${entry.rank}  ${entry.text}`),
      `rxccl trace: ${merged.verdict}`,
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
    return 0;
  },
);

/** The flight records in `directory`, the files skipped said on stderr; null (said why) when there are none. */
function flightRecordsIn(directory: string): FlightRecordJson[] | null {
  let read;
  try {
    read = readFlightRecords(directory);
  } catch (error) {
    throw new UsageError(`cannot read ${directory}: ${(error as Error).message}`);
  }
  for (const file of read.skipped) process.stderr.write(`rxccl trace: skipped ${file}\n`);
  if (read.records.length > 0) return read.records;
  process.stderr.write(`rxccl trace: no flight records (rxccl-flight-rank*.json) in ${directory}\n`);
  return null;
}
