import { type FlightRecordJson, newestPerRank, type RecordedEventJson } from './flight-timeline.js';

/**
 * One event of Chrome's trace-event format (the JSON Perfetto and chrome://tracing open): a
 * complete slice (`X`, with `dur`), an instant (`i`), or metadata naming a process or thread (`M`).
 * Times are microseconds from the first event of the job.
 */
export type TraceEvent =
  | { readonly ph: 'X'; readonly name: string; readonly cat: string; readonly ts: number; readonly dur: number; readonly pid: number; readonly tid: number; readonly args: Readonly<Record<string, unknown>> }
  | { readonly ph: 'i'; readonly name: string; readonly cat: string; readonly ts: number; readonly s: 't'; readonly pid: number; readonly tid: number; readonly args: Readonly<Record<string, unknown>> }
  | { readonly ph: 'M'; readonly name: 'process_name' | 'process_sort_index' | 'thread_name'; readonly pid: number; readonly tid: number; readonly args: Readonly<Record<string, unknown>> };

/** A trace file: the events, and the job it shows. */
export interface ChromeTrace {
  readonly traceEvents: readonly TraceEvent[];
  readonly displayTimeUnit: 'ms';
  readonly otherData: { readonly worldSize: number; readonly ranks: readonly number[]; readonly startedAt: string };
}

/** A rank's tracks (threads, in the format's words): its collectives, and its sends and receives. */
const COLLECTIVES_TRACK = 1;
const MESSAGES_TRACK = 2;

/** When an event happened, in ms since the epoch: to the microsecond where the record says it. */
const timeOf = (event: RecordedEventJson): number => event.atMs ?? Date.parse(event.at);

/** A collective on one rank, from its start to its end (null: unfinished when the record was written). */
interface CollectiveSpan {
  readonly rank: number;
  readonly start: RecordedEventJson;
  readonly end: RecordedEventJson | null;
}

/**
 * The ranks' flight records (the newest of each rank: with `GX1_TIMELINE`, the one written at close)
 * as a Chrome trace, as Horovod's timeline shows a job: one process per rank, a track of its
 * collectives, one slice per collective (its name, sequence, algorithm, plane, bytes, and `waitMs`:
 * how long after this rank the last rank started it, i.e. how long this rank waited for the
 * others), a track of its sends and receives (a slice each, with peer, tag, rail and bytes), and
 * instants where a collective reported waiting or an operation failed. A collective unfinished
 * when its record was written runs to the record's end, named as unfinished.
 */
