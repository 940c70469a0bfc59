import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** One event of a flight record, as written (lib/session/flight-recording.ts): `at` is ISO time. */
export interface RecordedEventJson {
  readonly at: string;
  /** The same time in ms since the epoch, to the microsecond (records of older versions lack it). */
  readonly atMs?: number;
  readonly type: string;
  readonly sequence?: number;
  readonly collective?: string;
  readonly algorithm?: string;
  readonly plane?: string;
  readonly bytes?: number;
  readonly durationMs?: number;
  readonly rail?: number;
  readonly destination?: number;
  readonly source?: number | null;
  readonly tag?: string;
  readonly operation?: string;
  readonly peer?: number | null;
  readonly waitedMs?: number;
  readonly missing?: readonly number[];
  readonly error?: { readonly code?: string; readonly message?: string };
}

/** A flight record file as written by `recordFlight`. */
export interface FlightRecordJson {
  readonly rank: number;
  readonly worldSize: number;
  readonly pid: number;
  readonly reason: string;
  readonly error?: { readonly code?: string; readonly message?: string };
  readonly writtenAt: string;
  readonly events: readonly RecordedEventJson[];
}

/** One line of the merged timeline. */
export interface TimelineEntry {
  readonly at: string;
  readonly rank: number;
  readonly text: string;
}

export interface MergedTimeline {
  readonly worldSize: number;
  /** The ranks with a record (the newest of each rank's records is used). */
  readonly ranks: readonly number[];
  /** Every rank's events, in time order (ranks' clocks are their own: within a host they agree). */
  readonly events: readonly TimelineEntry[];
  /** One line: which rank is behind and where, or what the ranks disagree on. */
  readonly verdict: string;
}

/** The events that say an operation or the session failed (a record is written at the first). */
export const FAILURE_EVENTS: ReadonlySet<string> = new Set(['failed', 'collective-failed', 'p2p-failed']);

const RECORD_FILE = /^rxccl-flight-rank\d+-\d+-[a-z]+-\d+\.json$/;

/**
 * Reads every flight record in `directory` (files named as `recordFlight` names them); a file that
 * is not one (cut short by a rank killed while writing it) is skipped, and named with why.
 */
export function readFlightRecords(directory: string): { records: FlightRecordJson[]; skipped: string[] } {
  const records: FlightRecordJson[] = [];
  const skipped: string[] = [];
  for (const name of readdirSync(directory).filter((file) => RECORD_FILE.test(file))) {
    try {
      const record = JSON.parse(readFileSync(join(directory, name), 'utf8')) as FlightRecordJson;
      if (!Number.isInteger(record.rank) || !Array.isArray(record.events)) throw new Error('not a flight record');
      records.push(record);
    } catch (error) {
      skipped.push(`${name}: ${(error as Error).message}`);
    }
  }
  return { records, skipped };
}

/**
 * Merges the ranks' flight records into one timeline and a verdict: ranks that wrote none, a rank
 * whose last collective is behind the others' (it skipped one, or is stuck before it), ranks that
 * called different collectives at one sequence, or, when every rank is at the same place, the
 * first failure. Of several records of one rank, the newest (it has the most events).
 */
export function mergeFlightRecords(records: readonly FlightRecordJson[]): MergedTimeline {
  const chosen = newestPerRank(records);
  const worldSize = Math.max(0, ...chosen.map((record) => record.worldSize));
  const events = chosen
    .flatMap((record) => record.events.map((event) => ({ at: event.at, rank: record.rank, text: describe(event) })))
    .sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : a.rank - b.rank));
  return { worldSize, ranks: chosen.map((record) => record.rank), events, verdict: verdictOf(chosen, worldSize) };
}

/** The newest record of each rank (it holds the most events), by rank. */
export function newestPerRank(records: readonly FlightRecordJson[]): FlightRecordJson[] {
  const newest = new Map<number, FlightRecordJson>();
  for (const record of records) {
    const seen = newest.get(record.rank);
    if (seen === undefined || seen.writtenAt < record.writtenAt) newest.set(record.rank, record);
  }
  return [...newest.values()].sort((a, b) => a.rank - b.rank);
}

/** Where a rank's collectives got to: its last one, and whether it finished. */
interface Progress {
  readonly rank: number;
  readonly sequence: number;
  readonly collective: string;
  readonly finished: boolean;
}

