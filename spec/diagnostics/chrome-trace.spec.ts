/**
 * `rxccl trace chrome` (#48 item 3): the ranks' flight records as Chrome's trace-event JSON, one
 * process per rank, a slice per collective (algorithm, plane, bytes, and how long the rank waited
 * for the last one to start it) and per send or receive. Every file it writes is checked against
 * the trace-event format (the fields each phase must have, as Perfetto reads them), on drawn
 * records and on a real job's.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type ChromeTrace, chromeTrace, type TraceEvent } from '../../lib/diagnostics/chrome-trace.js';
import type { FlightRecordJson, RecordedEventJson } from '../../lib/diagnostics/flight-timeline.js';
import { runRxccl } from '../cli/rxccl-process.js';
import { compiledNode } from '../helpers/compiled-script.js';
import { scratchDirectories } from '../helpers/scratch.js';

const scratch = scratchDirectories('rxccl-chrome-trace-');
const T0 = Date.UTC(2026, 11, 6, 12);

/** Throws unless `trace` is what the trace-event format allows: each phase with its fields. */
function checkTraceFormat(trace: ChromeTrace): void {
  expect(JSON.parse(JSON.stringify(trace))).toEqual(trace);
  expect(Array.isArray(trace.traceEvents)).toBe(true);
  for (const event of trace.traceEvents) {
    expect(['X', 'i', 'M']).toContain(event.ph);
    expect(typeof event.name).toBe('string');
    expect(Number.isInteger(event.pid) && Number.isInteger(event.tid)).toBe(true);
    if (event.ph === 'M') {
      expect(event.args).toHaveProperty(event.name === 'process_sort_index' ? 'sort_index' : 'name');
      continue;
    }
    expect(Number.isFinite(event.ts) && event.ts >= 0).toBe(true);
    expect(typeof event.cat).toBe('string');
    if (event.ph === 'X') expect(Number.isFinite(event.dur) && event.dur >= 0).toBe(true);
    if (event.ph === 'i') expect(event.s).toBe('t');
  }
}

const slices = (trace: ChromeTrace, cat: string) => trace.traceEvents.filter((event): event is Extract<TraceEvent, { ph: 'X' }> => event.ph === 'X' && event.cat === cat);

function record(rank: number, events: RecordedEventJson[], writtenAtMs: number): FlightRecordJson {
  return { rank, worldSize: 2, pid: 100 + rank, reason: 'close', writtenAt: new Date(writtenAtMs).toISOString(), events };
}

const at = (ms: number) => ({ at: new Date(T0 + ms).toISOString(), atMs: T0 + ms });
const call = { collective: 'allReduce', algorithm: 'ring', plane: 'native', bytes: 4096 };