export function chromeTrace(records: readonly FlightRecordJson[]): ChromeTrace {
  const chosen = newestPerRank(records);
  // A loop, not Math.min(...all): a whole run's events are more arguments than a call may take.
  let origin = Infinity;
  for (const record of chosen) {
    origin = Math.min(origin, Date.parse(record.writtenAt));
    for (const event of record.events) origin = Math.min(origin, timeOf(event));
  }
  const micros = (ms: number) => Math.round((ms - origin) * 1000 * 1000) / 1000;
  const spans = chosen.flatMap(collectiveSpans);
  const lastStart = lastStartPerSequence(spans, chosen.length);
  const events: TraceEvent[] = [];
  const writtenAt = new Map(chosen.map((record) => [record.rank, Date.parse(record.writtenAt)]));
  for (const span of spans) {
    const startMs = timeOf(span.start);
    const endMs = span.end === null ? writtenAt.get(span.rank)! : timeOf(span.end);
    const sequence = span.start.sequence!;
    const latest = lastStart.get(sequence);
    events.push({
      ph: 'X',
      name: `${span.start.collective ?? '?'}${span.end === null ? ' (unfinished)' : span.end.type === 'collective-failed' ? ' (failed)' : ''}`,
      cat: 'collective',
      ts: micros(startMs),
      dur: micros(Math.max(endMs, startMs)) - micros(startMs),
      pid: span.rank,
      tid: COLLECTIVES_TRACK,
      args: {
        sequence,
        algorithm: span.start.algorithm,
        plane: span.start.plane,
        bytes: span.start.bytes,
        ...(latest === undefined ? {} : { waitMs: Math.round((latest - startMs) * 1000) / 1000 }),
        ...(span.end?.error === undefined ? {} : { error: span.end.error.message }),
      },
    });
  }
  for (const record of chosen) {
    for (const event of record.events) {
      const at = timeOf(event);
      if (event.type === 'p2p-sent' || event.type === 'p2p-received') {
        const sent = event.type === 'p2p-sent';
        const peer = sent ? event.destination : event.source;
        const duration = event.durationMs ?? 0;
        events.push({
          ph: 'X',
          name: sent ? `send to rank ${peer}` : `receive from ${peer === null || peer === undefined ? 'any rank' : `rank ${peer}`}`,
          cat: 'point-to-point',
          ts: micros(at - duration),
          dur: micros(at) - micros(at - duration),
          pid: record.rank,
          tid: MESSAGES_TRACK,
          args: { tag: event.tag, rail: event.rail, bytes: event.bytes },
        });
      } else if (event.type === 'collective-waiting') {
        events.push(instant(record.rank, COLLECTIVES_TRACK, micros(at), `waiting for ranks [${event.missing?.join(',') ?? '?'}]`, { sequence: event.sequence, waitedMs: event.waitedMs }));
      } else if (event.type === 'p2p-failed' || event.type === 'failed') {
        const track = event.type === 'failed' ? COLLECTIVES_TRACK : MESSAGES_TRACK;
        events.push(instant(record.rank, track, micros(at), event.type === 'failed' ? 'session failed' : `${event.operation ?? 'operation'} failed`, { error: event.error?.message }));
      }
    }
  }
  const metadata = chosen.flatMap((record): TraceEvent[] => [
    { ph: 'M', name: 'process_name', pid: record.rank, tid: 0, args: { name: `rank ${record.rank}` } },
    { ph: 'M', name: 'process_sort_index', pid: record.rank, tid: 0, args: { sort_index: record.rank } },
    { ph: 'M', name: 'thread_name', pid: record.rank, tid: COLLECTIVES_TRACK, args: { name: 'collectives' } },
    { ph: 'M', name: 'thread_name', pid: record.rank, tid: MESSAGES_TRACK, args: { name: 'point-to-point' } },
  ]);
  events.sort((a, b) => ('ts' in a ? a.ts : 0) - ('ts' in b ? b.ts : 0) || a.pid - b.pid);
  return {
    traceEvents: [...metadata, ...events],
    displayTimeUnit: 'ms',
    otherData: {
      worldSize: Math.max(0, ...chosen.map((record) => record.worldSize)),
      ranks: chosen.map((record) => record.rank),
      startedAt: new Date(Number.isFinite(origin) ? origin : 0).toISOString(),
    },
  };
}

function instant(pid: number, tid: number, ts: number, name: string, args: Record<string, unknown>): TraceEvent {
  return { ph: 'i', name, cat: 'event', ts, s: 't', pid, tid, args };
}

/** A rank's collectives: each start paired with the end (finished or failed) of its sequence. */
function collectiveSpans(record: FlightRecordJson): CollectiveSpan[] {
  const open = new Map<number, RecordedEventJson>();
  const spans: CollectiveSpan[] = [];
  for (const event of record.events) {
    if (event.sequence === undefined) continue;
    if (event.type === 'collective-started') open.set(event.sequence, event);
    else if (event.type === 'collective-finished' || event.type === 'collective-failed') {
      const start = open.get(event.sequence);
      // A start older than the record's first event is gone from the ring buffer: no slice.
      if (start === undefined) continue;
      open.delete(event.sequence);
      spans.push({ rank: record.rank, start, end: event });
    }
  }
  for (const start of open.values()) spans.push({ rank: record.rank, start, end: null });
  return spans;
}

/** Per sequence that every one of `ranks` records started: when the last of them started it (ms). */
function lastStartPerSequence(spans: readonly CollectiveSpan[], ranks: number): Map<number, number> {
  const starts = new Map<number, number[]>();
  for (const span of spans) {
    const times = starts.get(span.start.sequence!) ?? [];
    times.push(timeOf(span.start));
    starts.set(span.start.sequence!, times);
  }
  const last = new Map<number, number>();
  for (const [sequence, times] of starts) if (times.length === ranks) last.set(sequence, Math.max(...times));
  return last;
}
