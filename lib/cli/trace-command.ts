import { mergeFlightRecords, readFlightRecords } from '../diagnostics/flight-timeline.js';
import { defineCommand } from './command.js';
import { UsageError } from './usage-error.js';

/** The timeline's tail that is printed unless --all: enough to see every rank's last steps. */
const DEFAULT_EVENTS = 40;

export const traceCommand = defineCommand(
  {
    name: 'trace',
    brief: "Merge the ranks' flight records into one timeline",
    synopsis: '[--all] [--json] merge DIR',
    summary: [
      "Reads every rank's flight records in DIR (GX1_FLIGHT_RECORDER=DIR writes them on a failure,",
      'a timeout and SIGUSR1; rxccl launch passes SIGUSR1 on to its ranks), prints their events as',
      `one timeline (the last ${DEFAULT_EVENTS}, or --all), and ends with one line that says which rank is`,
      'behind and where, which ranks called different collectives at one sequence, or which ranks',
      'wrote no record. Keep one DIR per run: records carry no job id, so those of an earlier',
      'run would be merged too. Exits 0, or 1 when DIR holds no record.',
    ].join('\n'),
    trailing: 'merge DIR',
    flags: {
      all: { kind: 'boolean', help: 'print every event, not only the last ones' },
      json: { kind: 'boolean', help: 'print the merged timeline and the verdict as JSON' },
    },
  },
  async (values, rest) => {
    const [verb, directory, ...extra] = rest;
    if (verb !== 'merge' || directory === undefined || extra.length > 0) throw new UsageError('expected: rxccl trace [--all] [--json] merge DIR');
    let read;
    try {
      read = readFlightRecords(directory);
    } catch (error) {
      throw new UsageError(`cannot read ${directory}: ${(error as Error).message}`);
    }
    const { records, skipped } = read;
    for (const file of skipped) process.stderr.write(`rxccl trace: skipped ${file}\n`);
    if (records.length === 0) {
      process.stderr.write(`rxccl trace: no flight records (rxccl-flight-rank*.json) in ${directory}\n`);
      return 1;
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