describe('chromeTrace', () => {
  it('gives each collective a slice per rank, with the wait for the last rank, and each message a slice', () => {
    const trace = chromeTrace([
      record(0, [
        { ...at(0), type: 'collective-started', sequence: 0, ...call },
        { ...at(2.5), type: 'collective-finished', sequence: 0, ...call, durationMs: 2.5 },
        { ...at(3.25), type: 'p2p-sent', destination: 1, tag: '5', rail: 0, bytes: 4, durationMs: 0.25 },
        { ...at(4), type: 'collective-started', sequence: 1, ...call },
      ], T0 + 10),
      record(1, [
        { ...at(1.5), type: 'collective-started', sequence: 0, ...call },
        { ...at(2.5), type: 'collective-finished', sequence: 0, ...call, durationMs: 1 },
        { ...at(5), type: 'collective-failed', sequence: 1, ...call, error: { code: 'TIMEOUT', message: 'collective sequence 1; missing ranks [0] timed out' } },
        { ...at(5.5), type: 'failed', error: { message: 'collective sequence 1; missing ranks [0] timed out' } },
      ], T0 + 6),
    ]);
    checkTraceFormat(trace);
    expect(trace.otherData).toEqual({ worldSize: 2, ranks: [0, 1], startedAt: new Date(T0).toISOString() });
    const names = trace.traceEvents.filter((event) => event.ph === 'M' && event.name === 'process_name').map((event) => event.args.name);
    expect(names).toEqual(['rank 0', 'rank 1']);
    // Rank 0 waited 1.5 ms for rank 1 to start sequence 0; rank 1 none. Sequence 1: rank 0's is
    // unfinished (it runs to the record's end), rank 1's failed (it started none: no start, no slice).
    expect(slices(trace, 'collective').map(({ name, pid, ts, dur, args }) => ({ name, pid, ts, dur, sequence: args.sequence, waitMs: args.waitMs }))).toEqual([
      { name: 'allReduce', pid: 0, ts: 0, dur: 2500, sequence: 0, waitMs: 1.5 },
      { name: 'allReduce', pid: 1, ts: 1500, dur: 1000, sequence: 0, waitMs: 0 },
      { name: 'allReduce (unfinished)', pid: 0, ts: 4000, dur: 6000, sequence: 1, waitMs: undefined },
    ]);
    expect(slices(trace, 'collective')[0]!.args).toMatchObject({ algorithm: 'ring', plane: 'native', bytes: 4096 });
    expect(slices(trace, 'point-to-point')).toEqual([
      { ph: 'X', name: 'send to rank 1', cat: 'point-to-point', ts: 3000, dur: 250, pid: 0, tid: 2, args: { tag: '5', rail: 0, bytes: 4 } },
    ]);
    expect(trace.traceEvents.filter((event) => event.ph === 'i').map((event) => `${event.pid} ${event.name}`)).toEqual(['1 session failed']);
  });

  it('writes a valid trace with one slice per started collective for any records', () => {
    const arbRank = (rank: number) =>
      fc.array(fc.record({ gapMs: fc.double({ min: 0, max: 50, noNaN: true }), lengthMs: fc.double({ min: 0, max: 50, noNaN: true }), ends: fc.constantFrom('finished', 'failed', 'open') }), { maxLength: 8 }).map((calls) => {
        let clock = T0 + rank;
        const events = calls.flatMap(({ gapMs, lengthMs, ends }, sequence): RecordedEventJson[] => {
          const start = { ...at((clock += gapMs) - T0), type: 'collective-started', sequence, ...call };
          if (ends === 'open') return [start];
          return [start, { ...at((clock += lengthMs) - T0), type: `collective-${ends}`, sequence, ...call }];
        });
        return { events: record(rank, events, clock + 1), started: calls.length };
      });
    fc.assert(
      fc.property(fc.tuple(arbRank(0), arbRank(1)), (ranks) => {
        const trace = chromeTrace(ranks.map((rank) => rank.events));
        checkTraceFormat(trace);
        for (const [rank, { started }] of ranks.entries()) {
          const own = slices(trace, 'collective').filter((slice) => slice.pid === rank);
          expect(own.map((slice) => slice.args.sequence).sort((a, b) => Number(a) - Number(b))).toEqual(Array.from({ length: started }, (_, sequence) => sequence));
          for (const slice of own) if (slice.args.waitMs !== undefined) expect(slice.args.waitMs).toBeGreaterThanOrEqual(0);
        }
      }),
    );
  });
});

describe('rxccl trace chrome', () => {
  it("writes a real job's run, recorded with GX1_TIMELINE, as a trace Perfetto opens", async () => {
    const directory = scratch();
    const job = await runRxccl(['launch', '-n', '2', '--', ...compiledNode('spec/diagnostics/fixtures/timeline-run.ts')], { GX1_TIMELINE: directory });
    expect(job.code, job.stderr).toBe(0);
    // Said at debug level info only: a timeline run's record at close is not a warning.
    expect(job.stderr).not.toContain('flight record (close)');
    const out = join(directory, 'trace.json');
    const converted = await runRxccl(['trace', '--out', out, 'chrome', directory]);
    expect(converted.code, converted.stderr).toBe(0);
    expect(converted.stderr).toContain(`rxccl trace: 10 slices of ranks [0,1] written to ${out}`);
    const trace = JSON.parse(readFileSync(out, 'utf8')) as ChromeTrace;
    checkTraceFormat(trace);
    for (const rank of [0, 1]) {
      const own = slices(trace, 'collective').filter((slice) => slice.pid === rank);
      expect(own.map((slice) => `${slice.args.sequence} ${slice.name} ${slice.args.bytes}`)).toEqual(['0 allReduce 8', '1 allReduce 4096', '2 allReduce 262144', '3 barrier 0']);
      for (const slice of own) {
        expect(slice.args.plane).toMatch(/^(native|js|coordinator)$/);
        expect(typeof slice.args.algorithm).toBe('string');
        expect(slice.args.waitMs).toBeGreaterThanOrEqual(0);
      }
    }
    expect(slices(trace, 'point-to-point').map((slice) => `${slice.pid} ${slice.name} ${slice.args.bytes}`).sort()).toEqual(['0 send to rank 1 4', '1 receive from rank 0 4']);
    // To standard output without --out.
    const printed = await runRxccl(['trace', 'chrome', directory]);
    expect((JSON.parse(printed.stdout) as ChromeTrace).traceEvents).toEqual(trace.traceEvents);
  }, 90_000);
});
