/** The flight recorder: the last N events per rank, written as JSON on failure, timeout and request. */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DebugLog } from '../../lib/diagnostics/debug-log.js';
import { FlightRecorder } from '../../lib/diagnostics/flight-recorder.js';
import { flightRecordingFromEnvironment, recordFlight } from '../../lib/session/flight-recording.js';
import { runRxccl } from '../cli/rxccl-process.js';
import { compiledNode } from '../helpers/compiled-script.js';
import { rejection, startJob, type TestJob } from '../helpers/job.js';
import { scratchDirectories } from '../helpers/scratch.js';

const jobs: TestJob[] = [];
afterEach(async () => {
  await Promise.all(jobs.splice(0).map((job) => job.dispose()));
});
const scratch = scratchDirectories('rxccl-flight-');

interface Record {
  rank: number;
  reason: string;
  error?: { code?: string; message: string };
  eventsRecorded: number;
  events: { type: string; sequence?: number; collective?: string; at: string }[];
}

const records = (directory: string): Record[] =>
  readdirSync(directory)
    .sort()
    .map((name) => JSON.parse(readFileSync(join(directory, name), 'utf8')) as Record);

const quiet = new DebugLog('off', () => undefined);

describe('FlightRecorder', () => {
  it('keeps the last capacity events, oldest first, with their time', () => {
    let clock = 100;
    const recorder = new FlightRecorder<number>(3, () => clock++);
    for (let value = 0; value < 5; value++) recorder.record(value);
    expect(recorder.entries()).toEqual([
      { atMs: 102, event: 2 },
      { atMs: 103, event: 3 },
      { atMs: 104, event: 4 },
    ]);
    expect(recorder.recorded).toBe(5);
    expect(new FlightRecorder<number>(4).entries()).toEqual([]);
    expect(() => new FlightRecorder(0)).toThrow('flight recorder capacity must be a positive integer, got 0');
  });

  it('is configured by GX1_FLIGHT_RECORDER and GX1_FLIGHT_RECORDER_EVENTS, off by default', () => {
    expect(flightRecordingFromEnvironment({})).toBeNull();
    const setting = 'GX1_FLIGHT_RECORDER';
    expect(flightRecordingFromEnvironment({ GX1_FLIGHT_RECORDER: '/tmp/x' })).toEqual({ directory: '/tmp/x', setting, atClose: false, capacity: 1000 });
    expect(flightRecordingFromEnvironment({ GX1_FLIGHT_RECORDER: '/tmp/x', GX1_FLIGHT_RECORDER_EVENTS: '50' })).toEqual({ directory: '/tmp/x', setting, atClose: false, capacity: 50 });
    // A timeline run writes at close too and keeps a whole run's events; both variables may name one directory.
    const timeline = { directory: '/tmp/x', setting: 'GX1_TIMELINE', atClose: true };
    expect(flightRecordingFromEnvironment({ GX1_TIMELINE: '/tmp/x' })).toEqual({ ...timeline, capacity: 100_000 });
    expect(flightRecordingFromEnvironment({ GX1_TIMELINE: '/tmp/x', GX1_FLIGHT_RECORDER: '/tmp/x', GX1_FLIGHT_RECORDER_EVENTS: '7' })).toEqual({ ...timeline, capacity: 7 });
    expect(() => flightRecordingFromEnvironment({ GX1_TIMELINE: '/tmp/x', GX1_FLIGHT_RECORDER: '/tmp/y' })).toThrow(
      'GX1_FLIGHT_RECORDER "/tmp/y" and GX1_TIMELINE "/tmp/x" name different directories',
    );
    expect(() => flightRecordingFromEnvironment({ GX1_FLIGHT_RECORDER: '/tmp/x', GX1_FLIGHT_RECORDER_EVENTS: '-1' })).toThrow(
      'GX1_FLIGHT_RECORDER_EVENTS must be a positive integer, got "-1"',
    );
  });
});

describe('recordFlight on a session', () => {
  it('writes what each rank did last when a collective times out, and on request', async () => {
    const directory = scratch();
    const job = await startJob(2, { collectiveTimeoutMs: 300 });
    jobs.push(job);
    const [rank0, rank1] = job.sessions;
    const writeNow = [rank0!, rank1!].map((session) => recordFlight(session, { directory, capacity: 4, signal: null, log: quiet }));
    for (let round = 0; round < 3; round++) await Promise.all([rank0!.allReduce(Float32Array.of(round)), rank1!.allReduce(Float32Array.of(round))]);
    const onRequest = JSON.parse(readFileSync(writeNow[1]!(), 'utf8')) as Record;
    expect(onRequest).toMatchObject({ rank: 1, reason: 'signal', eventsRecorded: 6 });
    expect(onRequest.events.map((event) => `${event.type} ${event.sequence}`)).toEqual([
      'collective-started 1',
      'collective-finished 1',
      'collective-started 2',
      'collective-finished 2',
    ]);
    // Rank 1 never joins the fourth: the coordinator's collective timeout fails both ranks.
    expect((await rejection(rank0!.barrier())).message).toMatch(/missing ranks \[1\] timed out/);
    await expect.poll(() => readdirSync(directory).filter((name) => name.includes('-timeout-')).length).toBe(2);
    const timedOut = records(directory).filter((record) => record.reason === 'timeout');
    const byRank = new Map(timedOut.map((record) => [record.rank, record]));
    expect(byRank.get(0)!.events.map((event) => `${event.type} ${event.sequence ?? ''}`.trim())).toEqual([
      'collective-started 2',
      'collective-finished 2',
      'collective-started 3',
      'failed',
    ]);
    expect(byRank.get(1)!.events.at(-2)).toMatchObject({ type: 'collective-finished', sequence: 2, collective: 'allReduce' });
    expect(byRank.get(0)!.error).toMatchObject({ code: 'REMOTE_ABORT', message: expect.stringContaining('collective sequence 3; missing ranks [1]') });
  }, 30_000);

  it('is on for ranks run with GX1_FLIGHT_RECORDER, and writes a record on SIGUSR1', async () => {
    const directory = scratch();
    const script = compiledNode('spec/diagnostics/fixtures/signal-self.ts');
    const result = await runRxccl(['launch', '-n', '2', '--', ...script], { GX1_FLIGHT_RECORDER: directory });
    expect(result.code).toBe(0);
    const written = records(directory);
    expect(written.map((record) => `${record.rank} ${record.reason}`).sort()).toEqual(['0 signal', '1 signal']);
    for (const record of written) {
      expect(record.events.map((event) => `${event.type} ${event.collective} ${event.sequence}`)).toEqual([
        'collective-started allGather 0',
        'collective-finished allGather 0',
      ]);
    }
    expect(result.stderr).toMatch(/WARN rank [01]: flight record \(signal\) written to /);
  }, 60_000);
});