function progressOf(record: FlightRecordJson): Progress | null {
  let last: Progress | null = null;
  for (const event of record.events) {
    if (event.sequence === undefined || !event.type.startsWith('collective-')) continue;
    if (last === null || event.sequence >= last.sequence) {
      last = { rank: record.rank, sequence: event.sequence, collective: event.collective ?? '?', finished: event.type === 'collective-finished' };
    }
  }
  return last;
}

function verdictOf(records: readonly FlightRecordJson[], worldSize: number): string {
  if (records.length === 0) return 'no flight records';
  const present = new Set(records.map((record) => record.rank));
  const missing = Array.from({ length: worldSize }, (_, rank) => rank).filter((rank) => !present.has(rank));
  const silent = missing.length === 0 ? '' : `ranks [${missing.join(',')}] wrote no record (killed, hung outside rxccl, or run without GX1_FLIGHT_RECORDER); `;
  const progress = records.map((record) => ({ rank: record.rank, progress: progressOf(record) }));
  const furthest = Math.max(...progress.map(({ progress: at }) => at?.sequence ?? -1));
  const behind = progress.filter(({ progress: at }) => (at?.sequence ?? -1) < furthest);
  const ahead = progress.filter(({ progress: at }) => at?.sequence === furthest).map(({ rank }) => rank);
  if (behind.length > 0) {
    const where = behind.map(({ rank, progress: at }) => (at === null ? `rank ${rank} ran no collective` : `rank ${rank} last ran sequence ${at.sequence} (${at.collective}, ${at.finished ? 'finished' : 'unfinished'})`));
    const aheadAt = progress.find(({ progress: at }) => at?.sequence === furthest)!.progress!;
    return `${silent}${behind.length === 1 ? `rank ${behind[0]!.rank} is` : `ranks [${behind.map(({ rank }) => rank).join(',')}] are`} behind: ${where.join('; ')}, while ranks [${ahead.join(',')}] reached sequence ${furthest} (${aheadAt.collective})`;
  }
  const names = new Map<string, number[]>();
  for (const { rank, progress: at } of progress) if (at !== null) names.set(at.collective, [...(names.get(at.collective) ?? []), rank]);
  if (names.size > 1) {
    return `${silent}ranks disagree at sequence ${furthest}: ${[...names].map(([collective, ranks]) => `ranks [${ranks.join(',')}] called ${collective}`).join(', ')}`;
  }
  // A record is written at its rank's first failed operation, which need not fail the session.
  const failures = records.flatMap((record) => [
    ...record.events.filter((event) => FAILURE_EVENTS.has(event.type)).map((event) => ({ rank: record.rank, at: event.at, message: event.error?.message ?? '?' })),
    ...(record.error === undefined ? [] : [{ rank: record.rank, at: record.writtenAt, message: record.error.message ?? '?' }]),
  ]);
  const first = failures.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0))[0];
  const where = furthest < 0 ? 'no rank ran a collective' : `every rank reached sequence ${furthest} (${[...names.keys()][0]})`;
  return `${silent}${where}${first === undefined ? '' : `; the first failure: rank ${first.rank}: ${first.message}`}`;
}

/** A recorded event in one line (the JSON form of `describeSessionEvent`'s). */
function describe(event: RecordedEventJson): string {
  const call = `collective sequence ${event.sequence} ${event.collective} (${event.algorithm}, ${event.plane})`;
  switch (event.type) {
    case 'collective-started':
      return `${call} ${event.bytes} bytes started`;
    case 'collective-finished':
      return `${call} ${event.bytes} bytes finished`;
    case 'collective-failed':
      return `${call} failed: ${event.error?.message ?? '?'}`;
    case 'collective-waiting':
      return `${call} has waited ${Math.round(event.waitedMs ?? 0)} ms for ranks [${event.missing?.join(',') ?? '?'}]`;
    case 'p2p-sent':
      return `sent ${event.bytes} bytes to rank ${event.destination} tag ${event.tag}`;
    case 'p2p-received':
      return `received ${event.bytes} bytes from ${event.source === null ? 'any rank' : `rank ${event.source}`} tag ${event.tag}`;
    case 'p2p-failed':
      return `${event.operation} ${event.operation === 'send' ? 'to' : 'from'} ${event.peer === null ? 'any rank' : `rank ${event.peer}`} tag ${event.tag} failed: ${event.error?.message ?? '?'}`;
    case 'failed':
      return `failed: ${event.error?.code === undefined ? '' : `${event.error.code}: `}${event.error?.message ?? '?'}`;
    default:
      return event.type;
  }
}
